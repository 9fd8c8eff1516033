"""The scale a regressor predicts on: the synthesis score itself, or that score mapped to [0, 1].

Synthesis labels are sums of severities in [-25, 0] (0 = no error). A checkpoint states which scale it was
trained on in ``hparams.yaml`` and the scorer returns scores on that scale, so a number is never read without
knowing its range. ``unit`` is the default for training: targets of order 1 suit a freshly initialised linear
output and MSE, and the map is monotone, so rankings and every Kendall statistic are identical to ``raw``.
"""

from __future__ import annotations

from typing import Any

MIN_SCORE = -25.0
MAX_SCORE = 0.0

OUTPUT_SCALES: dict[str, dict[str, Any]] = {
    "raw": {
        "range": [MIN_SCORE, MAX_SCORE],
        "formula": "s (sum of edit severities)",
        "meaning": "0 = no error, -1 per minor and -5 per major error, -25 worst",
    },
    "unit": {
        "range": [0.0, 1.0],
        "formula": "(25 + s) / 25",
        "meaning": "1 = no error, 0 = the worst synthetic score (-25)",
    },
}


def check_scale(name: str) -> str:
    """Return ``name`` if it is a known output scale; raise ValueError naming the choices otherwise."""
    if name not in OUTPUT_SCALES:
        raise ValueError(f"unknown output scale '{name}'; choose one of {', '.join(OUTPUT_SCALES)}")
    return name


def to_target(score: Any, scale: str) -> Any:
    """Synthesis score(s) in [-25, 0] -> regression target on ``scale`` (works on floats, arrays and tensors)."""
    check_scale(scale)
    return score if scale == "raw" else (score - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)


def describe(scale: str) -> dict[str, Any]:
    """What ``hparams.yaml`` records about the output: name, range, formula, direction."""
    check_scale(scale)
    return {"name": scale, **OUTPUT_SCALES[scale], "higher_is_better": True}


def bound_to_range(scores: Any, scale: str, margin_share: float = 0.1) -> Any:
    """Keep predictions inside the declared range without changing any ranking.

    A linear head can overshoot (identical pairs scored up to 1.15 on the unit scale). Scores in the middle of
    the range are returned unchanged; within ``margin_share`` of an end they are squashed by an exponential that
    meets the identity with slope 1, so the map is continuous, strictly increasing and never reaches the end.
    Works on numpy arrays (the scorer's output).
    """
    import numpy as np

    low, high = OUTPUT_SCALES[check_scale(scale)]["range"]
    margin = margin_share * (high - low)
    x = np.asarray(scores, dtype=np.float64)
    upper, lower = high - margin, low + margin
    out = x.copy()
    above, below = x > upper, x < lower
    out[above] = high - margin * np.exp(-(x[above] - upper) / margin)
    out[below] = low + margin * np.exp((x[below] - lower) / margin)
    return out
