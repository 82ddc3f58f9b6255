"""Helpers for tests and benchmarks, outside the stages.

- :mod:`.synthetic`  synthetic studies with known effects
"""
