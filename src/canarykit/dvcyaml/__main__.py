"""``python -m canarykit.dvcyaml [--check]``: the same command as ``python -m canarykit.study.dvcyaml``."""

import sys

from canarykit.study.dvcyaml import main

sys.exit(main())
