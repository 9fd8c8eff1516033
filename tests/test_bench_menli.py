"""bench/ablate_menli_bertscore_weight.py (MENLI + BERTScore: the weight chosen on one half with fixed ranges, the
recipe of the packaged nli-mpnet+bertscore-minilm ranges), bench/fit_menli_ranges.py's file names and
bench/bench_menli_mix.py's check of the mix against its parts."""

import json

import numpy as np
import pytest

from bench.ablate_menli_bertscore_weight import choose, combined, fit_ranges, mean_tau, reference_scores


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


def test_pair_probabilities_keep_directions_and_references_apart(tmp_path):
    from bench.ablate_menli_bertscore_weight import pair_probabilities, strategy_scores

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
    from bench.ablate_menli_bertscore_weight import WEIGHTS, meets_goal, robust_choice

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
    assert meets_goal(0.6999999999999998, 0.70) and not meets_goal(0.6999, 0.70)  # 0.70 to rounding counts


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
