"""Which of several systems is better on one test set, and is the gap larger than the test set's noise?

Paired bootstrap resampling (Koehn, 2004), the test behind ``sacrebleu --paired-bs`` and the bootstrap part of
COMET's ``comet-compare``: segment indices are drawn with replacement, and every system is re-scored on the
*same* draw, so what the systems share (easy and hard segments) cancels in their difference. The system score
on a resample is the metric's own system statistic: for corpus BLEU/chrF the corpus formula applied to the
summed sufficient statistics of the drawn segments (a mean of sentence BLEU would estimate another quantity),
for every other metric the mean of the drawn segment scores.

Resamples draw ``rng.integers(0, n, size=(rows, n))`` from ``numpy.random.default_rng(seed)``, the same stream
as sacrebleu's ``rng.choice(n, size=(resamples, n))``: with sacrebleu's seed (12345 unless ``SACREBLEU_SEED``)
the per-system resampled corpus scores are sacrebleu's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Callable, Mapping, Sequence

import numpy as np

CORRECTIONS = ("none", "bonferroni")
_CELLS_PER_CHUNK = 4_000_000  # resample rows are drawn in blocks of about this many indices (32 MB of int64)


@dataclass(frozen=True)
class CorpusStatistic:
    """A system score that is not a mean of segment scores, given as additive per-segment statistics.

    ``stats[system]`` is a [segments, k] array whose column sums are all the metric needs (BLEU: hypothesis and
    reference length, matching and total n-grams per order); ``score`` maps one summed row [k] to the system
    score. Summing the drawn rows and applying ``score`` re-scores a resample without re-tokenising anything,
    which is how sacrebleu makes its bootstrap fast.
    """

    stats: Mapping[str, np.ndarray]
    score: Callable[[np.ndarray], float]
    name: str = "corpus statistic"


def _resampled_sums(stats: Mapping[str, np.ndarray], resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Column sums of every system's ``stats`` [n, k] over each resample: ``{system: [resamples, k]}``.

    One index draw per resample serves every system. A resample is a vector of draw counts per segment, so a
    system's sums are one matrix product, taken per system: identical inputs then give bit-identical sums (a
    difference of exactly 0), which one product over all systems' columns side by side would not promise.
    Drawing in blocks of rows bounds memory on large test sets and consumes the generator exactly as one
    ``rng.integers(0, n, size=(resamples, n))`` call would.
    """
    rng = np.random.default_rng(seed)
    n = len(next(iter(stats.values())))
    out = {name: np.empty((resamples, s.shape[1])) for name, s in stats.items()}
    block = max(1, _CELLS_PER_CHUNK // n)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        picks = rng.integers(0, n, size=(rows, n))
        flat = (picks + n * np.arange(rows)[:, None]).ravel()
        counts = np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)
        for name, s in stats.items():
            out[name][start : start + rows] = counts @ s
    return out


def _draws(
    statistic: CorpusStatistic | None, scores: Mapping[str, np.ndarray], n: int, resamples: int, seed: int
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Full-set score and ``resamples`` bootstrap scores of every system, all systems on the same draws."""
    if statistic is None:
        sums = _resampled_sums({name: s[:, None] for name, s in scores.items()}, resamples, seed)
        return (
            {name: float(s.sum() / n) for name, s in scores.items()},
            {name: total[:, 0] / n for name, total in sums.items()},
        )
    stats = {name: np.asarray(statistic.stats[name]) for name in scores}
    sums = _resampled_sums({name: s.astype(np.float64) for name, s in stats.items()}, resamples, seed)
    return (
        {name: float(statistic.score(s.sum(axis=0))) for name, s in stats.items()},
        {name: np.array([statistic.score(row) for row in total], dtype=np.float64) for name, total in sums.items()},
    )


def _interval(draws: np.ndarray, level: float) -> list[float]:
    """Equal-tailed percentile interval of the bootstrap draws."""
    tail = (1 - level) / 2
    return [float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))]


def bootstrap_p_value(observed: float, draws: np.ndarray) -> float:
    """Two-sided paired-bootstrap p-value of a difference: ``min(1, 2 (k + 1) / (B + 1))``.

    ``k`` counts the ``B`` resampled differences that do not have the observed difference's sign (the other
    sign, or zero): how often the test set, drawn again, would not have shown the observed winner (Koehn 2004).
    Doubling makes it two-sided (either system may win); the ``+1`` keeps a finite number of resamples from
    claiming p = 0 (the same correction sacrebleu applies). An observed difference of exactly 0 has p = 1.

    Not the same statistic as the two tools this command follows: sacrebleu's ``--paired-bs`` p-value is
    ``(#{|d*| - mean|d*| > |d|} + 1) / (B + 1)``, the resampled absolute differences shifted to mean zero as a
    null distribution; ``comet-compare`` takes its p-value from a paired t-test on segment scores and uses the
    bootstrap only for win shares. The sign count is chosen because it agrees with the reported interval:
    p < alpha means fewer than alpha/2 of the draws lie across 0, so the equal-tailed (1 - alpha) interval
    of the difference excludes 0 (for every B: the k draws across 0 sort below the lower quantile's
    position). The converse can fail only at the boundary, where the ``+1`` leaves p just above alpha.
    """
    if observed == 0:
        return 1.0
    against = int(np.sum(draws <= 0)) if observed > 0 else int(np.sum(draws >= 0))
    return min(1.0, 2 * (against + 1) / (len(draws) + 1))


def paired_bootstrap_systems(
    segment_scores: Mapping[str, Sequence[float]],
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    corpus_statistic: CorpusStatistic | None = None,
    correction: str = "none",
) -> dict[str, Any]:
    """System scores with bootstrap intervals, and a significance verdict for every pair of systems.

    ``segment_scores`` maps each system name to its scores on the same segments (same order for every system).
    The system score is the mean of those scores, or ``corpus_statistic`` on the summed statistics when given
    (BLEU/chrF). Segment scores always give the pair's wins, ties and losses (the share of segments where A
    scores higher is what a user reading "A better" usually pictures).

    Per system: ``score`` on the full set, its (1 - alpha) percentile ``ci`` and the mean of the resampled
    scores. Per pair (A, B) in input order: ``difference`` = score(A) - score(B), its percentile ``ci``,
    ``p_value`` (see ``bootstrap_p_value``), and ``verdict``: "A better" / "B better" when p < alpha, else
    "no significant difference".

    Several systems make several tests, and at alpha = 0.05 one pair in twenty of equally good systems is
    called different by chance. ``correction="none"`` (default) reports each pair on its own and says so;
    ``"bonferroni"`` multiplies every p-value by the number of pairs (capped at 1) and widens the difference
    intervals to 1 - alpha / pairs, so verdict and interval stay in agreement.
    """
    names = list(segment_scores)
    if len(names) < 2:
        raise ValueError(f"comparing needs at least 2 systems, got {len(names)}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    scores = {name: np.asarray(segment_scores[name], dtype=np.float64) for name in names}
    lengths = {name: len(s) for name, s in scores.items()}
    if len(set(lengths.values())) != 1 or not lengths[names[0]]:
        raise ValueError(f"every system needs scores for the same non-empty set of segments, got {lengths}")
    for name, values in scores.items():
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):  # a NaN would compare false everywhere and turn into a confident verdict
            raise ValueError(f"system {name}: segment {int(bad[0])} has the score {values[bad[0]]} (not finite)")
    if corpus_statistic is not None:
        for name in names:
            if name not in corpus_statistic.stats:
                raise ValueError(f"{corpus_statistic.name}: no statistics for system {name}")
            rows = len(np.asarray(corpus_statistic.stats[name]))
            if rows != lengths[name]:
                raise ValueError(f"{corpus_statistic.name} of {name}: {rows} segments, but {lengths[name]} scores")
    n = lengths[names[0]]
    full, resampled = _draws(corpus_statistic, scores, n, resamples, seed)
    pairs_total = len(names) * (len(names) - 1) // 2
    factor = pairs_total if correction == "bonferroni" else 1
    systems = [
        {
            "name": name,
            "score": full[name],
            "ci": _interval(resampled[name], 1 - alpha),
            "bootstrap_mean": float(resampled[name].mean()),
        }
        for name in names
    ]
    pairs = []
    for a, b in combinations(names, 2):
        difference = full[a] - full[b]
        draws = resampled[a] - resampled[b]
        p_value = bootstrap_p_value(difference, draws)
        adjusted = min(1.0, p_value * factor)
        verdict = "no significant difference"
        if adjusted < alpha:
            verdict = f"{a if difference > 0 else b} better"
        pair = {
            "a": a,
            "b": b,
            "difference": difference,
            "ci": _interval(draws, 1 - alpha / factor),
            "p_value": p_value,
            "wins": int(np.sum(scores[a] > scores[b])),
            "ties": int(np.sum(scores[a] == scores[b])),
            "losses": int(np.sum(scores[a] < scores[b])),
            "verdict": verdict,
        }
        if correction == "bonferroni":
            pair["p_value_bonferroni"] = adjusted
        pairs.append(pair)
    if pairs_total == 1:
        note = "one comparison: nothing to correct"
    elif correction == "none":
        note = f"p-values and verdicts are per pair, not corrected for the {pairs_total} comparisons"
    else:
        note = (
            f"Bonferroni over {pairs_total} comparisons: p-values multiplied by {pairs_total}, difference "
            f"intervals at {1 - alpha / factor:.4g}"
        )
    return {
        "systems": systems,
        "pairs": pairs,
        "settings": {
            "segments": n,
            "resamples": resamples,
            "seed": seed,
            "alpha": alpha,
            "correction": correction,
            "system_ci_level": 1 - alpha,
            "difference_ci_level": 1 - alpha / factor,
            "system_score": corpus_statistic.name if corpus_statistic is not None else "mean of segment scores",
            "p_value": "two-sided paired bootstrap: min(1, 2 (k + 1) / (B + 1)), k = resampled differences "
            "without the observed sign (zero included)",
            "wins_ties_losses": "segments where a's segment score is above / equal to / below b's",
            "multiple_comparisons": note,
        },
    }


def markdown_table(result: Mapping[str, Any], digits: int = 4) -> str:
    """The comparison as two Markdown tables (systems, then pairs) with the settings a reader needs to trust it."""
    settings = result["settings"]
    system_level = f"{100 * settings['system_ci_level']:.4g}%"
    pair_level = f"{100 * settings['difference_ci_level']:.4g}%"
    lines = [
        f"{settings['segments']} segments, {settings['resamples']} paired bootstrap resamples, seed "
        f"{settings['seed']}, alpha {settings['alpha']}; system score: {settings['system_score']}.",
        "",
        f"| system | score | {system_level} CI |",
        "|---|---:|---|",
    ]
    for system in result["systems"]:
        low, high = system["ci"]
        lines.append(f"| {system['name']} | {system['score']:.{digits}f} | [{low:.{digits}f}, {high:.{digits}f}] |")
    p_key = "p_value_bonferroni" if settings["correction"] == "bonferroni" else "p_value"
    lines += [
        "",
        f"| A | B | A - B | {pair_level} CI | p{' (Bonferroni)' if p_key != 'p_value' else ''} "
        "| wins / ties / losses | verdict |",
        "|---|---|---:|---|---:|---|---|",
    ]
    for pair in result["pairs"]:
        low, high = pair["ci"]
        lines.append(
            f"| {pair['a']} | {pair['b']} | {pair['difference']:+.{digits}f} | "
            f"[{low:+.{digits}f}, {high:+.{digits}f}] | {pair[p_key]:.4f} | "
            f"{pair['wins']} / {pair['ties']} / {pair['losses']} | {pair['verdict']} |"
        )
    lines += ["", f"{settings['multiple_comparisons']}.", ""]
    if result.get("signature"):
        lines += [f"`{result['signature']}`", ""]
    return "\n".join(lines)
