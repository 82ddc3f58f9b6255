"""Exports of a finished study to the formats other tools read (``canarykit export``).

- :mod:`.conversation`  the conversation a run's model saw, rebuilt from its record
- :mod:`.inspect_log`   Inspect AI ``.eval`` logs, one per (model, condition)
"""
