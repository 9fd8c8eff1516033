"""MENLI's adversarial preference protocol: does the metric prefer a paraphrase over a one-error candidate?

Reference-based rows compare m(ref, hyp_para) with m(ref, hyp_adv_based); reference-free rows compare
m(src, r) with m(src, hyp_adv_free), the source standing in as the anchor. Accuracy is the share of rows
where the paraphrase scores strictly higher (ties are failures), per error type and as an unweighted mean.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

import numpy as np

from nlgmetrics.metaeval.textio import InputError

ScoreAgainst = Callable[[Sequence[str], Sequence[str]], Sequence[float]]


def adversarial_pairs(
    rows: Sequence[dict], reference_free: bool = False
) -> tuple[list[str], list[str], list[str], list[str]]:
    """(anchors, good candidates, bad candidates, error types) from MENLI-format rows."""
    good_key, bad_key = ("r", "hyp_adv_free") if reference_free else ("hyp_para", "hyp_adv_based")
    anchors, good, bad, types = [], [], [], []
    for number, row in enumerate(rows, 1):
        try:
            anchor = row["src"] if reference_free else row["refs"][0]
            good.append(row[good_key])
            bad.append(row[bad_key])
            types.append(str(row["error"]))
        except (KeyError, IndexError, TypeError) as error:
            raise InputError(f"adversarial row {number}: missing field {error}") from error
        anchors.append(anchor)
    return anchors, good, bad, types


def preference_accuracy(good_scores: Sequence[float], bad_scores: Sequence[float], types: Sequence[str]) -> dict:
    """Per-type accuracy (strict preference) and the unweighted mean over types."""
    good_scores, bad_scores = np.asarray(good_scores, float), np.asarray(bad_scores, float)
    wins: dict[str, list[bool]] = defaultdict(list)
    for g, b, t in zip(good_scores, bad_scores, types):
        wins[t].append(bool(g > b))
    per_type = {t: float(np.mean(v)) for t, v in sorted(wins.items())}
    return {
        "per_type": per_type,
        "mean": float(np.mean(list(per_type.values()))) if per_type else float("nan"),
        "n": int(len(types)),
    }


def adversarial_scores(
    score_against: ScoreAgainst, rows: Sequence[dict], reference_free: bool = False
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(good scores, bad scores, error types): good and bad candidates scored against their anchors in ONE call
    (so set-level normalisation is shared)."""
    anchors, good, bad, types = adversarial_pairs(rows, reference_free)
    scores = np.asarray(list(score_against(good + bad, anchors + anchors)), float)
    return scores[: len(good)], scores[len(good) :], types


def run_adversarial(score_against: ScoreAgainst, rows: Sequence[dict], reference_free: bool = False) -> dict:
    """Per-type and mean preference accuracy of ``score_against`` on MENLI-format rows."""
    return preference_accuracy(*adversarial_scores(score_against, rows, reference_free))
