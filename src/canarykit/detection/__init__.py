"""Detection, the stage after the agents: which call fell into a trap, the study's rates, the runs table.

- :mod:`.detect`      the trap detector
- :mod:`.metrics`     the study's rates, defined once, and the per-run metrics
- :mod:`.runs_table`  the runs table the judges and statistics read
"""
