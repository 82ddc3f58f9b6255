"""``python -m canarykit.taskgen OUTPUT.json``: the same command as ``python -m canarykit.tasks.taskgen``."""

import sys

from canarykit.tasks.taskgen import main

sys.exit(main())
