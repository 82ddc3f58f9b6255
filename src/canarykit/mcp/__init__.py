"""MCP, a border: upstream servers, the proxy in front of an agent, and MCP tool environments.

- :mod:`.upstream`      clients of upstream MCP servers
- :mod:`.spawn`         starting a stdio server: guarded lines, a watchdog, a scrubbed stderr log
- :mod:`.wire`          every line of a stdio connection checked (limits, typed errors)
- :mod:`.sandbox`       the bubblewrap sandbox of an isolated server
- :mod:`.results`       MCP tool results as the loop reads them and as a look-alike answers
- :mod:`.catalog`       what the proxy offers (real tools, canaries or twins)
- :mod:`.forward`       what the proxy passes between client and upstreams besides calls
- :mod:`.proxy`         the proxy that plants canaries in a live agent's tool set
- :mod:`.proxytraces`   the proxy's traces
- :mod:`.diagnose`      diagnosing an agent from the proxy's traces
- :mod:`.environments`  MCP tool environments of a study
- :mod:`.workdirs`      isolated working directories of MCP servers
"""
