"""Storage: the content store, run records, canonical JSON and the tables' contracts.

- :mod:`.castore`  the content-addressed store
- :mod:`.records`  run records
- :mod:`.jsonio`   canonical JSON, hashes and safe reading of JSON input
- :mod:`.schemas`  pandera (polars) data contracts for every table
"""
