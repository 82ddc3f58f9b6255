"""The study on disk, a border: its configuration and where it lives, driven by Snakemake and DVC.

- :mod:`.config`     params.yaml: loading, default filling, validation, the run grid
- :mod:`.paramspec`  the schema of params.yaml (``resources/params.schema.yaml``)
- :mod:`.layout`     the study's paths on disk and its declared resources
- :mod:`.pipeline`   the workflow's steps, one function per rule script
- :mod:`.plan`       a study's size, time and cost before it runs
- :mod:`.workflow`   running the Snakemake workflow from the CLI
- :mod:`.dvcyaml`    dvc.yaml generated from ``rules/stages.yaml`` (``python -m canarykit.study.dvcyaml``)
- :mod:`.dvcsync`    file times aligned with dvc.lock
- :mod:`.lockfile`   the committed dvc.lock checked and refreshed (``make lock``)
- :mod:`.console`    the one-screen console of ``make run`` and the errors about targets
"""
