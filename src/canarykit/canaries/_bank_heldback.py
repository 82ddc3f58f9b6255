"""The held-back entries of the wording banks (entries 09-16 of each type).

Written by a separate writer who never saw the reference agents' text readers, from the
specification of :mod:`._banks` (severity, tell, twin and name rules); folded in as
delivered, with format fixes only. The default study and the known-answer pools draw their
wordings from these entries only.
"""

from __future__ import annotations

from typing import Any, Final

HELDBACK: Final[dict[str, tuple[dict[str, Any], ...]]] = {}
