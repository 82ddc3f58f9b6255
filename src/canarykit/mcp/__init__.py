"""MCP, a border: upstream servers, the proxy in front of an agent, and MCP tool environments.

- :mod:`.upstream`      clients of upstream MCP servers
- :mod:`.proxy`         the proxy that plants canaries in a live agent's tool set
- :mod:`.proxytraces`   the proxy's traces
- :mod:`.diagnose`      diagnosing an agent from the proxy's traces
- :mod:`.environments`  MCP tool environments of a study
- :mod:`.workdirs`      isolated working directories of MCP servers
"""
