"""Severity of one step: bidirectional entailment between consecutive versions (paper section 3.3).

An edit is minor (-1) when the text before and after still entail each other, i.e. P(entailment) passes the
threshold in BOTH directions, and major (-5) otherwise. ``ratio`` mode divides by the reference's entailment
with itself first: a small NLI model that gives P(e | x, x) = 0.8 would otherwise call every edit major.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sescore.synthesis.config import SeverityConfig
from sescore.synthesis.stopwatch import Stopwatch

MIN_SCORE, MAX_SCORE = -25, 0


def agreement(
    p_forward: np.ndarray, p_backward: np.ndarray, self_entailment: np.ndarray | None, mode: str
) -> np.ndarray:
    """The weaker direction's entailment, as the threshold sees it (absolute or relative to self-entailment)."""
    weaker = np.minimum(np.asarray(p_forward, dtype=np.float64), np.asarray(p_backward, dtype=np.float64))
    if mode == "absolute":
        return weaker
    if mode == "ratio":
        if self_entailment is None:
            raise ValueError("ratio mode needs the reference's self-entailment")
        return weaker / np.maximum(np.asarray(self_entailment, dtype=np.float64), 1e-6)
    raise ValueError(f"unknown severity mode '{mode}'; use absolute or ratio")


def severities(
    p_forward: np.ndarray, p_backward: np.ndarray, config: SeverityConfig, self_entailment: np.ndarray | None = None
) -> np.ndarray:
    """minor where both directions pass the threshold, else major (ints, e.g. -1 / -5)."""
    minor = agreement(p_forward, p_backward, self_entailment, config.mode) > config.threshold
    return np.where(minor, config.minor, config.major).astype(np.int64)


def entailment_both_ways(
    nli: Any, before: Sequence[str], after: Sequence[str], batch_size: int, clock: Stopwatch | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """P(e | before => after) and P(e | after => before) for all pairs in one batched, length-sorted call."""
    clock = clock or Stopwatch()
    if len(before) != len(after):
        raise ValueError(f"{len(before)} texts before but {len(after)} after")
    if not before:
        return np.zeros(0), np.zeros(0)
    with clock.measure("nli"):
        probs = nli.predict_proba(list(before) + list(after), list(after) + list(before), batch_size=batch_size)
    return probs[: len(before), 0], probs[len(before) :, 0]


def rescale(score: float) -> float:
    """Map a score in [-25, 0] to [0, 1]: (25 + s) / 25 (the optional rescale of the spec)."""
    return (float(score) - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)


__all__ = ["MAX_SCORE", "MIN_SCORE", "agreement", "entailment_both_ways", "rescale", "severities"]
