"""The task suite: tasks, their plans and outcome rubrics, and the suite's generator.

- :mod:`.tasks`    loading and checking task files, rubrics, the reference answer
- :mod:`.suite`    the task suite by id, however a stage holds it
- :mod:`.taskgen`  the generated suite (``python -m canarykit.tasks.taskgen``)
"""
