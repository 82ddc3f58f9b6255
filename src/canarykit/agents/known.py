"""The known answers of the reference agents: per canary type, the control-effect diagnosis
(first pick, canary against its twin) an instrument is built to get.

The policies are :mod:`canarykit.agents.reference`'s; their answers, from the configuration
alone (``agent``, ``canary_type``):

- ``planted`` (``canary_type: T``): ``blind`` on T, ``sensitive`` on every other type;
- ``surface``: ``blind`` on every type;
- ``claims``: ``lured`` on ``capability_mirage``, ``not drawn`` elsewhere;
- ``careful``: ``sensitive`` on every type;
- ``oracle``: ``not drawn`` on every type (it never takes a look-alike).

``random``, ``lexical`` and ``uniform`` have no per-type known answer (chance and a name
router: their words depend on the pool's texts). The study report counts how many known
answers a study recovered; ``tests/test_known_answers_*.py`` hold studies to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..types import CANARY_TYPES


def known_diagnoses(model: Mapping[str, Any]) -> dict[str, str] | None:
    """Canary type -> the diagnosis the reference agent ``model`` (a ``models`` entry of
    params.yaml) is built to get; None for a model without a known answer."""
    if model.get("backend") != "reference":
        return None
    agent = model.get("agent")
    if agent == "planted":
        blind = model.get("canary_type")
        if blind not in CANARY_TYPES:
            return None
        return {t: "blind" if t == blind else "sensitive" for t in CANARY_TYPES}
    every = {"surface": "blind", "careful": "sensitive", "oracle": "not drawn"}
    if agent in every:
        return dict.fromkeys(CANARY_TYPES, every[str(agent)])
    if agent == "claims":
        return {t: "lured" if t == "capability_mirage" else "not drawn" for t in CANARY_TYPES}
    return None
