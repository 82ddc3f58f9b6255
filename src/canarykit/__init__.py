"""canarykit: diagnose why LLM agents pick the wrong tool, with canary tools.

The package is laid out by the pipeline's stages and its two borders; each subpackage's
``__init__`` is its public face (docs/architecture.md):

- :mod:`canarykit.study`      border: params.yaml, the study on disk, Snakemake and DVC glue
- :mod:`canarykit.tasks`      the task suite, its plans and outcome rubrics, its generator
- :mod:`canarykit.tools`      the realistic tool environment (5 MCP servers, 12 tools)
- :mod:`canarykit.canaries`   stage: the canary generator and the canaries' runtime behaviour
- :mod:`canarykit.assembly`   stage: the tool list each (condition, seed, task, arm) offers
- :mod:`canarykit.agents`     stage: the tool-calling loop, backends and the run store
- :mod:`canarykit.detection`  stage: the trap detector, the study's rates, the runs table
- :mod:`canarykit.judging`    stage: outcome judges, cross-judging and judge validation
- :mod:`canarykit.stats`      stage: tests, intervals and tables
- :mod:`canarykit.report`     stage: the report page, the trace viewer, the figures
- :mod:`canarykit.mcp`        border: upstream MCP clients, the proxy, MCP environments
- :mod:`canarykit.store`      the content store, run records, canonical JSON, table contracts
- :mod:`canarykit.testing`    synthetic studies for tests and benchmarks

Beside them: :mod:`canarykit.cli`, :mod:`canarykit.errors`, :mod:`canarykit.types`,
:mod:`canarykit.registry`.
"""

__version__ = "0.1.0"
