"""The reference agents' parameters (params.yaml ``models[]``): which agent reads which, their
defaults and their validation (one :class:`~canarykit.errors.ConfigError` line naming
``models[<name>].<key>``).

The ``planted`` agent's ``canary_type`` (the one property it is blind to) reaches its policy
as ``blind_to``: the decision code in :mod:`canarykit.agents.reference` never handles a key
named like canary metadata, only what a model receives (and its own parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..types import CANARY_TYPES

#: The params each agent reads (and its random draws are seeded with); ``blind_to`` is the
#: model's ``canary_type``. Probabilities default to 0.5, as in params.schema.yaml.
AGENT_PARAMS: dict[str, tuple[str, ...]] = {
    "oracle": (),
    "random": (),
    "lexical": (),
    "planted": ("blind_to", "take_prob", "backoff_prob"),
    "surface": ("take_prob", "backoff_prob"),
    "claims": ("take_prob", "backoff_prob"),
    "careful": ("take_prob", "backoff_prob"),
    "uniform": ("backoff_prob",),
}
PROBABILITIES = ("take_prob", "backoff_prob")


def agent_params(spec: Mapping[str, Any], source: str = "params.yaml") -> dict[str, Any]:
    """The params of the reference agent a model spec names (its ``agent:`` known), validated."""
    name, agent = spec.get("name"), str(spec.get("agent"))
    wanted = AGENT_PARAMS.get(agent, PROBABILITIES)
    params: dict[str, Any] = {}
    ctype = spec.get("canary_type")
    if "blind_to" in wanted:
        if ctype not in CANARY_TYPES:
            raise ConfigError(source, f"models[{name}].canary_type",
                              f"the planted agent is blind to one canary type: expected one of {list(CANARY_TYPES)}, got {ctype!r}")
        params["blind_to"] = ctype
    elif ctype is not None:
        raise ConfigError(source, f"models[{name}].canary_type",
                          f"only the planted agent takes a canary_type (agent {agent!r} does not)")
    for key in PROBABILITIES:
        if key in wanted:
            v = spec.get(key, 0.5)
            if not isinstance(v, int | float) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise ConfigError(source, f"models[{name}].{key}", f"expected a probability in [0, 1], got {v!r}")
            params[key] = float(v)
    return params
