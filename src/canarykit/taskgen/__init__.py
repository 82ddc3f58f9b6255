"""``python -m canarykit.taskgen``, kept as it was before the layout by stage (issue 24): the
task-suite generator lives in :mod:`canarykit.tasks.taskgen`."""
