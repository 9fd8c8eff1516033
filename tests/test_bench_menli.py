"""bench/ablate_menli_combiner.py (partner and weight chosen on one half with fixed ranges) and
bench/stress_menli.py (stored per-row scores: resumable, and combinations computed from them)."""

import json

import numpy as np
import pytest

from bench.ablate_menli_combiner import choose, combined, fit_ranges, mean_tau, reference_scores
from bench.stress_menli import combined_metric
from nlgmetrics.scorecache import ScoreCache, row_key


def _set(name, human, menli, partners, items):
    return {
        "set": name,
        "human": list(human),
        "items": list(items),
        "scores": {"menli": np.asarray(menli, float), **{k: np.asarray(v, float) for k, v in partners.items()}},
    }


def test_choose_finds_the_partner_and_weight_that_rank_like_the_humans():
    # two candidates per item; humans prefer the first. MENLI is right on items 0-1, wrong on 2-3; "good" is
    # right on 2-3 with a larger margin only where MENLI is wrong, so only a mix of both ranks every item
    human = [1, 0] * 4
    items = np.repeat(np.arange(4), 2)
    menli = [0.9, 0.1, 0.9, 0.1, 0.4, 0.6, 0.4, 0.6]
    good = [0.5, 0.5, 0.5, 0.5, 0.9, 0.1, 0.9, 0.1]
    noise = [0.2, 0.8, 0.3, 0.7, 0.5, 0.5, 0.6, 0.4]
    sets = [_set("a", human, menli, {"good": good, "noise": noise}, items)]
    ranges = fit_ranges(sets, ["menli", "good", "noise"])
    grid, best, chosen = choose(sets, ranges, partners=("noise", "good"), weights=(0.0, 0.5, 1.0))
    assert chosen == "good" and best["good"] == 0.5
    assert grid["good"][0.5] == 1.0 and grid["good"][1.0] == grid["noise"][1.0] == 0.0  # MENLI alone: 2 right, 2 wrong
    assert mean_tau(sets, ranges, "good", 0.0) == 0.0


def test_combination_uses_the_fixed_ranges_not_the_scored_rows():
    sets = [_set("a", [1, 0], [0.0, 1.0], {"p": [10.0, 20.0]}, [0, 0])]
    ranges = fit_ranges(sets, ["menli", "p"])
    one_row = {"menli": np.array([0.5]), "p": np.array([15.0])}
    assert combined(one_row, ranges, "p", 0.25) == pytest.approx([0.5])  # a single row keeps its place in the range
    assert combined({"menli": np.array([1.0]), "p": np.array([30.0])}, ranges, "p", 0.5) == pytest.approx([1.5])


def test_combiner_report_shows_the_all_items_set_only_when_the_file_has_it():
    from bench.ablate_menli_combiner import all_items, markdown

    halves = {
        "select": [_set("ted", [1, 0], [0.1, 0.2], {"bertscore": [0.3, 0.4]}, [("s", 0)] * 2)],
        "report": [_set("ted", [0, 1, 1], [0.5, 0.6, 0.7], {"bertscore": [0.1, 0.2, 0.3]}, [("r", 0)] * 3)],
    }
    whole = all_items(halves, "ted")
    assert whole["items"] == [("s", 0)] * 2 + [("r", 0)] * 3 and whole["human"] == [1, 0, 0, 1, 1]
    np.testing.assert_allclose(whole["scores"]["menli"], [0.1, 0.2, 0.5, 0.6, 0.7])
    with pytest.raises(ValueError, match="no set named 'webnlg'"):
        all_items(halves, "webnlg")
    boot = {"difference": 0.01, "ci95": [-0.02, 0.04], "share_a_not_better": 0.25}
    row = {
        "variant": "menli",
        "chosen": False,
        "select_mean_tau": 0.1,
        "report_tau": {"ted": 0.2},
        "report_mean_tau": 0.2,
        "vs_bertscore": boot,
    }
    result = {
        "split_seed": 13,
        "nli_model": "m",
        "select_grid": {"bertscore": {"0.0": 0.1}},
        "adversarial": None,
        "signatures": {"menli": "menli|x"},
        "ranges": {"menli": {"low": 0, "high": 1}},
        "seconds": 1,
        "machine": "here",
        "report": [row],
    }
    old_file = markdown(result).splitlines()
    assert old_file[2].endswith("| adversarial acc. |") and old_file[4].endswith("| 0.250 | - |")
    new_file = markdown(
        {**result, "all_items_set": "ted", "report": [{**row, "all_items_tau": 0.05, "all_items_vs_bertscore": boot}]}
    ).splitlines()
    assert new_file[2].endswith("| ted, all items* | vs BERTScore [95% CI]* |")
    assert new_file[4].endswith("| 0.250 | - | 0.0500 | +0.0100 [-0.0200, +0.0400] |")
    assert any("includes the select half" in line for line in new_file)


class _Counting:
    def __init__(self):
        self.calls = []

    def score(self, hyps, refs, srcs):
        assert srcs is None
        self.calls.append(list(hyps))
        return [len(h) + len(r) for h, r in zip(hyps, refs)]


def test_reference_scores_score_each_distinct_row_once_without_sources(tmp_path):
    rows = [{"hyp": "ab", "refs": ["x"], "src": "S"}, {"hyp": "abc", "refs": ["x", "y"]}, {"hyp": "ab", "refs": ["x"]}]
    scorer = _Counting()
    assert reference_scores(scorer, rows) == [3.0, 5.0, 3.0]
    assert scorer.calls == [["ab", "abc"]]
    scorer.signature = lambda: "counting|v1"
    assert reference_scores(scorer, rows, tmp_path, "refonly-set") == [3.0, 5.0, 3.0]
    assert reference_scores(scorer, rows, tmp_path, "refonly-set") == [3.0, 5.0, 3.0]  # from the score cache
    assert scorer.calls == [["ab", "abc"], ["ab", "abc"]]


def test_combined_stress_metric_reads_stored_scores_with_fixed_stats(tmp_path):
    store = ScoreCache(tmp_path / "s.json")
    store.scores = {"menli-s-mean": {row_key("h", "r"): 0.5}, "bertscore": {row_key("h", "r"): 0.9}}
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"nli": {"low": 0.0, "high": 1.0}, "metric": {"low": 0.8, "high": 1.0}}))
    name, metric = combined_metric(f"menli-s-mean+bertscore:0.2:{stats}", store)
    assert name == "menli-s-mean+bertscore@0.2"
    assert metric(["h"], ["r"], None) == pytest.approx([0.2 * 0.5 + 0.8 * 0.5])
    with pytest.raises(SystemExit, match="no stored scores"):
        metric(["other"], ["r"], None)


def test_combined_stress_metric_takes_the_combiner_ablation_ranges(tmp_path):
    store = ScoreCache(tmp_path / "s.json")
    store.scores = {"menli-s-mean": {row_key("h", "r"): 0.5}, "chrf": {row_key("h", "r"): 55.0}}
    result = tmp_path / "menli_combiner.json"
    ranges = {"menli": {"low": 0.0, "high": 1.0}, "chrf": {"low": 10.0, "high": 100.0}}
    result.write_text(json.dumps({"ranges": ranges}))
    _, metric = combined_metric(f"menli-s-mean+chrf:0.3:{result}", store)
    assert metric(["h"], ["r"], None) == pytest.approx([0.3 * 0.5 + 0.7 * 0.5])
    with pytest.raises(SystemExit, match="not 'bertscore'"):
        combined_metric(f"menli-s-mean+bertscore:0.3:{result}", store)


def test_passed_table_counts_passed_of_judged_per_report(tmp_path):
    from bench.stress_menli import passed_table

    for name, summary in (
        ("a", {"m": {"passed": 3, "failed": 1, "too_few": 2}}),
        ("b", {"m": {"passed": 1, "failed": 0, "too_few": 0}, "n": {"passed": 0, "failed": 2}}),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(json.dumps({"metrics": list(summary), "summary": summary}))
    table = passed_table([tmp_path / "a", tmp_path / "b" / "report.json"])
    assert table.splitlines()[2:] == ["| a | 3/4 | - |", "| b | 1/1 | 0/2 |"]


def test_mixed_stress_metric_applies_the_recipe_after_checking_each_parts_models(tiny, tmp_path):
    from bench.stress_menli import mixed_metric, run_settings
    from menli import MENLIScorer, MinMax, MixPart, MixRecipe
    from menli.scorer import nli_fitted_with

    cli = run_settings(str(tiny["nli"]))
    nli = nli_fitted_with(MENLIScorer(str(tiny["nli"])).signature())
    from menli.scorer import metric_fitted_with
    from nlgmetrics.baselines import SacreBleuScorer

    chrf = metric_fitted_with(SacreBleuScorer("chrf").signature())
    recipe = MixRecipe(
        (
            MixPart("menli", 0.2, MinMax(0.0, 1.0), nli),
            MixPart("chrf", 0.5, MinMax(10.0, 100.0), chrf),
            MixPart("bleu", 0.3, MinMax(0.0, 50.0)),
        )
    )
    recipe.save(tmp_path / "mix.json")
    store = ScoreCache(tmp_path / "s.json")
    key = row_key("h", "r")
    store.scores = {"menli-auto@tiny": {key: 0.5}, "chrf": {key: 55.0}, "bleu": {key: 10.0}}
    name, metric = mixed_metric(f"menli-auto@tiny+chrf+bleu:{tmp_path / 'mix.json'}", store, cli)
    assert name == "menli-auto@tiny+chrf+bleu@0.2/0.5/0.3"
    assert metric(["h"], ["r"], None) == pytest.approx([0.2 * 0.5 + 0.5 * 0.5 + 0.3 * 0.2])
    with pytest.raises(SystemExit, match="no stored scores"):
        metric(["other"], ["r"], None)
    MixRecipe((recipe.parts[0], MixPart("chrf", 0.5, MinMax(10.0, 100.0), "chrf|nc:4"), recipe.parts[2])).save(
        tmp_path / "other.json"
    )
    with pytest.raises(SystemExit, match="chrf: recipe 'chrf.nc:4', here 'chrf.nrefs"):
        mixed_metric(f"menli-auto@tiny+chrf+bleu:{tmp_path / 'other.json'}", store, cli)
    with pytest.raises(SystemExit, match="first part must be a stored MT-pooled MENLI variant"):
        mixed_metric(f"menli-sum-s-mean@tiny+chrf+bleu:{tmp_path / 'mix.json'}", store, cli)


def test_stress_menli_paper_thumb_set_up_averages_menli_over_all_references(tiny):
    from bench.stress_menli import SETUPS, build_metric
    from menli import menli_scores
    from nlgmetrics.nli import load_nli

    _, options = SETUPS["thumb_paper"]
    assert options == {"gold_system": "Human-H", "ref_index": "all", "aggregation": "mean", "limit": 100}
    hyps = ["a man is playing a guitar", "the cat sleeps on the sofa"]
    refs = [["a man plays guitar", "nobody is playing anything"], ["a cat is asleep", "the dog barks loudly"]]
    nli = load_nli(str(tiny["nli"]))
    scored = {}
    for aggregation in ("mean", "max"):
        fn = build_metric("menli", {"nli_model": str(tiny["nli"]), "aggregation": aggregation}, {})
        scored[aggregation] = np.asarray(fn(hyps, refs))
        expected = menli_scores(nli, hyps, refs, "e", "<->", aggregation, granularity="text")
        np.testing.assert_allclose(scored[aggregation], expected, rtol=1e-6)
    # the tiny NLI scores both references alike (to ~1e-6), so check the order rather than a size of the gap
    assert np.all(scored["mean"] <= scored["max"]) and np.any(scored["mean"] < scored["max"])


def test_menli_scores_of_another_nli_model_are_stored_under_their_own_name():
    from bench.stress_menli import DEFAULT_NLI, menli_store_name

    # bare names stay nli-minilm's (the published reports'), also now that the toolkit's default is nli-mpnet
    assert menli_store_name("menli-s-mean", "packaged:nli-minilm") == "menli-s-mean"
    assert menli_store_name("menli-s-mean", DEFAULT_NLI) == "menli-s-mean@nli-mpnet"
    assert menli_store_name("menli-s-mean", "packaged:nli-me5") == "menli-s-mean@nli-me5"
    with pytest.raises(SystemExit, match="cannot key stored scores"):
        menli_store_name("menli", "C:/models/nli")


def test_stress_menli_with_another_nli_model_keeps_the_default_models_scores(tiny, tmp_path, data_dir):
    """A run with --nli-model adds `<variant>@<model>` beside the stored default-model scores, reuses the stored
    partner scores, and reports under the qualified name."""
    import os
    import subprocess
    import sys

    from bench.harness import REPO
    from nlgmetrics.scorecache import ScoreCache as ScoreStore

    store_path = tmp_path / "store.json"
    base = [
        sys.executable,
        str(REPO / "bench" / "stress_menli.py"),
        "--set-up",
        "tedmt",
        "--limit",
        "2",
        "--store",
        str(store_path),
        "--chunk",
        "50",
        "--no-plots",
    ]  # plots were ~5 s of each run's ~16 s
    env = {**os.environ, "NLGMETRICS_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    first = subprocess.run(
        [*base, "--metrics", "chrf", "--out", str(tmp_path / "a")], env=env, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr[-2000:]
    assert (tmp_path / "a" / "report.md").is_file() and not (tmp_path / "a" / "plots").exists()
    chrf = dict(ScoreStore(store_path).scores["chrf"])
    model = str(tiny["nli"])
    # --min-applied 1: two items reach no test's default 10 applied samples, and the --partial check below needs
    # judged tests
    second = subprocess.run(
        [*base, "--metrics", "menli,chrf", "--nli-model", model, "--min-applied", "1", "--out", str(tmp_path / "b")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert second.returncode == 0, second.stderr[-2000:]
    assert "chrf: " + f"{len(chrf)} stored, 0 to score" in second.stdout
    scores = ScoreStore(store_path).scores
    assert set(scores) == {"chrf", f"menli@{model}"} and scores["chrf"] == chrf
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["setup"]["nli_model"] == model and f"menli@{model}" in report["summary"]
    costs = report["setup"]["scoring_costs"]
    # chrf was scored by the first run (recorded in the ledger), read from the store by the second
    assert costs["chrf"]["rows_recorded"] == costs["chrf"]["rows_stored"] == len(chrf)
    menli_cost = costs[f"menli@{model}"]
    assert menli_cost["rows_recorded"] == menli_cost["rows_stored"] > 0
    assert menli_cost["nli_pairs_scored"] == report["setup"]["nli_pairs"]["scored"] > 0
    # the NLI pairs went to a file beside the store: a run whose MENLI rows were lost scores no pair again
    pair_files = list(tmp_path.glob("store.nli-pairs@*.jsonl"))
    assert len(pair_files) == 1 and len(pair_files[0].read_text().splitlines()) > 1
    lost = ScoreStore(store_path)
    menli_scores = lost.scores.pop(f"menli@{model}")
    lost.save()
    third = subprocess.run(
        [*base, "--metrics", "menli", "--nli-model", model, "--out", str(tmp_path / "c")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert third.returncode == 0, third.stderr[-2000:]
    again = json.loads((tmp_path / "c" / "report.json").read_text())["setup"]["nli_pairs"]
    assert again["scored"] == 0 and again["from_cache"] > 0
    assert ScoreStore(store_path).scores[f"menli@{model}"] == menli_scores  # the same probabilities, read back

    # --partial scores nothing and gives, per metric, the verdicts of the tests whose rows are all stored
    full = json.loads((tmp_path / "b" / "report.json").read_text())["tests"]
    judged = sorted(t for t, e in full.items() if e["applicable"] and e["judged"])
    assert len(judged) > 3
    part = [*base, "--metrics", "menli,chrf", "--nli-model", model, "--partial", "--min-applied", "1"]
    complete = subprocess.run([*part, "--out", str(tmp_path / "p")], env=env, capture_output=True, text=True)
    assert complete.returncode == 0, complete.stderr[-2000:]
    summary = json.loads((tmp_path / "p" / "partial.json").read_text())["summary"]
    for name in ("chrf", f"menli@{model}"):
        assert summary[name]["incomplete"] == [] and sorted(summary[name]["verdicts"]) == judged
        assert summary[name]["verdicts"] == {t: full[t]["passed"][name] for t in judged}
    # the last MENLI row stored goes missing: rows are stored in scoring order (gold rows, which every test reads,
    # first; then test by test), so the last is a noised text of a late test only
    cut = ScoreStore(store_path)
    del cut.scores[f"menli@{model}"][list(cut.scores[f"menli@{model}"])[-1]]
    cut.save()
    before = store_path.read_bytes()
    partial = subprocess.run([*part, "--out", str(tmp_path / "q")], env=env, capture_output=True, text=True)
    assert partial.returncode == 0, partial.stderr[-2000:]
    assert store_path.read_bytes() == before  # read only: nothing scored, nothing written to the store
    summary = json.loads((tmp_path / "q" / "partial.json").read_text())["summary"]
    menli = summary[f"menli@{model}"]
    assert 1 <= len(menli["incomplete"]) < len(judged) and summary["chrf"]["incomplete"] == []
    assert menli["verdicts"] == {t: full[t]["passed"][f"menli@{model}"] for t in judged if t not in menli["incomplete"]}
    assert not (tmp_path / "q" / "report.json").exists()  # a runner's "set-up done" file is never written


def test_stress_menli_summary_variant_scores_the_papers_summarisation_pooling(tiny):
    """menli-sum-s-mean is e-c with the candidate as premise (ref<-cand), the MENLI paper's reference-based
    summarisation choice, sentence-pooled like menli-s-mean; it is not the MT variant under another name."""
    from bench.stress_menli import build_metric
    from menli import menli_scores
    from nlgmetrics.nli import load_nli

    hyps = ["A man is playing a guitar. He sings loudly.", "The cat sleeps on the sofa."]
    refs = [["A man plays guitar on a stage."], ["A cat is asleep."]]
    cli = {"nli_model": str(tiny["nli"]), "aggregation": "max"}
    scored = np.asarray(build_metric("menli-sum-s-mean", cli, {})(hyps, refs))
    nli = load_nli(str(tiny["nli"]))
    options = {"granularity": "auto", "sentence_reduce": "mean", "sentence_candidates": 1}
    np.testing.assert_allclose(scored, menli_scores(nli, hyps, refs, "e-c", "<-", "max", **options), rtol=1e-6)
    mt = np.asarray(build_metric("menli-s-mean", cli, {})(hyps, refs))
    assert not np.allclose(scored, mt)


class _DirectionalNLI:
    """Entails when the premise is the longer text: forward and backward passes must come back in their own slots."""

    spec = "fake:directional"
    hash = "0123456789abcdef0123"
    max_length = 128

    def __init__(self):
        self.calls = 0

    def predict_proba(self, premises, hypotheses, **_):
        self.calls += 1
        return np.asarray(
            [[0.9, 0.05, 0.05] if len(p) > len(h) else [0.1, 0.2, 0.7] for p, h in zip(premises, hypotheses)],
            dtype=np.float32,
        )


def test_pooling_ablation_keeps_directions_and_references_apart(tmp_path):
    from bench.ablate_menli_pooling import pair_probabilities, strategy_scores

    rows = [
        {"hyp": "a short one", "refs": ["a much longer reference text", "tiny"]},
        {"hyp": "another candidate here", "refs": ["ref"]},
    ]
    nli = _DirectionalNLI()
    forward, backward = pair_probabilities(nli, rows, tmp_path)
    assert [f.shape for f in forward] == [(2, 3), (1, 3)]
    # row 0, reference 0 is longer: the reference-premise (forward) pass entails, the candidate-premise one not
    assert forward[0][0][0] == pytest.approx(0.9) and backward[0][0][0] == pytest.approx(0.1)
    assert forward[0][1][0] == pytest.approx(0.1) and backward[0][1][0] == pytest.approx(0.9)
    # e ->: max over references; -c <-: each row's best reference by the candidate-premise pass
    np.testing.assert_allclose(strategy_scores(forward, backward, "e", "->"), [0.9, 0.1], rtol=1e-6)
    np.testing.assert_allclose(strategy_scores(forward, backward, "-c", "<-"), [-0.05, -0.05], rtol=1e-6)
    np.testing.assert_allclose(strategy_scores(forward, backward, "e", "<->"), [0.5, 0.5], rtol=1e-6)
    # a second call reads every pair from the cache
    again = pair_probabilities(nli, rows, tmp_path)
    assert nli.calls == 1 and all(np.array_equal(a, b) for a, b in zip(again[0], forward))


def test_pooling_choice_is_the_best_select_mean_with_ties_to_the_paper():
    from bench.ablate_menli_pooling import choose_strategy

    taus = {"e ->": {"a": 0.1, "b": 0.3}, "e <->": {"a": 0.2, "b": 0.2}, "-c <-": {"a": 0.0, "b": 0.1}}
    assert choose_strategy(taus, "e <->") == "e <->"  # 0.2 mean each: the paper's wins the tie
    assert choose_strategy(taus, "-c <-") == "e ->"  # no tie for the paper: the table's first best
    taus["-c <-"] = {"a": 0.3, "b": 0.2}
    assert choose_strategy(taus, "e <->") == "-c <-"


def test_bertscore_weight_ablation_joins_halves_and_always_shows_the_reference_points():
    from bench.ablate_menli_bertscore_weight import all_items, combiner_sets, variants

    def half(tag, n):
        return [
            {
                "set": "ted",
                "human": [float(i) for i in range(n)],
                "items": [(tag, i // 2) for i in range(n)],
                "forward": [np.array([[0.2 * i % 1, 0.5, 0.3]]) for i in range(n)],
                "backward": [np.array([[0.1, 0.6, 0.3]]) for _ in range(n)],
                "bertscore": np.arange(n) / n,
            }
        ]

    sets = combiner_sets({"select": half("s", 4), "report": half("r", 2)}, "e", "->")
    assert set(sets["select"][0]["scores"]) == {"menli", "bertscore"}
    np.testing.assert_allclose(sets["select"][0]["scores"]["menli"], [0.0, 0.2, 0.4, 0.6])
    whole = all_items(sets, "ted")
    assert len(whole["human"]) == 6 and whole["items"][:4] == [("s", 0), ("s", 0), ("s", 1), ("s", 1)]
    np.testing.assert_allclose(whole["scores"]["bertscore"], [0, 0.25, 0.5, 0.75, 0, 0.5])
    assert variants(0.1) == {
        "menli alone": 1.0,
        "bertscore alone": 0.0,
        "menli+bertscore@0.2 (paper-style)": 0.2,
        "menli+bertscore@0.1": 0.1,
    }
    assert list(variants(0.2).values()) == [1.0, 0.0, 0.2]  # the chosen weight is not shown twice
    assert variants(0.1, 0.4)["menli+bertscore@0.4 (robust)"] == 0.4
    assert list(variants(0.1, 0.1).values()) == [1.0, 0.0, 0.2, 0.1]  # a robust weight equal to the chosen one


def test_robust_weight_is_the_best_select_weight_that_meets_the_adversarial_goal():
    from bench.ablate_menli_bertscore_weight import robust_choice
    from bench.ablate_menli_combiner import WEIGHTS

    # humans prefer the first candidate of each item; MENLI is wrong on every item by the whole range, BERTScore
    # right by 0.9, 0.45, 0.27, 0.15, so item k stays right only while w < b_k / (1 + b_k) (0.47, 0.31, 0.21,
    # 0.13): tau-like falls from 1 (w <= 0.1) to 0.5 (0.2), 0 (0.3), -0.5 (0.4) and -1 (w >= 0.5)
    sets = [
        _set(
            "a",
            [1, 0] * 4,
            [0.0, 1.0] * 4,
            {"bertscore": [1.0, 0.1, 0.45, 0.0, 0.27, 0.0, 0.15, 0.0]},
            np.repeat(np.arange(4), 2),
        )
    ]
    ranges = fit_ranges(sets, ["menli", "bertscore"])
    assert [mean_tau(sets, ranges, "bertscore", w) for w in (0.1, 0.2, 0.3, 0.4, 0.5)] == [1.0, 0.5, 0.0, -0.5, -1.0]
    rising = {w: 0.4 + 0.4 * w for w in WEIGHTS}  # adversarial accuracy grows with MENLI's weight
    assert robust_choice(sets, ranges, rising, 0.50) == 0.3  # feasible from w = 0.3; the best of those
    assert robust_choice(sets, ranges, rising, 0.45) == 0.2
    assert robust_choice(sets, ranges, rising, 0.40) == 0.1  # every weight feasible: 0.0 and 0.1 tie, 0.1 is nearer 0.5
    assert robust_choice(sets, ranges, rising, 0.95) is None  # no weight reaches it
    assert robust_choice(sets, ranges, None, 0.70) is None  # suite not run


def test_shipped_ranges_file_is_the_weight_ablations_ranges():
    """The stress runs read the ranges from the ablation's result file, `evaluate.py --normalization` from the
    packaged file: both must be the same numbers, or the README's blind-spot rows describe another metric."""
    from pathlib import Path

    from menli import MixRecipe
    from nlgmetrics.resources import CONFIG_DIR

    repo = Path(__file__).resolve().parents[1]
    result = json.loads((repo / "bench" / "results" / "menli_bertscore_weight_nli-mpnet.json").read_text())
    shipped = MixRecipe.load(CONFIG_DIR / "menli" / "nli-mpnet+bertscore-minilm.json")
    (nli, partner), (nli_record, partner_record) = shipped.ranges, shipped.fitted_with
    assert (nli.low, nli.high) == (result["ranges"]["menli"]["low"], result["ranges"]["menli"]["high"])
    assert (partner.low, partner.high) == (result["ranges"]["bertscore"]["low"], result["ranges"]["bertscore"]["high"])
    assert nli_record.startswith(result["nli_model"] + "@")
    assert nli_record.endswith("|formula:e|direction:<->") and result["strategy"] == "e <->"
    assert result["bertscore"].startswith(partner_record + "|version:")
    assert result["robust_weight"] == 0.4  # the weight the README's command and stress column use


def test_fluency_grid_is_the_whole_simplex_and_the_mix_uses_the_fixed_ranges():
    from bench.ablate_menli_fluency import mixed, simplex

    grid = simplex(0.1)
    assert len(grid) == 66 and len(set(grid)) == 66  # C(12, 2) weight vectors, each once
    assert all(min(w) >= 0 and abs(sum(w) - 1) < 1e-12 for w in grid)
    assert {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)} <= set(grid)
    with pytest.raises(ValueError, match="does not divide"):
        simplex(0.3)
    fit_on = [_set("a", [0, 1], [0.0, 1.0], {"chrf": [0.0, 100.0], "lm-ratio": [-4.0, 4.0]}, [0, 0])]
    ranges = fit_ranges(fit_on, ["menli", "chrf", "lm-ratio"])
    scores = {"menli": np.array([0.5]), "chrf": np.array([50.0]), "lm-ratio": np.array([8.0])}
    # 0.2 * 0.5 + 0.3 * 0.5 + 0.5 * 1.5: the lm-ratio above the fitted range stays above 1 (no clipping)
    assert mixed(scores, ranges, "chrf", (0.2, 0.3, 0.5))[0] == pytest.approx(1.0)


def test_fluency_rule_takes_the_best_point_meeting_the_goal_and_reads_the_report_half_only_above_the_bar():
    from bench.ablate_menli_combiner import meets_goal
    from bench.ablate_menli_fluency import choose, pareto

    def point(tau, adv, weights=(0.4, 0.3, 0.3)):
        return {"partner": "chrf", "weights": list(weights), "select_tau": tau, "adversarial": adv}

    points = [
        point(0.18, 0.34),
        point(0.16, 0.69),
        point(0.15, 0.6999999999999998),
        point(0.14, 0.72),
        point(0.10, 0.71),
    ]
    assert meets_goal(0.6999999999999998, 0.70) and not meets_goal(0.6999, 0.70)
    best, carried, why = choose(points, 0.70, 0.1538)
    assert best["select_tau"] == 0.15 and not carried and "below BERTScore" in why  # 0.70 to rounding counts
    best, carried, _ = choose(points, 0.70, 0.14)
    assert best["select_tau"] == 0.15 and carried
    assert choose(points, 0.80, 0.0)[:2] == (None, False)
    # equal select tau: the weights nearer the centre win
    tie = [point(0.2, 0.9, (1.0, 0.0, 0.0)), point(0.2, 0.9, (0.3, 0.4, 0.3))]
    assert choose(tie, 0.7, 0.0)[0]["weights"] == [0.3, 0.4, 0.3]
    front = pareto(points)
    assert [p["select_tau"] for p in front] == [0.18, 0.16, 0.15, 0.14]  # (0.10, 0.71) is beaten by (0.14, 0.72)


def test_range_files_are_named_by_nli_model_partner_and_its_model():
    from bench.fit_menli_ranges import file_name

    assert (
        file_name("packaged:nli-mpnet", "bertscore|encoder:packaged:minilm@59d7|layer:None|idf:no", "bertscore")
        == "nli-mpnet+bertscore-minilm"
    )  # the robust combination's packaged file
    assert file_name("packaged:nli-mpnet", "chrf|nrefs:var|case:mixed|version:2.6.0", "chrf") == "nli-mpnet+chrf"
    assert (
        file_name("/models/my_nli", "lm-ratio|lm:packaged:smollm2@d38e|logprob", "lm-ratio")
        == "my_nli+lm-ratio-smollm2"
    )


def test_mix_cost_bench_checks_the_mix_against_the_recipe_its_run_found_on_its_parts_scores(tmp_path):
    from bench.bench_menli_mix import MIX, mix_of_parts
    from menli import MixRecipe
    from nlgmetrics.resources import CONFIG_DIR

    packaged = CONFIG_DIR / "menli" / "mix" / "nli-mpnet+sescore-minilm+lm-ratio-smollm2.json"
    recipe = MixRecipe.load(packaged)
    scores = {"menli": [0.2, 0.9], "sescore": [0.5, 0.7], "lm-ratio": [-1.0, 0.5]}
    runs = {f"{name}@wmt": [{"scores": s}] for name, s in scores.items()}
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": str(packaged)}]
    want = sum(
        p.weight * (np.asarray(scores[p.name]) - p.range.low) / (p.range.high - p.range.low) for p in recipe.parts
    )
    np.testing.assert_allclose(mix_of_parts(runs, "wmt"), want)
    assert mix_of_parts({**runs, "sescore@wmt": []}, "wmt") is None  # a failed part: no check, not a wrong one
    assert mix_of_parts({**runs, f"{MIX}@wmt": []}, "wmt") is None

    # the check follows the file the mix's run names, not a path of its own
    other = json.loads(packaged.read_text())
    for part, weight in zip(other["parts"], (1.0, 0.0, 0.0)):
        part["weight"] = weight
    (tmp_path / "other.json").write_text(json.dumps(other))
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": str(tmp_path / "other.json")}]
    menli_part = recipe.parts[0]
    np.testing.assert_allclose(
        mix_of_parts(runs, "wmt"),
        (np.asarray(scores["menli"]) - menli_part.range.low) / (menli_part.range.high - menli_part.range.low),
    )
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": None}]
    with pytest.raises(SystemExit, match="found no packaged recipe"):
        mix_of_parts(runs, "wmt")


def test_combiner_ablation_runs_end_to_end_on_a_tiny_mix_and_a_rerun_reads_its_score_cache(tiny, tmp_path, monkeypatch):
    """The whole path of bench/ablate_menli_combiner.py (metrics by name, reference-only scores in the shared score
    cache, ranges, choice, report half, result files) on a two-set mix of six items, then again from the cache."""
    import sys

    import bench.ablate_menli_combiner as combiner
    import bench.harness as harness

    refs = [
        "the cat sat on the mat",
        "a dog ran in the park",
        "rain fell all day long",
        "she read a good book",
        "they built a small house",
        "the train left at noon",
    ]
    rows = [
        {
            "item_id": str(item),
            "system": system,
            "src": "",
            "refs": [ref],
            "hyp": " ".join(ref.split()[:keep]) + (" x" if system == "bad" else ""),
            "scores": {"q": float(keep)},
        }
        for item, ref in enumerate(refs * 2)
        for system, keep in (("good", 6), ("mid", 4), ("bad", 1))
    ]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "mix.yaml").write_text("split_seed: 0\nsets:\n  - {name: one, path: a.jsonl, human: q}\n")
    monkeypatch.setenv("NLGMETRICS_DATA", str(tmp_path))
    monkeypatch.setattr(harness, "RESULTS", tmp_path / "results")
    argv = [
        "ablate_menli_combiner.py",
        "--mix",
        str(tmp_path / "mix.yaml"),
        "--cache",
        str(tmp_path / "cache"),
        "--adversarial",
        "",
        "--partners",
        "bertscore,chrf",
        "--nli-model",
        str(tiny["nli"]),
        "--all-items-set",
        "",
        "--bootstrap",
        "10",
        "--name",
        "smoke",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    combiner.main()
    first = json.loads((tmp_path / "results" / "smoke.json").read_text())
    assert first["chosen"]["partner"] in ("bertscore", "chrf") and first["report"][0]["variant"] == "menli"
    assert "# MENLI's combiner partner" in (tmp_path / "results" / "smoke.md").read_text()
    stored = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".costs.json"))
    assert len(stored) == 2 * 3 and all(name.startswith("refonly-a-") for name in stored)  # halves x metrics

    def no_scoring(*args, **kwargs):
        raise AssertionError("a rerun must read every score from the cache")

    monkeypatch.setattr("nlgmetrics.metaeval.rows.score_rows", no_scoring)
    combiner.main()
    again = json.loads((tmp_path / "results" / "smoke.json").read_text())
    assert again["select_grid"] == first["select_grid"] and again["ranges"] == first["ranges"]
