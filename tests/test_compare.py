"""``evaluate.py compare``: paired bootstrap over systems, corpus BLEU/chrF as sacrebleu computes it, CLI errors."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import sacrebleu
from cli_helpers import run

from nlgmetrics.baselines import SacreBleuScorer
from nlgmetrics.metaeval import bootstrap_p_value, paired_bootstrap_systems
from nlgmetrics.metaeval import compare as compare_module

REFS = [
    "the cat sat on the mat",
    "a dog runs in the park",
    "she sings a song today",
    "the weather is nice this morning",
    "we will meet at the station at noon",
    "he bought three apples and a pear",
    "the train was late again",
    "children play football after school",
    "my sister reads a book every night",
    "the shop closes at six on sundays",
    "they painted the kitchen walls blue",
    "an old man feeds the birds",
]
GOOD = [
    "the cat sat on the mat",
    "a dog runs in a park",
    "she sings a song today",
    "the weather is nice this morning",
    "we meet at the station at noon",
    "he bought three apples and one pear",
    "the train was late again",
    "children play football after school",
    "my sister reads a book each night",
    "the shop closes at six on sunday",
    "they painted the kitchen walls blue",
    "an old man feeds birds",
]
BAD = [
    "cat on mat",
    "dog park run",
    "song she",
    "weather nice",
    "meet station",
    "apples bought",
    "train late",
    "football children",
    "book sister",
    "shop six",
    "walls blue painted",
    "man birds",
]
OTHER_REFS = [  # a second reference set, for the multi-reference corpus scores
    "a cat was sitting on the mat",
    "the dog is running in the park",
    "she is singing a song today",
    "it is nice weather this morning",
    "we meet at noon at the station",
    "he bought a pear and three apples",
    "once again the train was late",
    "after school the children play football",
    "my sister reads every night",
    "on sundays the shop closes at six",
    "they painted the walls of the kitchen blue",
    "an old man is feeding birds",
]


def _noisy(offset: float, n: int = 200, seed: int = 1) -> tuple[list[float], list[float]]:
    """Segment scores of two systems on the same segments: shared difficulty, B = A - offset + small noise."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.5, 0.2, n)
    a = difficulty + rng.normal(0, 0.05, n)
    b = difficulty - offset + rng.normal(0, 0.05, n)
    return a.tolist(), b.tolist()


# --- the pure functions ------------------------------------------------------------------------------------


def test_a_clearly_better_system_is_called_better_with_an_interval_above_zero():
    a, b = _noisy(0.05)
    result = paired_bootstrap_systems({"A": a, "B": b}, resamples=500, seed=0)
    (pair,) = result["pairs"]
    assert pair["difference"] == pytest.approx(np.mean(a) - np.mean(b))
    assert pair["ci"][0] > 0 and pair["verdict"] == "A better" and pair["p_value"] < 0.05
    assert pair["wins"] > pair["losses"] and pair["wins"] + pair["ties"] + pair["losses"] == 200
    # the other order names the same winner, with the difference and its interval below zero
    (flipped,) = paired_bootstrap_systems({"B": b, "A": a}, resamples=500, seed=0)["pairs"]
    assert flipped["verdict"] == "A better" and flipped["ci"][1] < 0
    assert flipped["difference"] == pytest.approx(-pair["difference"])


def test_a_difference_inside_the_noise_is_no_significant_difference():
    a, b = _noisy(0.0, n=30)
    (pair,) = paired_bootstrap_systems({"A": a, "B": b}, resamples=500, seed=0)["pairs"]
    assert pair["ci"][0] < 0 < pair["ci"][1]
    assert pair["verdict"] == "no significant difference" and pair["p_value"] > 0.05


def test_identical_systems_differ_by_exactly_zero():
    a, _ = _noisy(0.0)
    result = paired_bootstrap_systems({"A": a, "copy": list(a)}, resamples=300, seed=3)
    (pair,) = result["pairs"]
    assert pair["difference"] == 0.0 and pair["ci"] == [0.0, 0.0] and pair["p_value"] == 1.0
    assert (pair["wins"], pair["ties"], pair["losses"]) == (0, 200, 0)
    assert pair["verdict"] == "no significant difference"
    assert result["systems"][0]["ci"] == result["systems"][1]["ci"]
    assert result["systems"][0]["ci"][0] < result["systems"][0]["score"] < result["systems"][0]["ci"][1]


def test_same_seed_same_result_and_another_seed_other_intervals():
    a, b = _noisy(0.02)
    first = paired_bootstrap_systems({"A": a, "B": b}, resamples=200, seed=7)
    assert paired_bootstrap_systems({"A": a, "B": b}, resamples=200, seed=7) == first
    other = paired_bootstrap_systems({"A": a, "B": b}, resamples=200, seed=8)
    assert other["pairs"][0]["ci"] != first["pairs"][0]["ci"]
    assert other["systems"][0]["ci"] != first["systems"][0]["ci"]
    assert other["pairs"][0]["difference"] == first["pairs"][0]["difference"]  # the full-set value is not random


def test_resampled_means_are_those_of_an_explicit_index_draw(monkeypatch):
    """The count-matrix shortcut and the drawing in blocks give the resamples of ``rng.integers(0, n, (B, n))``."""
    a, b = _noisy(0.01, n=37)
    whole = paired_bootstrap_systems({"A": a, "B": b}, resamples=101, seed=5)
    picks = np.random.default_rng(5).integers(0, 37, size=(101, 37))
    diff = np.asarray(a)[picks].mean(axis=1) - np.asarray(b)[picks].mean(axis=1)
    expected = [np.quantile(diff, 0.025), np.quantile(diff, 0.975)]
    assert whole["pairs"][0]["ci"] == pytest.approx(expected, abs=1e-12)
    assert whole["systems"][0]["bootstrap_mean"] == pytest.approx(np.asarray(a)[picks].mean(), abs=1e-12)
    monkeypatch.setattr(compare_module, "_CELLS_PER_CHUNK", 37 * 3)  # blocks of 3 resamples, the last one short
    blocked = paired_bootstrap_systems({"A": a, "B": b}, resamples=101, seed=5)
    assert blocked["pairs"][0]["ci"] == pytest.approx(whole["pairs"][0]["ci"], abs=1e-12)


@pytest.mark.parametrize("correction", ["none", "bonferroni"])
def test_a_significant_verdict_always_comes_with_an_interval_that_excludes_zero(correction):
    """The p-value and the interval are read off the same draws; a verdict the interval contradicts would be a bug."""
    verdicts = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        shared = rng.normal(0, 1, 40)
        systems = {name: shared + rng.normal(shift, 0.3, 40) for name, shift in (("A", 0), ("B", 0.1), ("C", 0.2))}
        for pair in paired_bootstrap_systems(systems, resamples=199, seed=seed, correction=correction)["pairs"]:
            if pair["verdict"] != "no significant difference":
                verdicts += 1
                assert pair["ci"][0] > 0 if pair["difference"] > 0 else pair["ci"][1] < 0
    assert 10 < verdicts < 110  # both outcomes occur, so the loop tested something


def test_p_value_counts_resamples_without_the_observed_sign():
    draws = np.array([0.5] * 97 + [0.0, -0.1, -0.2])
    assert bootstrap_p_value(0.4, draws) == pytest.approx(2 * (3 + 1) / 101)  # zero counts against
    assert bootstrap_p_value(-0.4, -draws) == pytest.approx(2 * (3 + 1) / 101)
    assert bootstrap_p_value(0.4, np.full(100, 0.3)) == pytest.approx(2 / 101)  # never 0 with finite resamples
    assert bootstrap_p_value(0.0, draws) == 1.0
    assert bootstrap_p_value(0.1, np.array([1.0, -1.0] * 50)) == 1.0  # capped


def test_wins_ties_and_losses_count_segments():
    (pair,) = paired_bootstrap_systems({"A": [3, 2, 2, 0, 5], "B": [1, 2, 4, 0, 1]}, resamples=50)["pairs"]
    assert (pair["wins"], pair["ties"], pair["losses"]) == (2, 2, 1)


def test_bonferroni_multiplies_p_values_and_widens_difference_intervals():
    a, b = _noisy(0.01, n=60)
    c = [x - 0.2 for x in a]
    plain = paired_bootstrap_systems({"A": a, "B": b, "C": c}, resamples=400, seed=2)
    corrected = paired_bootstrap_systems({"A": a, "B": b, "C": c}, resamples=400, seed=2, correction="bonferroni")
    assert "not corrected for the 3 comparisons" in plain["settings"]["multiple_comparisons"]
    assert corrected["settings"]["difference_ci_level"] == pytest.approx(1 - 0.05 / 3)
    for before, after in zip(plain["pairs"], corrected["pairs"]):
        assert after["p_value"] == before["p_value"]
        assert after["p_value_bonferroni"] == pytest.approx(min(1.0, 3 * before["p_value"]))
        assert after["ci"][0] <= before["ci"][0] and after["ci"][1] >= before["ci"][1]
        assert (after["verdict"] != "no significant difference") == (after["p_value_bonferroni"] < 0.05)
    assert [p["verdict"] for p in corrected["pairs"]][1:] == ["A better", "B better"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"segment_scores": {"A": [1.0, 2.0]}}, "at least 2 systems"),
        ({"segment_scores": {"A": [1.0, 2.0], "B": [1.0]}}, "same non-empty set"),
        ({"segment_scores": {"A": [1.0], "B": [2.0]}, "resamples": 0}, "resamples"),
        ({"segment_scores": {"A": [1.0], "B": [2.0]}, "alpha": 1.5}, "alpha"),
        ({"segment_scores": {"A": [1.0], "B": [2.0]}, "correction": "holm"}, "correction"),
        ({"segment_scores": {"A": [1.0, 2.0], "B": [2.0, float("nan")]}}, "system B: segment 1 has the score nan"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_bootstrap_systems(**kwargs)


# --- corpus BLEU / chrF ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, metric", [("bleu", sacrebleu.BLEU), ("chrf", sacrebleu.CHRF)])
def test_corpus_score_is_sacrebleus_corpus_score_with_one_and_two_references(name, metric):
    for streams in ([REFS], [REFS, OTHER_REFS]):
        statistic, signature = SacreBleuScorer(name).corpus_statistic({"good": GOOD, "bad": BAD}, streams)
        segment = {s: [0.0] * len(REFS) for s in ("good", "bad")}
        result = paired_bootstrap_systems(segment, resamples=10, corpus_statistic=statistic)
        scores = {s["name"]: s["score"] for s in result["systems"]}
        assert scores["good"] == pytest.approx(metric().corpus_score(GOOD, streams).score, abs=1e-9)
        assert scores["bad"] == pytest.approx(metric().corpus_score(BAD, streams).score, abs=1e-9)
        assert f"nrefs:{len(streams)}" in signature and result["settings"]["system_score"].startswith("corpus")
    assert scores["good"] > scores["bad"] + 20


def test_bleu_is_not_the_mean_of_sentence_bleu():
    """The reason corpus statistics are needed at all: the two system scores differ on this set."""
    statistic, _ = SacreBleuScorer("bleu").corpus_statistic({"good": GOOD, "bad": BAD}, [REFS])
    sentence = SacreBleuScorer("bleu").score(GOOD, REFS)
    result = paired_bootstrap_systems({"good": sentence, "bad": sentence}, resamples=10, corpus_statistic=statistic)
    assert abs(result["systems"][0]["score"] - np.mean(sentence)) > 1.0


def test_bleu_bootstrap_matches_sacrebleus_own_resampling(monkeypatch):
    """Same seed, same draws: sacrebleu's bootstrap mean to float precision, its 95% interval to an order statistic.

    sacrebleu reports mean +- half the distance between the 25th and 975th of 1000 sorted resampled scores; this
    toolkit reports the 2.5% and 97.5% quantiles (linear interpolation), so the bounds may differ by a neighbour.
    """
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    mixed = [g if i % 3 else b for i, (g, b) in enumerate(zip(GOOD, BAD))]
    theirs = sacrebleu.BLEU().corpus_score(mixed, [REFS], n_bootstrap=1000)
    statistic, _ = SacreBleuScorer("bleu").corpus_statistic({"mixed": mixed, "good": GOOD}, [REFS])
    segment = {s: [0.0] * len(REFS) for s in ("mixed", "good")}
    ours = paired_bootstrap_systems(segment, resamples=1000, seed=12345, corpus_statistic=statistic)["systems"][0]
    assert ours["score"] == pytest.approx(theirs.score, abs=1e-9)
    assert ours["bootstrap_mean"] == pytest.approx(theirs._mean, abs=1e-4)  # float32 sums there; another seed: 0.4 off
    low, high = ours["ci"]
    assert (high - low) / 2 == pytest.approx(theirs._ci, abs=0.05)  # another seed: 0.17 off
    assert theirs._ci > 2  # a real interval, so the comparison above could fail


def test_sacrebleus_paired_test_agrees_on_a_clear_difference(monkeypatch):
    """sacrebleu's paired-bs p-value is another statistic (see bootstrap_p_value); both must reject here."""
    from sacrebleu.significance import PairedTest

    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    mixed = [g if i % 3 else b for i, (g, b) in enumerate(zip(GOOD, BAD))]
    _, scores = PairedTest([("good", GOOD), ("mixed", mixed)], {"BLEU": sacrebleu.BLEU()}, [REFS], "bs", 1000)()
    theirs = scores["BLEU"][1]
    statistic, _ = SacreBleuScorer("bleu").corpus_statistic({"good": GOOD, "mixed": mixed}, [REFS])
    segment = {s: [0.0] * len(REFS) for s in ("good", "mixed")}
    (pair,) = paired_bootstrap_systems(segment, resamples=1000, seed=12345, corpus_statistic=statistic)["pairs"]
    assert theirs.p_value < 0.05 and pair["p_value"] < 0.05 and pair["verdict"] == "good better"
    assert pair["difference"] == pytest.approx(scores["BLEU"][0].score - theirs.score, abs=1e-9)


# --- the command -------------------------------------------------------------------------------------------


@pytest.fixture()
def files(tmp_path):
    paths = {}
    for name, lines in {"ref": REFS, "good": GOOD, "bad": BAD, "other_ref": OTHER_REFS}.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "copy").mkdir()
    paths["copy"] = tmp_path / "copy" / "good.txt"
    paths["copy"].write_text("\n".join(GOOD) + "\n", encoding="utf-8")
    return paths


def test_compare_chrf_end_to_end(capsys, files, tmp_path):
    out, table = tmp_path / "result.json", tmp_path / "table.md"
    code, stdout, _ = run(
        capsys,
        "compare",
        "--metric",
        "chrf",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        str(files["copy"]),
        "--refs",
        str(files["ref"]),
        str(files["other_ref"]),
        "--bootstrap",
        "300",
        "--json",
        str(out),
        "--markdown",
        str(table),
        "--quiet",
    )
    assert code == 0
    result = json.loads(stdout[-1])
    assert [s["name"] for s in result["systems"]] == ["good-1", "bad", "good-2"]  # clashing stems made unique
    assert result["systems"][0]["score"] == pytest.approx(
        sacrebleu.CHRF().corpus_score(GOOD, [REFS, OTHER_REFS]).score, abs=1e-9
    )
    verdicts = {(p["a"], p["b"]): p["verdict"] for p in result["pairs"]}
    assert verdicts == {
        ("good-1", "bad"): "good-1 better",
        ("good-1", "good-2"): "no significant difference",
        ("bad", "good-2"): "good-2 better",
    }
    assert result["pairs"][1]["difference"] == 0.0 and result["pairs"][1]["ties"] == len(REFS)
    assert result["signature"].startswith("chrf|corpus|nrefs:2|") and "|paired-bs:300|seed:0|" in result["signature"]
    assert result["segment_signature"].startswith("chrf|nrefs:var")
    assert "not corrected for the 3 comparisons" in result["settings"]["multiple_comparisons"]
    assert json.loads(out.read_text()) == {k: v for k, v in result.items() if k != "truncated"}
    text = table.read_text()
    assert "| good-1 | bad |" in text and "good-2 better" in text and "chrf|corpus" in text


def test_compare_bleu_names_and_seed(capsys, files):
    common = [
        "compare",
        "--metric",
        "bleu",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        "--refs",
        str(files["ref"]),
        "--names",
        "base,small",
        "--bootstrap",
        "200",
        "--quiet",
    ]
    _, first, _ = run(capsys, *common, "--seed", "1")
    _, again, _ = run(capsys, *common, "--seed", "1")
    _, other, _ = run(capsys, *common, "--seed", "2")
    first, again, other = (json.loads(x[-1]) for x in (first, again, other))
    assert first == again and first["pairs"][0]["ci"] != other["pairs"][0]["ci"]
    assert [s["name"] for s in first["systems"]] == ["base", "small"]
    assert first["systems"][0]["score"] == pytest.approx(sacrebleu.BLEU().corpus_score(GOOD, [REFS]).score)
    assert first["pairs"][0]["verdict"] == "base better" and first["pairs"][0]["ci"][0] > 0


def test_all_systems_are_scored_in_one_call_with_shared_pairs_once(capsys, files, tmp_path, monkeypatch):
    module = tmp_path / "compare_counting_metric.py"
    module.write_text(
        "CALLS = []\n\ndef overlap(hyps, refs, srcs):\n    CALLS.append(len(hyps))\n"
        "    return [len(set(h.split()) & set(r[0].split())) / len(set(r[0].split())) "
        "for h, r in zip(hyps, refs)]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = run(
        capsys,
        "compare",
        "--metric",
        "py:compare_counting_metric:overlap",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        str(files["copy"]),
        "--refs",
        str(files["ref"]),
        "--bootstrap",
        "100",
        "--quiet",
    )
    assert code == 0
    calls = sys.modules["compare_counting_metric"].CALLS
    assert calls == [2 * len(REFS)]  # one call; the copy of 'good' is not scored again
    result = json.loads(stdout[-1])
    assert result["settings"]["system_score"] == "mean of segment scores"
    assert result["systems"][0]["score"] == result["systems"][2]["score"] > result["systems"][1]["score"]


def test_compare_a_model_metric_on_a_tiny_encoder(capsys, files, tiny):
    code, stdout, _ = run(
        capsys,
        "compare",
        "--metric",
        "bertscore",
        "--encoder",
        str(tiny["encoder"]),
        "--hyps",
        str(files["good"]),
        str(files["copy"]),
        "--refs",
        str(files["ref"]),
        "--bootstrap",
        "100",
        "--quiet",
    )
    assert code == 0
    result = json.loads(stdout[-1])
    (pair,) = result["pairs"]
    assert pair["difference"] == 0.0 and pair["verdict"] == "no significant difference"
    code, stdout, _ = run(
        capsys,
        "score",
        "--metric",
        "bertscore",
        "--encoder",
        str(tiny["encoder"]),
        "--hyps",
        str(files["good"]),
        "--refs",
        str(files["ref"]),
        "--quiet",
    )
    assert result["systems"][0]["score"] == pytest.approx(json.loads(stdout[-1])["system_score"], abs=1e-6)
    assert result["signature"].startswith("bertscore|encoder:")


def test_mismatched_line_counts_name_the_file_and_write_nothing(capsys, files, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("\n".join(GOOD[:5]) + "\n", encoding="utf-8")
    out = tmp_path / "result.json"
    code, stdout, stderr = run(
        capsys,
        "compare",
        "--metric",
        "chrf",
        "--hyps",
        str(files["good"]),
        str(short),
        "--refs",
        str(files["ref"]),
        "--json",
        str(out),
        "--quiet",
    )
    assert code == 1 and stdout == [] and len(stderr) == 1
    assert stderr[0] == f"error: system short {short}: 5 lines, but the references have {len(REFS)}"
    assert not out.exists()


def test_fewer_than_two_systems_is_an_error(capsys, files):
    code, stdout, stderr = run(
        capsys, "compare", "--metric", "chrf", "--hyps", str(files["good"]), "--refs", str(files["ref"]), "--quiet"
    )
    assert code == 1 and stdout == []
    assert stderr == ["error: compare needs at least 2 systems (--hyps A.txt B.txt ...), got 1"]


def test_bad_names_and_alpha_are_errors(capsys, files):
    base = [
        "compare",
        "--metric",
        "chrf",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        "--refs",
        str(files["ref"]),
        "--quiet",
    ]
    code, _, stderr = run(capsys, *base, "--names", "x,x")
    assert code == 1 and "--names must be unique" in stderr[-1]
    code, _, stderr = run(capsys, *base, "--names", "x,y,z")
    assert code == 1 and "3 name(s) for 2 --hyps files" in stderr[-1]
    code, _, stderr = run(capsys, *base, "--alpha", "0")
    assert code == 1 and "--alpha" in stderr[-1]


def test_too_few_resamples_for_any_verdict_warn(capsys, files):
    code, stdout, stderr = run(
        capsys,
        "compare",
        "--metric",
        "chrf",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        "--refs",
        str(files["ref"]),
        "--bootstrap",
        "20",
        "--quiet",
    )
    assert code == 0 and any("no p-value can fall below 0.05" in line for line in stderr)
    assert json.loads(stdout[-1])["pairs"][0]["verdict"] == "no significant difference"


def test_devices_shard_the_one_scoring_call(capsys, files, monkeypatch):
    """``--devices N`` reaches build_scorer: the single call goes to a ProcessScorer with N processes.

    The processes themselves are replaced here (spawning them costs seconds; tests/test_parallel.py checks that
    N processes give one process's scores bit for bit).
    """
    from nlgmetrics.parallel import ProcessScorer

    calls = []

    def fake_score(self, hyps, refs, srcs=None):
        calls.append((self.processes, len(hyps)))
        return SacreBleuScorer("chrf").score(hyps, refs)

    monkeypatch.setattr(ProcessScorer, "score", fake_score)
    argv = [
        "compare",
        "--metric",
        "chrf",
        "--hyps",
        str(files["good"]),
        str(files["bad"]),
        "--refs",
        str(files["ref"]),
        "--bootstrap",
        "100",
        "--quiet",
    ]
    code, stdout, _ = run(capsys, *argv, "--devices", "2")
    assert code == 0 and calls == [(2, 2 * len(REFS))]
    _, single, _ = run(capsys, *argv)
    assert json.loads(stdout[-1]) == json.loads(single[-1])
