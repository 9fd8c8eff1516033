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


def _tau_counts(m: np.ndarray, h: np.ndarray, items: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item (first-seen order): Concordant and Discordant pair counts of the WMT20 tau-like, and how many of
    the Discordant ones are metric ties."""
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        groups[item].append(index)
    concordant = np.zeros(len(groups), dtype=np.int64)
    discordant = np.zeros(len(groups), dtype=np.int64)
    ties = np.zeros(len(groups), dtype=np.int64)
    for g, rows in enumerate(groups.values()):
        if len(rows) < 2:
            continue
        idx = np.asarray(rows)
        hd = h[idx][:, None] - h[idx][None, :]
        md = m[idx][:, None] - m[idx][None, :]
        upper = np.triu(np.ones_like(hd, dtype=bool), k=1) & (hd != 0)
        agree = np.sign(hd[upper]) == np.sign(md[upper])
        concordant[g] = int(agree.sum())
        discordant[g] = int((~agree).sum())  # includes metric ties
        ties[g] = int((md[upper] == 0).sum())
    return concordant, discordant, ties


def tau_like_ties(metric: Sequence[float], human: Sequence[float], items: Sequence[Hashable]) -> dict[str, int]:
    """Judged pairs of the tau-like (same item, different human scores) and how many the metric ties.

    Why report it: a tie counts as discordant, so a set where systems often give the same output (WebNLG) has a
    tau-like that moves with last-bit rounding of equal texts, by up to 2 / judged pairs per tie.
    """
    m, h = _check(metric, human, items)
    concordant, discordant, ties = _tau_counts(m, h, items)
    return {"judged_pairs": int(concordant.sum() + discordant.sum()), "metric_ties": int(ties.sum())}


def _tau_from_counts(concordant: np.ndarray, discordant: np.ndarray) -> float:
    total = int(concordant.sum() + discordant.sum())
    return int(concordant.sum() - discordant.sum()) / total if total else math.nan


def tau_like(metric: Sequence[float], human: Sequence[float], items: Sequence[Hashable]) -> float:
    """WMT20 item-grouped Kendall-like tau; NaN when no pair of systems differs in human score."""
    m, h = _check(metric, human, items)
    return _tau_from_counts(*_tau_counts(m, h, items)[:2])


def _resampled_tau_difference(
    a: np.ndarray,
    b: np.ndarray,
    h: np.ndarray,
    items: Sequence[Hashable],
    resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float, np.ndarray, int]:
    """tau(A), tau(B) and ``resamples`` bootstrap draws of tau(A) - tau(B) over items (the same draw for both)."""
    ca, da, _ = _tau_counts(a, h, items)
    cb, db, _ = _tau_counts(b, h, items)
    picks = rng.integers(0, len(ca), size=(resamples, len(ca)))

    def taus(c: np.ndarray, d: np.ndarray) -> np.ndarray:
        cs, ds = c[picks].sum(1), d[picks].sum(1)
        return (cs - ds) / np.maximum(cs + ds, 1)

    return _tau_from_counts(ca, da), _tau_from_counts(cb, db), taus(ca, da) - taus(cb, db), len(ca)


def difference_interval(diff: np.ndarray) -> dict[str, float | list[float]]:
    """The 95% percentile interval of resampled differences A - B and the share of resamples where A is not
    better: how every paired comparison of the toolkit reports."""
    return {
        "ci95": [float(np.quantile(diff, 0.025)), float(np.quantile(diff, 0.975))],
        "share_a_not_better": float(np.mean(diff <= 0)),
    }


def paired_bootstrap_tau_like(
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    human: Sequence[float],
    items: Sequence[Hashable],
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, float | int | list[float]]:
    """Is metric A's tau-like really above B's? Items are resampled with replacement (both metrics see the same
    resample, so their shared item difficulty cancels); reports the 95% interval of tau(A) - tau(B) and the share
    of resamples where A is not better. Small TED-sized differences are often inside the noise.
    """
    a, h = _check(metric_a, human, items)
    b, _ = _check(metric_b, human, items)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    tau_a, tau_b, diff, n = _resampled_tau_difference(a, b, h, items, resamples, np.random.default_rng(seed))
    return {
        "tau_like_a": tau_a,
        "tau_like_b": tau_b,
        "difference": tau_a - tau_b,
        **difference_interval(diff),
        "resamples": resamples,
        "seed": seed,
        "items": int(n),
    }


def paired_bootstrap_tau_like_mix(
    sets: Sequence[tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[Hashable]]],
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, float | int | list[float]]:
    """The paired bootstrap over a mix of judged sets: the statistic is the unweighted mean over sets of
    tau(A) - tau(B), and each resample draws items within every set independently (sets never trade items).

    One decision over several domains is what keeps a recipe from fitting one dev slice; equal weights keep the
    biggest set from deciding alone.
    """
    if not sets:
        raise ValueError("no judged sets in the mix")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    generators = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(sets))]
    differences, draws = [], []
    for (metric_a, metric_b, human, items), rng in zip(sets, generators):
        a, h = _check(metric_a, human, items)
        b, _ = _check(metric_b, human, items)
        tau_a, tau_b, diff, _ = _resampled_tau_difference(a, b, h, items, resamples, rng)
        differences.append(tau_a - tau_b)
        draws.append(diff)
    diff = np.mean(draws, axis=0)
    return {
        "difference": float(np.mean(differences)),
        **difference_interval(diff),
        "resamples": resamples,
        "seed": seed,
        "sets": len(sets),
    }


def paired_bootstrap_correlation(
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    human: Sequence[float],
    statistic: str = "pearson",
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, float | int | list[float] | str]:
    """Paired bootstrap of corr(A, human) - corr(B, human) over rows (Pearson or Kendall tau-b, no grouping).

    For data with one candidate per item (ROC stories) the item-grouped tau-like is undefined and these
    segment-level correlations are all there is; rows are resampled with replacement, the same draw for both.
    """
    functions = {"pearson": pearson, "kendall_b": kendall_b}
    if statistic not in functions:
        raise ValueError(f"statistic must be one of {', '.join(functions)}, got {statistic!r}")
    a, h = _check(metric_a, human)
    b, _ = _check(metric_b, human)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    corr = functions[statistic]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), size=(resamples, len(a)))
    diff = np.array([corr(a[p], h[p]) - corr(b[p], h[p]) for p in picks])
    diff = diff[np.isfinite(diff)]
    value_a, value_b = corr(a, h), corr(b, h)
    return {
        "statistic": statistic,
        "a": value_a,
        "b": value_b,
        "difference": value_a - value_b,
        **(difference_interval(diff) if len(diff) else {"ci95": [math.nan, math.nan], "share_a_not_better": math.nan}),
        "resamples": resamples,
        "seed": seed,
        "rows": int(len(a)),
    }


def kendall_b(metric: Sequence[float], human: Sequence[float]) -> float:
    """Kendall's tau-b between metric and human scores over all rows, without grouping by item.

    Args:
        metric: one metric score per row.
        human: the human score of each row, aligned with ``metric``.

    Returns:
        tau-b in [-1, 1] (ties on either side are corrected for, as in ``scipy.stats.kendalltau``); NaN when
            either side is constant.

    Raises:
        ValueError: the two lists differ in length, or a metric score is NaN or infinite.
    """
    from scipy.stats import kendalltau

    m, h = _check(metric, human)
    return float(kendalltau(m, h, variant="b").statistic)


def pearson(metric: Sequence[float], human: Sequence[float]) -> float:
    """Pearson's correlation between metric and human scores over all rows.

    Args:
        metric: one metric score per row.
        human: the human score of each row, aligned with ``metric``.

    Returns:
        r in [-1, 1]; NaN for fewer than two rows or when either side is constant.

    Raises:
        ValueError: the two lists differ in length, or a metric score is NaN or infinite.
    """
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
    """System-level Pearson: the correlation between each system's mean metric score and its mean human score.

    Args:
        metric: one metric score per row.
        human: the human score of each row, aligned with ``metric``.
        systems: the system that produced each row; its rows are averaged into one point per system.

    Returns:
        r in [-1, 1] over the systems; NaN for fewer than two systems or when either side's means are constant.

    Raises:
        ValueError: the lists differ in length, or a metric score is NaN or infinite.
    """
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
