"""bench/compare_nli.py: the stratified paired bootstrap of the adversarial statistic (mean over error types; the
statistic itself is nlgmetrics.metaeval.preference_accuracy, tested in test_metaeval)."""

import numpy as np
import pytest

from bench.compare_nli import stratified_bootstrap_difference


def test_bootstrap_of_a_model_against_itself_is_never_better():
    rng = np.random.default_rng(3)
    wins = rng.random(60) < 0.6
    types = np.repeat(["add", "num", "neg"], 20)
    result = stratified_bootstrap_difference(wins, wins, types, resamples=200)
    assert result["difference"] == 0 and result["ci_low"] == result["ci_high"] == 0
    assert result["not_better"] == 1.0


def test_bootstrap_separates_a_clearly_better_model_and_keeps_type_sizes():
    types = np.repeat(["a", "b"], [10, 30])
    better = np.ones(40, bool)
    worse = np.zeros(40, bool)
    worse[:5] = True  # type a: 5/10, type b: 0/30
    result = stratified_bootstrap_difference(better, worse, types, resamples=300, seed=1)
    assert result["difference"] == pytest.approx(1 - (0.5 + 0.0) / 2)
    assert result["not_better"] == 0.0
    assert 0.5 < result["ci_low"] <= result["difference"] <= result["ci_high"] <= 1.0
    # same seed, same interval
    assert stratified_bootstrap_difference(better, worse, types, resamples=300, seed=1) == result


def test_bootstrap_rejects_mismatched_or_empty_input():
    with pytest.raises(ValueError, match="equal, non-empty"):
        stratified_bootstrap_difference([True], [True, False], ["a"])
    with pytest.raises(ValueError, match="equal, non-empty"):
        stratified_bootstrap_difference([], [], [])
