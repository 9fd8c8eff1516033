"""bench/tau_ties.py: which judged pairs are metric ties, checked against the tau-like they move."""

import numpy as np

from bench.tau_ties import tie_counts
from nlgmetrics.metaeval.correlation import tau_like


def test_tie_counts_match_what_breaking_ties_does_to_the_tau_like():
    rng = np.random.default_rng(0)
    items = [i // 6 for i in range(60)]
    hyps = [f"out {rng.integers(0, 3)}" for _ in items]  # few distinct outputs: many identical ones per item
    human = rng.integers(0, 4, size=60).astype(float)
    scores = [float(len(h) + int(h[-1]) // 2) for h in hyps]  # "out 0" and "out 1" tie: different texts, one score
    counts = tie_counts(scores, list(human), items, hyps)
    judged = sum(
        1 for g in range(10) for a in range(6) for b in range(a + 1, 6) if human[6 * g + a] != human[6 * g + b]
    )
    assert counts["judged_pairs"] == judged
    assert counts["tied_identical_outputs"] > 0 and counts["tied_different_texts"] > 0
    assert counts["metric_ties"] == counts["tied_identical_outputs"] + counts["tied_different_texts"]
    # breaking every tie the human's way turns exactly the counted ties from discordant into concordant
    oracle = [s + 1e-6 * h for s, h in zip(scores, human)]
    assert np.isclose(
        tau_like(oracle, human, items) - tau_like(scores, human, items),
        2 * counts["metric_ties"] / counts["judged_pairs"],
    )
