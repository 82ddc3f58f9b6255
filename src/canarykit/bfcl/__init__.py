"""BFCL's executable multi-turn benchmark as a study environment (``environment.kind: bfcl``),
a border like :mod:`canarykit.mcp`: the ``bfcl-eval`` package (``make install-bfcl``) is read
as data and its classes run in-process, one fresh world per run.

- :mod:`.entries`      BFCL's entries, ground truth and function docs as canarykit tasks and tools
- :mod:`.environment`  the tools document and task file of a study, and each run's world

Its multi-turn checker is an outcome judge, ``bfcl`` (:mod:`canarykit.judging`).
"""
