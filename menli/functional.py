"""MENLI scores as pure functions of an NLI model and texts (no state; the torchmetrics class wraps this).

Reference-based: premise/hypothesis are reference and candidate. Reference-free: the source is the premise
(a cross-lingual NLI model is needed for MT). Several references per candidate are aggregated by max or mean.
Every NLI pair of the call is scored in one length-sorted batched pass.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from menli.granularity import nli_probabilities
from menli.pooling import check_strategy, needs, pool
from nlgmetrics.inputs import check_pairs

AGGREGATIONS = ("max", "mean")


def _check_aggregation(aggregation: str) -> None:
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"unknown multi-reference aggregation '{aggregation}'; choose from {AGGREGATIONS}")


def menli_scores(
    nli: Any,
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    formula: str = "e",
    direction: str = "<->",
    aggregation: str = "max",
    batch_size: int = 64,
    progress: bool = False,
    granularity: str = "auto",
    sentence_reduce: str = "mean",
    sentence_candidates: int = 0,
) -> np.ndarray:
    """One score per hypothesis. ``nli`` has ``predict_proba(premises, hypotheses, batch_size=...)``.

    ``granularity``: ``text`` scores whole texts (truncated at the model's window), ``sentence`` pools sentence
    pairs (``menli.granularity``), ``auto`` pools sentences only for pairs longer than the window.
    ``sentence_candidates``: score only each hypothesis sentence's k lexical neighbours (0 = every pair).
    """
    formula, direction = check_strategy(formula, direction)
    _check_aggregation(aggregation)
    hyps, ref_lists, _ = check_pairs(hyps, refs, hyp_name="hypotheses", ref_name="references")
    owner = np.repeat(np.arange(len(hyps)), [len(rs) for rs in ref_lists])
    flat_refs = [r for rs in ref_lists for r in rs]
    flat_hyps = [hyps[i] for i in owner]
    use_forward, use_backward = needs(direction)
    premises: list[str] = []
    hypotheses: list[str] = []
    if use_forward:
        premises += flat_refs
        hypotheses += flat_hyps
    if use_backward:
        premises += flat_hyps
        hypotheses += flat_refs
    # each distinct (premise, hypothesis) pair once: adversarial suites and multi-reference data repeat many
    distinct = list(dict.fromkeys(zip(premises, hypotheses)))
    where = {pair: i for i, pair in enumerate(distinct)}
    distinct_probs, _ = nli_probabilities(
        nli,
        [p for p, _ in distinct],
        [h for _, h in distinct],
        formula,
        granularity,
        sentence_reduce,
        batch_size,
        progress,
        candidates=sentence_candidates,
    )
    probs = distinct_probs[[where[pair] for pair in zip(premises, hypotheses)]] if distinct else distinct_probs
    n = len(flat_refs)
    forward = probs[:n] if use_forward else None
    backward = (probs[n:] if use_forward else probs[:n]) if use_backward else None
    return aggregate_references(pool(formula, direction, forward, backward), owner, len(hyps), aggregation)


def aggregate_references(pair_scores: np.ndarray, owner: np.ndarray, n: int, aggregation: str = "max") -> np.ndarray:
    """One score per hypothesis from its (hypothesis, reference) pair scores; ``owner[i]`` is pair i's hypothesis.

    Kept apart from the NLI pass so analyses that pool stored probabilities several ways (bench/) aggregate
    exactly as the metric does."""
    _check_aggregation(aggregation)
    out = np.full(n, -np.inf if aggregation == "max" else 0.0)
    if aggregation == "max":
        np.maximum.at(out, owner, pair_scores)
    else:
        np.add.at(out, owner, pair_scores)
        out /= np.bincount(owner, minlength=n)
    return out
