"""The options of the statistics (the ``stats`` section of params.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..types import CONDITIONS, POOLS
from ._bootstrap import BOOTSTRAP_UNITS, BootstrapUnit

#: Bounds shared with resources/params.schema.yaml (checked again here for the CLI and API).
MIN_RESAMPLES = 100
MAX_RESAMPLES = 100_000
MAX_SEED = 2**32 - 1
MAX_ALPHA = 0.5
#: Groups described (tables, figures) but left out of every test and Holm family by default:
#: they calibrate the instrument, they are not models under test.
INSTRUMENT_GROUPS: tuple[str, ...] = ("reference", "planted")
#: The families ``stats.primary`` may declare (docs/statistics.md, "Primary and secondary"):
#: ``control_effect`` (its diagnoses' tests) and ``trap_rate`` (per-type trap rates above the
#: equivalence margin), ``position_effect`` and ``ablation`` (per-type subtle - standard).
PRIMARY_FAMILIES: tuple[str, ...] = ("control_effect", "trap_rate", "position_effect", "ablation")
DEFAULT_PRIMARY: tuple[str, ...] = ("control_effect", "trap_rate")


@dataclass(frozen=True)
class StatsConfig:
    """Options of :func:`compute_all` (the ``stats`` section of params.yaml).

    ``resamples`` bootstrap resamples (100..100,000; the API also accepts fewer, down to 1,
    for quick tests); ``bootstrap_unit`` ``task_x_item`` (tasks and canary items crossed,
    small-sample cluster-robust t intervals; default), ``task`` (the task bootstrap, BCa) or
    ``run`` (the paper's run-level intervals); ``test_groups`` the model groups that enter the
    tests and Holm families (None: every group except ``reference`` and ``planted``);
    ``primary`` the declared primary families (Holm across model x type within each);
    ``equivalence_margin`` the margin of every equivalence test (TOST: the control effect's
    diagnoses, the ablation's "unchanged"; in (0, 0.5], default 0.10) and ``min_clusters`` the
    fewest tasks with a first pick on both sides a control-effect diagnosis needs (default 10;
    docs/canaries.md, "Reading control_effect").
    """

    resamples: int = 10_000
    seed: int = 20261130
    alpha: float = 0.05
    group_averages: dict[str, list[str]] | None = None
    primary_pool: str = "standard"
    ablation_condition: str = "declared"
    bootstrap_unit: BootstrapUnit = "task_x_item"
    test_groups: tuple[str, ...] | None = None
    primary: tuple[str, ...] = DEFAULT_PRIMARY
    equivalence_margin: float = 0.10
    min_clusters: int = 10
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        src = "stats config"
        if not 1 <= self.resamples <= MAX_RESAMPLES:
            raise InputError(src, "bootstrap_resamples", f"must be between 1 and {MAX_RESAMPLES:,}, got {self.resamples:,}")
        if not 0 <= self.seed <= MAX_SEED:
            raise InputError(src, "seed", f"must be between 0 and {MAX_SEED}, got {self.seed}")
        if not 0.0 < self.alpha <= MAX_ALPHA:
            raise InputError(src, "alpha", f"must be in (0, {MAX_ALPHA}], got {self.alpha}")
        if self.primary_pool not in POOLS:
            raise InputError(src, "primary_pool", f"must be one of {list(POOLS)}")
        if self.ablation_condition not in CONDITIONS:
            raise InputError(src, "ablation_condition", f"must be one of {list(CONDITIONS)}")
        if self.bootstrap_unit not in BOOTSTRAP_UNITS:
            raise InputError(src, "bootstrap_unit", f"must be one of {list(BOOTSTRAP_UNITS)}, got {self.bootstrap_unit!r}")
        object.__setattr__(self, "primary", tuple(str(f) for f in self.primary))
        unknown = [f for f in self.primary if f not in PRIMARY_FAMILIES]
        if unknown:
            raise InputError(src, "primary", f"unknown family {unknown[0]!r}; expected some of {list(PRIMARY_FAMILIES)}")
        if not 0.0 < float(self.equivalence_margin) <= 0.5:
            raise InputError(src, "equivalence_margin", f"must be in (0, 0.5], got {self.equivalence_margin}")
        if isinstance(self.min_clusters, bool) or not isinstance(self.min_clusters, int) or self.min_clusters < 2:
            raise InputError(src, "min_clusters", f"must be an integer of at least 2, got {self.min_clusters!r}")
        if self.test_groups is not None:
            object.__setattr__(self, "test_groups", tuple(str(g) for g in self.test_groups))

    def tested(self, group: str) -> bool:
        """Whether models of ``group`` enter the tests."""
        if self.test_groups is None:
            return group not in INSTRUMENT_GROUPS
        return group in self.test_groups

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | None, **overrides: Any) -> StatsConfig:
        """Build from the ``stats`` mapping of params.yaml (``bootstrap_resamples`` or
        ``resamples``); ``overrides`` (e.g. ``primary_pool``) win over the mapping."""
        m = dict(m or {})
        resamples = m.pop("bootstrap_resamples", m.pop("resamples", 10_000))
        ga = m.pop("group_averages", None)
        tg = m.pop("test_groups", None)
        primary = m.pop("primary", None)
        kwargs: dict[str, Any] = {
            "resamples": int(resamples),
            "seed": int(m.pop("seed", 20261130)),
            "alpha": float(m.pop("alpha", 0.05)),
            "group_averages": {str(k): [str(g) for g in v] for k, v in ga.items()} if ga else None,
            "primary_pool": str(m.pop("primary_pool", "standard")),
            "ablation_condition": str(m.pop("ablation_condition", "declared")),
            "bootstrap_unit": str(m.pop("bootstrap_unit", "task_x_item")),
            "test_groups": tuple(str(g) for g in tg) if tg is not None else None,
            "primary": tuple(str(f) for f in primary) if primary is not None else DEFAULT_PRIMARY,
            "equivalence_margin": float(m.pop("equivalence_margin", 0.10)),
            "min_clusters": m.pop("min_clusters", 10),
        }
        kwargs.update(overrides)
        return cls(**kwargs, extra=m)
