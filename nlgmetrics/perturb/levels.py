"""How a perturbation's ``level`` turns into a number of edits.

Levels are either a share of candidates (0..1, e.g. the probability to drop each article) or a count of
operations (number of sentence pairs to switch). Both are validated here so every perturbation rejects a bad
level with the same message.
"""

from __future__ import annotations

import math


def check_share(level: float) -> float:
    """A share level must lie in [0, 1]."""
    level = float(level)
    if not 0.0 <= level <= 1.0 or math.isnan(level):
        raise ValueError(f"level must be a share in [0, 1], got {level}")
    return level


def check_count(level: float) -> int:
    """A count level must be a non-negative whole number (1.0 is accepted as 1)."""
    if not math.isfinite(float(level)) or float(level) != int(level) or level < 0:
        raise ValueError(f"level must be a non-negative whole number of operations, got {level}")
    return int(level)


def at_least_one(n_items: int, share: float) -> int:
    """``ceil(share * n_items)`` but at least one edit for any positive share, so short texts are noised too."""
    if share <= 0:
        return 0
    return max(1, math.ceil(share * n_items - 1e-9))


def bernoulli_mask(rng, n_items: int, share: float):
    """Which of ``n_items`` candidates to edit, each independently with probability ``share``."""
    return rng.random(n_items) < share
