"""Correlation of metric scores with human judgments, by the literature's definitions (shared/data/README.md).

- WMT20 "tau-like", grouped by item: for each item, every pair of systems whose human scores differ is
  Concordant or Discordant by the metric; a metric tie counts as Discordant. tau = (C - D) / (C + D).
- Kendall tau-b and Pearson over all rows (no grouping).
- System level: Pearson between per-system mean metric score and per-system mean human score.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Hashable, Sequence

import numpy as np


def _check(metric: Sequence[float], human: Sequence[float], *others: Sequence) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(metric, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if m.shape != h.shape or any(len(o) != len(m) for o in others):
        raise ValueError(f"length mismatch: {len(m)} metric scores, {len(h)} human scores")
    if not np.all(np.isfinite(m)):
        raise ValueError("metric scores contain NaN or infinity")
    return m, h


def tau_like(metric: Sequence[float], human: Sequence[float], items: Sequence[Hashable]) -> float:
    """WMT20 item-grouped Kendall-like tau; NaN when no pair of systems differs in human score."""
    m, h = _check(metric, human, items)
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        groups[item].append(index)
    concordant = discordant = 0
    for rows in groups.values():
        if len(rows) < 2:
            continue
        idx = np.asarray(rows)
        hd = h[idx][:, None] - h[idx][None, :]
        md = m[idx][:, None] - m[idx][None, :]
        upper = np.triu(np.ones_like(hd, dtype=bool), k=1) & (hd != 0)
        agree = np.sign(hd[upper]) == np.sign(md[upper])
        concordant += int(agree.sum())
        discordant += int((~agree).sum())  # includes metric ties
    total = concordant + discordant
    return (concordant - discordant) / total if total else math.nan


def kendall_b(metric: Sequence[float], human: Sequence[float]) -> float:
    from scipy.stats import kendalltau

    m, h = _check(metric, human)
    return float(kendalltau(m, h, variant="b").statistic)


def pearson(metric: Sequence[float], human: Sequence[float]) -> float:
    m, h = _check(metric, human)
    if len(m) < 2 or np.std(m) == 0 or np.std(h) == 0:
        return math.nan
    return float(np.corrcoef(m, h)[0, 1])


def system_means(values: Sequence[float], systems: Sequence[Hashable]) -> dict[Hashable, float]:
    sums: dict[Hashable, list[float]] = defaultdict(list)
    for value, system in zip(values, systems):
        sums[system].append(float(value))
    return {system: float(np.mean(v)) for system, v in sums.items()}


def system_pearson(metric: Sequence[float], human: Sequence[float], systems: Sequence[Hashable]) -> float:
    m, h = _check(metric, human, systems)
    ms, hs = system_means(m, systems), system_means(h, systems)
    names = sorted(ms, key=str)
    return pearson([ms[n] for n in names], [hs[n] for n in names])


def correlation_report(
    metric: Sequence[float], human: Sequence[float], items: Sequence[Hashable], systems: Sequence[Hashable]
) -> dict[str, float]:
    """All four statistics at once, as ``evaluate.py correlate`` prints them."""
    return {
        "tau_like": tau_like(metric, human, items),
        "kendall_b": kendall_b(metric, human),
        "pearson": pearson(metric, human),
        "system_pearson": system_pearson(metric, human, systems),
        "n": len(metric),
        "n_systems": len(set(systems)),
    }
