"""MENLI pooling, scoring, combination and the torchmetrics shell."""

import json
from pathlib import Path

import numpy as np
import pytest

from menli import (
    ALL_STRATEGIES,
    MENLI,
    MENLIScorer,
    MinMax,
    MixedScorer,
    MixPart,
    MixRecipe,
    menli_scores,
    mix,
    packaged_recipe,
    pair_weights,
    pool,
)


class TableNLI:
    """An NLI stand-in whose probabilities are a fixed function of (premise, hypothesis): tests pooling exactly."""

    hash = "table"

    def __init__(self):
        self.calls = []

    def probs(self, premise, hypothesis):
        seed = sum(map(ord, premise)) * 31 + sum(map(ord, hypothesis)) * 7
        raw = np.random.default_rng(seed).random(3) + 0.05
        return raw / raw.sum()

    def predict_proba(self, premises, hypotheses, batch_size=64, progress=False, desc=""):
        self.calls.append(len(premises))
        return np.array([self.probs(p, h) for p, h in zip(premises, hypotheses)])


def _expected(nli, formula, direction, ref, hyp):
    weights = {"e": (1, 0, 0), "-c": (0, 0, -1), "e-n": (1, -1, 0), "e-c": (1, 0, -1), "e-n-2c": (1, -1, -2)}[formula]
    fwd, bwd = nli.probs(ref, hyp), nli.probs(hyp, ref)
    probs = {"->": fwd, "<-": bwd, "<->": (fwd + bwd) / 2}[direction]
    return float(np.dot(probs, weights))


@pytest.mark.parametrize("formula,direction", ALL_STRATEGIES)
def test_all_15_strategies_match_hand_computation(formula, direction):
    nli = TableNLI()
    hyps, refs = ["a cat sat", "dogs run fast"], ["the cat sat", "a dog runs"]
    got = menli_scores(nli, hyps, refs, formula, direction)
    want = [_expected(nli, formula, direction, r, h) for r, h in zip(refs, hyps)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert nli.calls == [4 if direction == "<->" else 2]  # one batched call for both directions


def test_bidirectional_averages_probabilities_first():
    fwd = np.array([[0.9, 0.05, 0.05]])
    bwd = np.array([[0.1, 0.1, 0.8]])
    # e-n-2c on the averaged vector (0.5, 0.075, 0.425)
    assert pool("e-n-2c", "<->", fwd, bwd)[0] == pytest.approx(0.5 - 0.075 - 0.85)


def test_unknown_strategy_names_choices():
    with pytest.raises(ValueError, match="choose from e, -c"):
        pool("x", "->", np.zeros((1, 3)), None)
    with pytest.raises(ValueError, match="direction"):
        MENLIScorer(direction="sideways")


def test_multi_reference_max_and_mean():
    nli = TableNLI()
    refs = [["r one", "r two", "r three"]]
    each = [_expected(nli, "e", "->", r, "h") for r in refs[0]]
    assert menli_scores(nli, ["h"], refs, "e", "->", "max")[0] == pytest.approx(max(each))
    assert menli_scores(nli, ["h"], refs, "e", "->", "mean")[0] == pytest.approx(np.mean(each))


def test_reference_free_uses_source_as_premise():
    nli = TableNLI()
    scorer = MENLIScorer(formula="-c", direction="->", reference_free=True, _nli=nli)
    got = scorer.score(["the summary"], None, ["the long document"])
    assert got[0] == pytest.approx(_expected(nli, "-c", "->", "the long document", "the summary"))
    with pytest.raises(ValueError, match="needs sources"):
        scorer.score(["x"], ["y"], None)


def _pair(nli, metric, nli_record=None, metric_record=None):
    """A two-part recipe without weights: what a two-part ranges file (``{nli, metric, fitted_with?}``) loads as."""
    return MixRecipe.from_ranges([nli, metric], [nli_record, metric_record])


def test_combination_min_max_and_degenerate_ranges():
    out = mix([[0.0, 0.5, 1.0], [10.0, 30.0, 20.0]], pair_weights(0.2))
    np.testing.assert_allclose(out, [0.0, 0.2 * 0.5 + 0.8 * 1.0, 0.2 + 0.8 * 0.5])
    same = mix([[0.3, 0.3], [5.0, 5.0]], pair_weights(0.5))  # no division by zero
    np.testing.assert_allclose(same, [0.5, 0.5])
    single = mix([[0.3], [12.0]], pair_weights(0.2))  # one row: both ranges degenerate, each part 0.5
    np.testing.assert_allclose(single, [0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pair_weights(1.5)
    assert pair_weights(0.2) == [0.2, 1.0 - 0.2]


def test_stored_statistics_make_scores_independent_of_the_batch(tmp_path):
    _pair(MinMax(0.0, 1.0), MinMax(0.0, 100.0)).save(tmp_path / "s.json")
    loaded = MixRecipe.load(tmp_path / "s.json")
    assert loaded.weights is None and loaded.ranges == [MinMax(0.0, 1.0), MinMax(0.0, 100.0)]
    alone = mix([[0.5], [50.0]], pair_weights(0.3), loaded.ranges)
    together = mix([[0.5, 0.9, 0.1], [50.0, 99.0, 1.0]], pair_weights(0.3), loaded.ranges)
    assert alone[0] == pytest.approx(together[0]) == pytest.approx(0.5)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="mix recipe .*bad.json"):
        MixRecipe.load(tmp_path / "bad.json")


def test_one_partner_is_bit_identical_to_the_papers_weighted_sum_on_every_packaged_ranges_file():
    """The former one-partner combination computed ``w * nli.apply(n) + (1.0 - w) * metric.apply(m)``: the mix
    with ``pair_weights(w)`` must give the same float64 bits (score caches and saved results rely on it), find the
    packaged file for its models itself, and keep that combination's signature (score caches are keyed by it)."""
    from nlgmetrics.resources import CONFIG_DIR

    rng = np.random.default_rng(7)
    paths = sorted((CONFIG_DIR / "menli").glob("*.json"))
    assert paths
    for path in paths:
        recipe = MixRecipe.load(path)
        (nli_range, metric_range), (nli_record, metric_record) = recipe.ranges, recipe.fitted_with
        nli = list(rng.uniform(nli_range.low - 0.5, nli_range.high + 0.5, 100)) + [nli_range.low, nli_range.high]
        metric = list(rng.uniform(metric_range.low - 5, metric_range.high + 5, 100)) + [metric_range.high, 0.0]
        rows = [str(i) for i in range(len(nli))]
        menli_signature = f"menli|nli:{nli_record.split('|')[0]}|formula:e|direction:<->|version:9"
        for w in [0.0, 0.2, 0.3, 0.4, 1.0, *rng.random(5)]:
            old = w * nli_range.apply(nli) + (1.0 - w) * metric_range.apply(metric)
            scorer = MixedScorer(
                Fixed("menli", menli_signature, nli), [Fixed("m", metric_record, metric)], pair_weights(w)
            )
            got = np.array(scorer.score(rows, None))
            assert scorer.recipe_file == path and np.array_equal(got.view(np.uint64), old.view(np.uint64)), (path, w)
            assert scorer.signature() == (f"menli+m|w:{w}|norm:stored|nli=[{menli_signature}]|m=[{metric_record}]")
            assert np.array_equal(mix([nli, metric], pair_weights(w), recipe.ranges), old)


class Fixed:
    """A part with fixed scores per row index and a given signature."""

    def __init__(self, name, signature, values):
        self.name, self._signature, self.values = name, signature, values

    def score(self, hyps, refs, srcs=None):
        return [self.values[int(h)] for h in hyps]

    def signature(self):
        return self._signature


class LengthScorer:
    name = "len"

    def score(self, hyps, refs, srcs=None):
        return [float(len(h)) for h in hyps]

    def signature(self):
        return "len"


def test_mixed_scorer_with_one_partner_takes_any_metric():
    menli = MENLIScorer(_nli=TableNLI())
    combined = MixedScorer(menli, [LengthScorer()], pair_weights(0.2), "set")
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    n = np.array(menli.score(hyps, refs))
    m = np.array([1.0, 3.0, 2.0])
    want = 0.2 * (n - n.min()) / (n.max() - n.min()) + 0.8 * (m - 1) / 2
    np.testing.assert_allclose(combined.score(hyps, refs), want)
    assert combined.name == "menli+len" and combined.batch_dependent
    assert combined.signature().startswith("menli+len|w:0.2|norm:set|nli=[") and "m=[len]" in combined.signature()
    # the paper's default weight without weights; other weights than [w, 1 - w] are both in the signature
    default = MixedScorer(menli, [LengthScorer()], recipe="set")
    assert default.used_weights() == [0.2, 0.8] and default.score(hyps, refs) == combined.score(hyps, refs)
    assert "|w:0.7,0.3|" in MixedScorer(menli, [LengthScorer()], [0.7, 0.3], "set").signature()


class VersionedLength(LengthScorer):
    def __init__(self, unit="chars", version="0.1.0"):
        self.unit, self.version = unit, version

    def signature(self):
        return f"len|unit:{self.unit}|version:{self.version}"


def test_stored_ranges_name_their_models_and_other_models_are_refused(tmp_path):
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    fitting = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], pair_weights(0.4), "set")
    fitting.score(hyps, refs)
    fitting.last_recipe.save(tmp_path / "ranges.json")
    stored = MixRecipe.load(tmp_path / "ranges.json")
    assert stored.fitted_with == ["packaged:nli-mpnet@table|formula:e|direction:<->", "len|unit:chars"]
    assert stored.weights == [0.4, 1.0 - 0.4]

    # same models (another toolkit version): the stored ranges apply, one segment scores as it did among three
    same = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(version="0.2.0")], pair_weights(0.4), stored)
    assert same.score(hyps[1:2], refs[1:2]) == pytest.approx(fitting.score(hyps, refs)[1:2])
    # another partner, another NLI pooling: refused, naming what differs
    with pytest.raises(ValueError, match="len: fitted with 'len.unit:chars', this run uses 'len.unit:tokens'"):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength("tokens")], pair_weights(0.4), stored).score(
            hyps, refs
        )
    with pytest.raises(ValueError, match="menli: fitted with .*direction:<->', this run uses .*direction:->'"):
        MixedScorer(MENLIScorer(direction="->", _nli=TableNLI()), [VersionedLength()], pair_weights(0.4), stored).score(
            hyps, refs
        )
    # a two-part ranges file as --save-normalization wrote it before: read with its records, refused alike
    (tmp_path / "pair.json").write_text(
        json.dumps(
            {
                "nli": {"low": stored.ranges[0].low, "high": stored.ranges[0].high},
                "metric": {"low": stored.ranges[1].low, "high": stored.ranges[1].high},
                "fitted_with": {"nli": stored.fitted_with[0], "metric": stored.fitted_with[1]},
            },
            indent=1,
        )
        + "\n"
    )
    pair = MixRecipe.load(tmp_path / "pair.json")
    assert pair == _pair(*stored.ranges, *stored.fitted_with) and pair.weights is None
    same = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], pair_weights(0.4), pair)
    assert same.score(hyps, refs) == fitting.score(hyps, refs)
    with pytest.raises(ValueError, match="metric: fitted with 'len.unit:chars', this run uses 'len.unit:tokens'"):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength("tokens")], pair_weights(0.4), pair).score(
            hyps, refs
        )
    # a file without fitted_with (hand-written, or saved before it existed) is taken as it is
    _pair(*stored.ranges).save(tmp_path / "plain.json")
    plain = MixRecipe.load(tmp_path / "plain.json")
    assert plain.fitted_with == [None, None]
    MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength("tokens")], pair_weights(0.4), plain).score(hyps, refs)
    (tmp_path / "odd.json").write_text(
        '{"nli": {"low": 0, "high": 1}, "metric": {"low": 0, "high": 1}, "fitted_with": 3}'
    )
    with pytest.raises(ValueError, match="optionally fitted_with"):
        MixRecipe.load(tmp_path / "odd.json")


def test_python_api_takes_packaged_ranges_for_its_models_by_default(tmp_path, monkeypatch):
    """The library's default is the CLI's: stored ranges fitted with exactly these models, else set normalisation
    with a warning; a file fitted with other models is never taken."""
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    fitting = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], pair_weights(0.4), "set")
    among_three = fitting.score(hyps, refs)
    (tmp_path / "menli").mkdir()
    _pair(*fitting.last_recipe.ranges, *fitting.last_recipe.fitted_with).save(tmp_path / "menli" / "table+len.json")
    monkeypatch.setattr("nlgmetrics.resources.CONFIG_DIR", tmp_path)

    default = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], pair_weights(0.4))
    assert not default.batch_dependent and default.recipe_file == tmp_path / "menli" / "table+len.json"
    assert default.score(hyps[1:2], refs[1:2]) == pytest.approx(among_three[1:2])  # alone == among others
    assert "norm:stored" in default.signature()

    other = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength("tokens")], pair_weights(0.4))
    with pytest.warns(UserWarning, match="no packaged recipe was fitted with these models"):
        assert other.batch_dependent
    assert "norm:set" in other.signature() and other.recipe_file is None
    assert other.score(hyps, refs) == pytest.approx(among_three)  # set normalisation over the same three rows
    with pytest.raises(ValueError, match="unknown normalisation 'stored'"):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], recipe="stored")
    with pytest.raises(TypeError, match="recipe must be MixRecipe"):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], recipe={"nli": [0, 1]})

    # a one-partner recipe with weights (what --save-normalization writes now) is found in mix/ and its weights used
    (tmp_path / "menli" / "table+len.json").unlink()
    (tmp_path / "menli" / "mix").mkdir()
    fitting.last_recipe.save(tmp_path / "menli" / "mix" / "table+len.json")
    stored = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()])
    assert stored.used_weights() == [0.4, 1.0 - 0.4] and stored.score(hyps, refs) == among_three
    assert stored.signature() == fitting.signature().replace("norm:set", "norm:stored")


def test_torchmetric_accumulates_like_one_call():
    nli = TableNLI()
    hyps, refs = ["a b", "c d e", "f", "g h"], ["a c", "c d", "f g", "h"]
    metric = MENLI(nli=nli, per_sample=True)
    metric.update(hyps[:1], refs[:1])
    metric.update(hyps[1:], refs[1:])
    np.testing.assert_allclose(metric.compute().numpy(), menli_scores(nli, hyps, refs))
    mean_metric = MENLI(nli=nli)
    mean_metric.update(hyps, refs)
    assert float(mean_metric.compute()) == pytest.approx(float(np.mean(menli_scores(nli, hyps, refs))))
    with pytest.raises(ValueError, match="mismatched lengths"):
        mean_metric.update(["a", "b"], ["c"])


def test_menli_with_a_real_tiny_classifier(tiny):
    scorer = MENLIScorer(model=str(tiny["nli"]), batch_size=2)
    hyps = ["the cat runs", "a dog walks in the city", "he sings", "old man reads a story today"]
    refs = ["the cat walks", "a dog runs", "she sings", "the old man writes"]
    scores = scorer.score(hyps, refs)
    assert all(0.0 <= s <= 1.0 for s in scores)
    again = MENLIScorer(model=str(tiny["nli"]), batch_size=3).score(hyps, refs)
    np.testing.assert_allclose(scores, again, atol=1e-6)  # batch size changes nothing
    assert "menli|nli:" in scorer.signature()


def _ddp_worker(rank, world_size, port, shards, out_dir):
    from ddp_worker import gloo_group

    with gloo_group(rank, world_size, port):
        metric = MENLI(nli=TableNLI(), per_sample=True)
        hyps, refs = shards[rank]
        metric.update(hyps, refs)
        values = metric.compute().numpy()
        np.save(f"{out_dir}/rank{rank}.npy", values)


def test_torchmetric_state_merges_across_two_gloo_processes(tmp_path):
    import torch.multiprocessing as mp
    from ddp_worker import free_port

    port = free_port()
    hyps = ["a b", "c d e", "f", "g h", "i j k l", "m"]
    refs = ["a c", "c d", "f g", "h", "i k", "m n o"]
    shards = [(hyps[:4], refs[:4]), (hyps[4:], refs[4:])]  # uneven shards, as the last DDP batch often is
    mp.start_processes(_ddp_worker, args=(2, port, shards, str(tmp_path)), nprocs=2, start_method="spawn")
    single = menli_scores(TableNLI(), hyps, refs)
    for rank in (0, 1):
        merged = np.load(tmp_path / f"rank{rank}.npy")
        np.testing.assert_allclose(np.sort(merged), np.sort(single))


def test_normalization_files_resolve_by_path_or_packaged_name(tmp_path):
    """``normalization=`` (``--normalization``) takes a path or a packaged name, so a pip install without the
    repository finds the documented files; a missing one is an error naming both places."""
    from nlgmetrics import load_metric
    from nlgmetrics.registry import RegistryError
    from nlgmetrics.resources import CONFIG_DIR

    shipped = MixRecipe.load(CONFIG_DIR / "menli" / "nli-mpnet+bertscore-minilm.json")
    for name in ("menli/nli-mpnet+bertscore-minilm.json", "configs/menli/nli-mpnet+bertscore-minilm.json"):
        assert load_metric("menli+bertscore", normalization=name).recipe == shipped
    own = tmp_path / "mine.json"
    _pair(MinMax(0.0, 1.0), MinMax(0.25, 1.0)).save(own)
    assert load_metric("menli+bertscore", normalization=str(own)).recipe.ranges[1] == MinMax(0.25, 1.0)
    with pytest.raises(RegistryError, match=r"--normalization: config file not found: nope.json .*menli/nli-mpnet"):
        load_metric("menli+bertscore", normalization="nope.json")


def test_packaged_ranges_each_name_the_models_they_were_fitted_with_and_no_two_the_same(tmp_path):
    """`--normalization auto` takes the packaged file fitted with the run's models: a file without that record
    could never be chosen, and two files with the same record would make the choice depend on file names. Each file
    saves back byte for byte, so refitting code writes the same format."""
    from nlgmetrics.resources import CONFIG_DIR

    records = []
    for path in sorted((CONFIG_DIR / "menli").glob("*.json")) + sorted((CONFIG_DIR / "menli" / "mix").glob("*.json")):
        recipe = MixRecipe.load(path)
        recipe.save(tmp_path / "again.json")
        assert (tmp_path / "again.json").read_bytes() == path.read_bytes(), path
        assert all(recipe.fitted_with), path
        assert not any(r.degenerate for r in recipe.ranges), path
        if path.parent.name == "menli":  # two-part ranges files: no weights stored, the scorer's weights apply
            assert len(recipe.parts) == 2 and recipe.weights is None, path
        records.append(tuple(recipe.fitted_with))
    assert len(records) >= 2 and len(set(records)) == len(records)
    assert packaged_recipe(None) is None and packaged_recipe([records[0][0], None]) is None
    assert packaged_recipe(list(records[0]))[0].parent == CONFIG_DIR / "menli"


class _Sharded:
    """A MENLI part seen through a process pool (``--devices 2``): score and signature, no model attributes."""

    def __init__(self, inner):
        self._inner = inner

    def score(self, hyps, refs, srcs=None):
        return self._inner.score(hyps, refs, srcs)

    def signature(self):
        return self._inner.signature()


def test_stored_ranges_check_works_when_menli_is_sharded_over_processes(tmp_path):
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    plain = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength()], pair_weights(0.4), "set")
    plain.score(hyps, refs)
    sharded = MixedScorer(_Sharded(MENLIScorer(_nli=TableNLI())), [VersionedLength()], pair_weights(0.4), "set")
    sharded.score(hyps, refs)
    assert sharded.last_recipe == plain.last_recipe and all(sharded.last_recipe.fitted_with)
    wrong = MixedScorer(
        _Sharded(MENLIScorer(formula="-c", _nli=TableNLI())), [VersionedLength()], pair_weights(0.4), plain.last_recipe
    )
    with pytest.raises(ValueError, match="formula:-c"):
        wrong.score(hyps, refs)
    # a custom MENLI-like part whose signature names no model: its range is saved without a record
    anonymous = MixedScorer(LengthScorer(), [VersionedLength()], pair_weights(0.4), "set")
    anonymous.score(hyps, refs)
    assert anonymous.last_recipe.fitted_with == [None, "len|unit:chars"]


class WordCount(LengthScorer):
    name = "words"

    def score(self, hyps, refs, srcs=None):
        return [float(len(h.split())) for h in hyps]

    def signature(self):
        return "words|version:0.1.0"


def test_mixed_scorer_is_the_weighted_sum_of_min_max_normalised_parts_and_its_recipe_fixes_them(tmp_path):
    hyps, refs = ["a b", "bbb", "cc d e"], ["x", "y", "z"]
    fitting = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], [0.2, 0.5, 0.3], "set")
    got = fitting.score(hyps, refs)
    n = np.array(MENLIScorer(_nli=TableNLI()).score(hyps, refs))
    length, words = np.array([3.0, 3.0, 6.0]), np.array([2.0, 1.0, 3.0])
    want = 0.2 * (n - n.min()) / np.ptp(n) + 0.5 * (length - 3) / 3 + 0.3 * (words - 1) / 2
    np.testing.assert_allclose(got, want)
    assert fitting.batch_dependent and "w:0.2,0.5,0.3|norm:set" in fitting.signature()

    fitting.last_recipe.save(tmp_path / "mix.json")
    recipe = MixRecipe.load(tmp_path / "mix.json")
    assert recipe.weights == [0.2, 0.5, 0.3] and [p.name for p in recipe.parts] == ["menli", "len", "words"]
    assert recipe.fitted_with == ["packaged:nli-mpnet@table|formula:e|direction:<->", "len|unit:chars", "words"]
    # the stored recipe: a row alone scores as it did among three, weights included
    alone = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], recipe=recipe)
    assert not alone.batch_dependent and alone.score(hyps[2:], refs[2:]) == pytest.approx(got[2:])
    # other weights on the same stored ranges
    other = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], [0.0, 1.0, 0.0], recipe)
    np.testing.assert_allclose(other.score(hyps, refs), (length - 3) / 3)
    assert other.last_recipe.weights == [0.0, 1.0, 0.0]
    # a part fitted with something else is refused, by name
    with pytest.raises(ValueError, match="len: fitted with 'len.unit:chars', this run uses 'len.unit:tokens'"):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength("tokens"), WordCount()], recipe=recipe).score(
            hyps, refs
        )


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"weights": [0.5, 0.5]}, "2 weights for 3 parts"),
        ({"weights": [0.5, 0.6, -0.1]}, "finite and >= 0"),
        ({"weights": [0.5, 0.4, 0.3]}, "sum to 1"),
        ({"recipe": "set"}, "set normalisation needs weights"),
        ({"recipe": "stored"}, "unknown normalisation 'stored'"),
    ],
)
def test_mixed_scorer_names_bad_weights_and_recipes(kwargs, error):
    with pytest.raises(ValueError, match=error):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], **kwargs)


def test_one_partner_needs_no_weights_but_refuses_bad_ones_and_recipes_of_other_sizes():
    menli = MENLIScorer(_nli=TableNLI())
    assert MixedScorer(menli, [VersionedLength()], recipe="set").used_weights() == [0.2, 0.8]
    with pytest.raises(ValueError, match="3 weights for 2 parts"):
        MixedScorer(menli, [VersionedLength()], [0.2, 0.5, 0.3])
    with pytest.raises(ValueError, match="sum to 1"):
        MixedScorer(menli, [VersionedLength()], [0.2, 0.7])
    with pytest.raises(ValueError, match="the recipe has 2 parts, this mix 3"):
        MixedScorer(menli, [VersionedLength(), WordCount()], [0.2, 0.5, 0.3], _pair(MinMax(0, 1), MinMax(0, 1)))
    with pytest.raises(ValueError, match="every part of a recipe has a weight or none"):
        MixRecipe((MixPart("menli", 0.2, MinMax(0, 1)), MixPart("m", None, MinMax(0, 1))))
    with pytest.raises(ValueError, match="saved as two-part ranges"):
        MixRecipe(tuple(MixPart(n, None, MinMax(0, 1)) for n in ("menli", "a", "b"))).save("unused.json")
    with pytest.raises(ValueError, match="2 ranges but 2 names, 1 records"):
        MixRecipe.from_ranges([MinMax(0, 1), MinMax(0, 2)], ["only one"])


def test_mix_recipe_files_are_checked_on_load(tmp_path):
    bad = {
        "missing.json": None,
        "garbage.json": "{",
        "no_parts.json": '{"nli": {"low": 0, "high": 1}}',
        "neither.json": '{"ranges": []}',
        "list.json": "[1, 2]",
        "half.json": '{"nli": {"low": 0, "high": 1}, "metric": {"low": "x", "high": 1}}',
        "one_weight.json": '{"parts": [{"name": "menli", "weight": 1.0, "low": 0, "high": 1}]}',
        "no_weight.json": '{"parts": [{"name": "menli", "low": 0, "high": 1}, {"name": "m", "low": 0, "high": 1}]}',
        "weights.json": '{"parts": [{"name": "menli", "weight": 0.5, "low": 0, "high": 1},'
        ' {"name": "m", "weight": 0.2, "low": 0, "high": 1}]}',
        "record.json": '{"parts": [{"name": "menli", "weight": 0.5, "low": 0, "high": 1, "fitted_with": 3},'
        ' {"name": "m", "weight": 0.5, "low": 0, "high": 1}]}',
    }
    for name, text in bad.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=f"mix recipe .*{name}"):
            MixRecipe.load(tmp_path / name)


def test_mixed_scorer_takes_the_packaged_recipe_for_its_models_and_needs_weights_without_one(tmp_path, monkeypatch):
    hyps, refs = ["a b", "bbb", "cc d e"], ["x", "y", "z"]
    fitting = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], [0.2, 0.5, 0.3], "set")
    among_three = fitting.score(hyps, refs)
    (tmp_path / "menli" / "mix").mkdir(parents=True)
    fitting.last_recipe.save(tmp_path / "menli" / "mix" / "table+len+words.json")
    monkeypatch.setattr("nlgmetrics.resources.CONFIG_DIR", tmp_path)

    default = MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()])  # weights: the recipe's
    assert default.score(hyps[:1], refs[:1]) == pytest.approx(among_three[:1])
    assert default.recipe_file == tmp_path / "menli" / "mix" / "table+len+words.json"
    swapped = MixedScorer(MENLIScorer(_nli=TableNLI()), [WordCount(), VersionedLength()])  # order matters
    for _ in range(2):  # and again: the failed lookup left nothing half-set
        with pytest.raises(ValueError, match="no packaged recipe was fitted with these models"):
            swapped.score(hyps, refs)
    with pytest.warns(UserWarning, match="no packaged recipe"):
        weighted = MixedScorer(MENLIScorer(_nli=TableNLI()), [WordCount(), VersionedLength()], [0.2, 0.3, 0.5])
        assert weighted.batch_dependent


def test_packaged_mix_recipes_are_the_measured_combinations():
    """A packaged recipe must score exactly what its ablation measured: the same weights, ranges and models as the
    carried choice of the result file it names, one recipe per set of models."""
    from bench.export_menli_mix import recipe_from_result
    from nlgmetrics.resources import CONFIG_DIR

    repo = Path(__file__).resolve().parents[1]

    records = []
    paths = sorted((CONFIG_DIR / "menli" / "mix").glob("*.json"))
    assert paths
    for path in paths:
        recipe = MixRecipe.load(path)
        assert recipe.source and all(p.fitted_with for p in recipe.parts), path
        assert not any(p.range.degenerate for p in recipe.parts), path
        result = json.loads((repo / recipe.source).read_text())
        assert recipe == recipe_from_result(result, recipe.source), path
        records.append(tuple(recipe.fitted_with))
    assert len(set(records)) == len(records)


def test_menli_mix_metric_refuses_batch_dependent_scores(tiny):
    import functools

    from menli import MENLIMix
    from nlgmetrics.baselines import SacreBleuScorer
    from nlgmetrics.inputs import InputError

    chrf = functools.partial(SacreBleuScorer, "chrf")
    with pytest.raises(InputError, match="set normalisation would make a score depend"):
        MENLIMix([chrf], [0.5, 0.5], recipe="set", model=str(tiny["nli"]))
    with pytest.raises(InputError, match="factories"):
        MENLIMix([SacreBleuScorer("chrf")], model=str(tiny["nli"]))
    metric = MENLIMix([chrf], [0.5, 0.5], model=str(tiny["nli"]))  # "auto", and nothing packaged for a tiny model
    with pytest.raises(InputError, match="no packaged recipe was fitted with these models"):
        metric.update(["a cat"], ["the cat"])


def test_menli_mix_metric_with_one_partner_takes_a_two_part_ranges_file(tiny, tmp_path):
    """The paper's combination in a training loop: one partner, stored two-part ranges, the default weights."""
    import functools

    from menli import MENLIMix
    from nlgmetrics.baselines import SacreBleuScorer

    hyps, refs = ["a cat sat", "the dog runs fast", "he sings"], ["the cat sat", "a dog runs", "she sings"]
    fitting = MixedScorer(MENLIScorer(str(tiny["nli"])), [SacreBleuScorer("chrf")], recipe="set")
    among_three = fitting.score(hyps, refs)
    _pair(*fitting.last_recipe.ranges, *fitting.last_recipe.fitted_with).save(tmp_path / "pair.json")
    metric = MENLIMix(
        [functools.partial(SacreBleuScorer, "chrf")],
        recipe=str(tmp_path / "pair.json"),
        model=str(tiny["nli"]),
        per_sample=True,
    )
    metric.update(hyps[:1], refs[:1])
    metric.update(hyps[1:], refs[1:])
    np.testing.assert_allclose(metric.compute().numpy(), among_three, rtol=1e-12)
