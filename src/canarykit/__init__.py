"""canarykit: diagnose why LLM agents pick the wrong tool, with canary tools.

The package is organised one concept per module:

- :mod:`canarykit.config`     params.yaml loading and validation
- :mod:`canarykit.tools`      the realistic tool environment (5 MCP servers, 12 tools)
- :mod:`canarykit.canaries`   the canary generator and the canaries' runtime behaviour
- :mod:`canarykit.tasks`      the task suite, its plans and outcome rubrics
- :mod:`canarykit.assembly`   the tool list each (condition, seed, task, arm) offers
- :mod:`canarykit.agents`     the tool-calling loop, backends and the run store
- :mod:`canarykit.detect`     the trap detector and the per-run metrics
- :mod:`canarykit.judging`    outcome judges, cross-judging and judge validation
- :mod:`canarykit.stats`      tests, intervals and tables
- :mod:`canarykit.figures`    Altair figures
- :mod:`canarykit.schemas`    pandera (polars) data contracts for every table
"""

__version__ = "0.1.0"
