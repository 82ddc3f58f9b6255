"""``python -m canarykit.tasks.taskgen OUTPUT.json``: generate the task suite into OUTPUT.json."""

import sys

from ._suite import main

sys.exit(main())
