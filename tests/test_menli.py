"""MENLI pooling, scoring, combination and the torchmetrics shell."""
from pathlib import Path

import numpy as np
import pytest
import torch

from menli import ALL_STRATEGIES, MENLI, CombinationStats, CombinedScorer, MENLIScorer, MinMax, combine, menli_scores, pool


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


def test_combination_min_max_and_degenerate_ranges():
    out = combine([0.0, 0.5, 1.0], [10.0, 30.0, 20.0], weight=0.2)
    np.testing.assert_allclose(out, [0.0, 0.2 * 0.5 + 0.8 * 1.0, 0.2 + 0.8 * 0.5])
    same = combine([0.3, 0.3], [5.0, 5.0], weight=0.5)  # no division by zero
    np.testing.assert_allclose(same, [0.5, 0.5])
    single = combine([0.3], [12.0], 0.2)  # one row: both ranges degenerate, each part 0.5
    np.testing.assert_allclose(single, [0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        combine([1.0], [1.0], 1.5)


def test_stored_statistics_make_scores_independent_of_the_batch(tmp_path):
    stats = CombinationStats(MinMax(0.0, 1.0), MinMax(0.0, 100.0))
    stats.save(tmp_path / "s.json")
    loaded = CombinationStats.load(tmp_path / "s.json")
    alone = combine([0.5], [50.0], 0.3, loaded)
    together = combine([0.5, 0.9, 0.1], [50.0, 99.0, 1.0], 0.3, loaded)
    assert alone[0] == pytest.approx(together[0]) == pytest.approx(0.5)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="normalisation file"):
        CombinationStats.load(tmp_path / "bad.json")


class LengthScorer:
    name = "len"

    def score(self, hyps, refs, srcs=None):
        return [float(len(h)) for h in hyps]

    def signature(self):
        return "len"


def test_combined_scorer_takes_any_metric():
    menli = MENLIScorer(_nli=TableNLI())
    combined = CombinedScorer(menli, LengthScorer(), weight=0.2, stats="set")
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    n = np.array(menli.score(hyps, refs))
    m = np.array([1.0, 3.0, 2.0])
    want = 0.2 * (n - n.min()) / (n.max() - n.min()) + 0.8 * (m - 1) / 2
    np.testing.assert_allclose(combined.score(hyps, refs), want)
    assert combined.name == "menli+len"
    assert "w:0.2" in combined.signature() and "m=[len]" in combined.signature()


class VersionedLength(LengthScorer):
    def __init__(self, unit="chars", version="0.1.0"):
        self.unit, self.version = unit, version

    def signature(self):
        return f"len|unit:{self.unit}|version:{self.version}"


def test_stored_ranges_name_their_models_and_other_models_are_refused(tmp_path):
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    fitting = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), weight=0.4, stats="set")
    fitting.score(hyps, refs)
    fitting.last_stats.save(tmp_path / "ranges.json")
    stored = CombinationStats.load(tmp_path / "ranges.json")
    assert stored.fitted_with == {"nli": "packaged:nli-mpnet@table|formula:e|direction:<->", "metric": "len|unit:chars"}

    # same models (another toolkit version): the stored ranges apply, one segment scores as it did among three
    same = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(version="0.2.0"), weight=0.4, stats=stored)
    assert same.score(hyps[1:2], refs[1:2]) == pytest.approx(fitting.score(hyps, refs)[1:2])
    # another partner, another NLI pooling: refused, naming what differs
    with pytest.raises(ValueError, match="metric: fitted with 'len.unit:chars', this run uses 'len.unit:tokens'"):
        CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength("tokens"), 0.4, stored).score(hyps, refs)
    with pytest.raises(ValueError, match="nli: fitted with .*direction:<->', this run uses .*direction:->'"):
        CombinedScorer(MENLIScorer(direction="->", _nli=TableNLI()), VersionedLength(), 0.4, stored).score(hyps, refs)
    # a file without fitted_with (hand-written, or saved before it existed) is taken as it is
    CombinationStats(stored.nli, stored.metric).save(tmp_path / "plain.json")
    plain = CombinationStats.load(tmp_path / "plain.json")
    assert plain.fitted_with is None
    CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength("tokens"), 0.4, plain).score(hyps, refs)
    (tmp_path / "odd.json").write_text('{"nli": {"low": 0, "high": 1}, "metric": {"low": 0, "high": 1}, "fitted_with": 3}')
    with pytest.raises(ValueError, match="optionally fitted_with"):
        CombinationStats.load(tmp_path / "odd.json")


def test_python_api_takes_packaged_ranges_for_its_models_by_default(tmp_path, monkeypatch):
    """The library's default is the CLI's: stored ranges fitted with exactly these models, else set normalisation
    with a warning; a file fitted with other models is never taken."""
    hyps, refs = ["a", "bbb", "cc"], ["x", "y", "z"]
    fitting = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), weight=0.4, stats="set")
    among_three = fitting.score(hyps, refs)
    (tmp_path / "menli").mkdir()
    fitting.last_stats.save(tmp_path / "menli" / "table+len.json")
    monkeypatch.setattr("nlgmetrics.resources.CONFIG_DIR", tmp_path)

    default = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), weight=0.4)
    assert not default.batch_dependent and default.stats_file == tmp_path / "menli" / "table+len.json"
    assert default.score(hyps[1:2], refs[1:2]) == pytest.approx(among_three[1:2])  # alone == among others
    assert "norm:stored" in default.signature()

    other = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength("tokens"), weight=0.4)
    with pytest.warns(UserWarning, match="no packaged ranges were fitted with these models"):
        assert other.batch_dependent
    assert "norm:set" in other.signature() and other.stats_file is None
    assert other.score(hyps, refs) == pytest.approx(among_three)  # set normalisation over the same three rows
    with pytest.raises(ValueError, match="unknown normalisation 'stored'"):
        CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), stats="stored")
    with pytest.raises(TypeError, match="stats must be CombinationStats"):
        CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), stats={"nli": [0, 1]})


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
    from nlgmetrics.cli.evaluate import _normalization_file
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.resources import CONFIG_DIR

    shipped = CONFIG_DIR / "menli" / "nli-mpnet+bertscore-minilm.json"
    assert _normalization_file("menli/nli-mpnet+bertscore-minilm.json") == shipped
    assert _normalization_file("configs/menli/nli-mpnet+bertscore-minilm.json").resolve() == shipped.resolve()
    own = tmp_path / "mine.json"
    CombinationStats(MinMax(0.0, 1.0), MinMax(0.0, 1.0)).save(own)
    assert _normalization_file(str(own)) == own
    with pytest.raises(InputError, match=r"--normalization: config file not found: nope.json .*menli/nli-mpnet"):
        _normalization_file("nope.json")


def test_packaged_ranges_each_name_the_models_they_were_fitted_with_and_no_two_the_same():
    """`--normalization auto` takes the packaged file fitted with the run's models: a file without that record
    could never be chosen, and two files with the same record would make the choice depend on file names."""
    from nlgmetrics.resources import CONFIG_DIR

    records = []
    for path in sorted((CONFIG_DIR / "menli").glob("*.json")):
        stats = CombinationStats.load(path)
        assert stats.fitted_with and set(stats.fitted_with) == {"nli", "metric"}, path
        assert not stats.nli.degenerate and not stats.metric.degenerate, path
        records.append(tuple(sorted(stats.fitted_with.items())))
    assert len(records) >= 1 and len(set(records)) == len(records)


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
    plain = CombinedScorer(MENLIScorer(_nli=TableNLI()), VersionedLength(), weight=0.4, stats="set")
    plain.score(hyps, refs)
    sharded = CombinedScorer(_Sharded(MENLIScorer(_nli=TableNLI())), VersionedLength(), weight=0.4, stats="set")
    sharded.score(hyps, refs)
    assert sharded.last_stats == plain.last_stats and sharded.last_stats.fitted_with is not None
    wrong = CombinedScorer(_Sharded(MENLIScorer(formula="-c", _nli=TableNLI())), VersionedLength(), 0.4,
                           plain.last_stats)
    with pytest.raises(ValueError, match="formula:-c"):
        wrong.score(hyps, refs)
    # a custom MENLI-like part whose signature names no model: ranges are saved without a record
    anonymous = CombinedScorer(LengthScorer(), VersionedLength(), weight=0.4, stats="set")
    anonymous.score(hyps, refs)
    assert anonymous.last_stats.fitted_with is None


class WordCount(LengthScorer):
    name = "words"

    def score(self, hyps, refs, srcs=None):
        return [float(len(h.split())) for h in hyps]

    def signature(self):
        return "words|version:0.1.0"


def test_mixed_scorer_is_the_weighted_sum_of_min_max_normalised_parts_and_its_recipe_fixes_them(tmp_path):
    from menli import MixedScorer, MixRecipe

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
            hyps, refs)


@pytest.mark.parametrize("kwargs,error", [
    ({"weights": [0.5, 0.5]}, "2 weights for 3 parts"),
    ({"weights": [0.5, 0.6, -0.1]}, "finite and >= 0"),
    ({"weights": [0.5, 0.4, 0.3]}, "sum to 1"),
    ({"recipe": "set"}, "set normalisation needs weights"),
    ({"recipe": "stored"}, "unknown normalisation 'stored'"),
])
def test_mixed_scorer_names_bad_weights_and_recipes(kwargs, error):
    from menli import MixedScorer

    with pytest.raises(ValueError, match=error):
        MixedScorer(MENLIScorer(_nli=TableNLI()), [VersionedLength(), WordCount()], **kwargs)


def test_mix_recipe_files_are_checked_on_load(tmp_path):
    from menli import MixRecipe

    bad = {"missing.json": None, "garbage.json": "{", "no_parts.json": '{"nli": {"low": 0, "high": 1}}',
           "weights.json": '{"parts": [{"name": "menli", "weight": 0.5, "low": 0, "high": 1},'
                           ' {"name": "m", "weight": 0.2, "low": 0, "high": 1}]}',
           "record.json": '{"parts": [{"name": "menli", "weight": 0.5, "low": 0, "high": 1, "fitted_with": 3},'
                          ' {"name": "m", "weight": 0.5, "low": 0, "high": 1}]}'}
    for name, text in bad.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=f"mix recipe .*{name}"):
            MixRecipe.load(tmp_path / name)


def test_mixed_scorer_takes_the_packaged_recipe_for_its_models_and_needs_weights_without_one(tmp_path, monkeypatch):
    from menli import MixedScorer

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
    import json

    from bench.export_menli_mix import recipe_from_result
    from menli import MixRecipe
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
