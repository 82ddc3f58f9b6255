"""``python -m canarykit.dvcyaml``, kept as it was before the layout by stage (issue 24): the
generator of dvc.yaml lives in :mod:`canarykit.study.dvcyaml`."""
