"""bench/ablate_mars_roc.py: the ROC set-ups, MARS's weighting on precomputed similarities, select-half choice."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import ablate_mars_roc as ablation  # noqa: E402

SRC = "tom went out ."
REF = "tom went out . he saw a dog . it barked . he ran . he got home safe ."
HYP = "tom went out . it rained . he got wet . he went in . he slept ."


def test_splits_build_the_papers_setup_and_the_generated_part():
    assert ablation.roc_split(HYP, REF, SRC, "whole") == (HYP, REF, SRC, False)
    cand, ref, ctx, fallback = ablation.roc_split(HYP, REF, SRC, "paper")
    assert (cand, ref, ctx, fallback) == (
        "he slept .",
        "he got home safe .",
        "tom went out . he saw a dog . it barked . he ran .",
        False,
    )
    cand, ref, ctx, fallback = ablation.roc_split(HYP, REF, SRC, "generated")
    assert cand.startswith("it rained") and ref.startswith("he saw a dog") and ctx == SRC and not fallback
    short = "tom went out . it rained . he slept ."
    cand, _, _, fallback = ablation.roc_split(short, REF, SRC, "paper")
    assert cand == "he slept ." and fallback  # three sentences: the last stands in for the ending
    with pytest.raises(ValueError, match="unknown split"):
        ablation.roc_split(HYP, REF, SRC, "ending")


def test_weighting_is_marss_geometric_weighting():
    from mars.functional import geometric_weights

    sim = np.random.default_rng(0).random((6, 5))
    np.testing.assert_allclose(
        ablation.weighted(sim, ablation.AUG_RATIOS, 0.8), sim @ geometric_weights(5, 0.8).double().numpy(), atol=1e-6
    )
    np.testing.assert_allclose(ablation.weighted(sim, (), 0.5), sim[:, 0])  # no augmentation: the reference only
    np.testing.assert_allclose(ablation.weighted(sim, (0.6,), 1.0), (sim[:, 0] + sim[:, 3]) / 2)
    with pytest.raises(ValueError, match=r"\[items, 5\]"):
        ablation.weighted(sim[:, :3], (0.2,), 0.8)


def test_similarity_matrix_pairs_each_candidate_with_each_of_its_references():
    def overlap(hyps, refs):
        return [len(set(h.split()) & set(r.split())) for h, r in zip(hyps, refs)]

    matrix = ablation.similarity_matrix(
        overlap, ["a b", "c"], [["a", "b", "a b", "x", "y"], ["c", "c d", "", "c", "d"]]
    )
    np.testing.assert_array_equal(matrix, [[1, 1, 2, 0, 0], [1, 1, 0, 1, 0]])


def test_choice_reads_only_the_select_half():
    rng = np.random.default_rng(1)
    human = rng.random(40)
    halves = np.array(["select", "report"] * 20)
    good_on_select = np.where(halves == "select", human, rng.random(40))  # perfect on select, noise on report
    good_on_report = np.where(halves == "report", human, rng.random(40))
    variants = {"a": good_on_select, "b": good_on_report, "base": rng.random(40)}
    result = ablation.select_and_report(variants, human, halves, ["a", "b"], "base", 200, 0)
    assert result["chosen"] == "a" and result["select"]["kendall"] == pytest.approx(1.0)
    report = halves == "report"
    assert result["kendall_b"]["a"] == pytest.approx(
        ablation.evaluate_half(good_on_select, human, np.flatnonzero(report))["kendall"]
    )
    assert result["kendall_b"]["rows"] == 20


def test_every_ratio_set_and_q_is_a_variant_and_none_is_the_plain_similarity():
    sim = np.random.default_rng(2).random((4, 5))
    variants = ablation.variant_scores({("enc", "cosine"): sim})
    assert len(variants) == 1 + (len(ablation.RATIO_SETS) - 1) * len(ablation.QS)
    np.testing.assert_allclose(variants[("enc", "cosine", "none", ablation.QS[0])], sim[:, 0])


def test_overrides_are_yaml_values_and_bad_ones_are_named():
    assert ablation.parse_overrides(["masking.window_words=48", "masking.ratios=[0.0, 0.4]"]) == {
        "masking.window_words": 48,
        "masking.ratios": [0.0, 0.4],
    }
    with pytest.raises(SystemExit, match="KEY=VALUE.*'window'"):
        ablation.parse_overrides(["window"])
