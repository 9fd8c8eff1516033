"""Blind-spot protocol with toy metrics whose blind spots are known by construction."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import partial

import numpy as np
import pytest

from nlgmetrics.perturb import noise_ratio
from nlgmetrics.stress import markdown_table, noise_test, run_blindspot, strictly_decreasing, write_report
from nlgmetrics.stress.blindspot import score_once

# The toy sets have 3-6 samples; the default minimum (10) would leave every test unjudged.
run_judged = partial(run_blindspot, min_applied=1)

PARAGRAPHS = [
    "The council met on Monday. It approved the new budget for the schools. Teachers welcomed the decision.",
    "A storm hit the coast last night. Many trees fell on the roads. The police closed two bridges.",
    "She opened a small bakery in the village. Her bread sold out every morning. Soon she hired two helpers.",
    "The team trained hard all winter. They won the first game of the season. The coach praised the players.",
    "Scientists found a new species of frog. It lives high in the mountains. The frog is bright green.",
    "The museum reopened after a long repair. Visitors queued outside the doors. The new hall shows old maps.",
]
REFERENCES = [p.replace("The ", "the ", 1) for p in PARAGRAPHS]  # near-copies: every metric starts high


def _words(text):
    return re.findall(r"\w+", text.lower())


def unigram_f1(hyps, refs, srcs=None):
    """Bag-of-words F1: blind to word order by construction."""
    scores = []
    for h, r in zip(hyps, refs):
        ch, cr = Counter(_words(h)), Counter(_words(r))
        overlap = sum((ch & cr).values())
        if overlap == 0:
            scores.append(0.0)
            continue
        p, rc = overlap / sum(ch.values()), overlap / sum(cr.values())
        scores.append(2 * p * rc / (p + rc))
    return scores


def unigram_precision(hyps, refs, srcs=None):
    """Share of hypothesis words found in the reference: blind to anything removed."""
    return [
        sum((Counter(_words(h)) & Counter(_words(r))).values()) / max(1, len(_words(h))) for h, r in zip(hyps, refs)
    ]


def bigram_f1(hyps, refs, srcs=None):
    """Bigram F1: sees word order."""

    def grams(t):
        w = _words(t)
        return Counter(zip(w, w[1:]))

    scores = []
    for h, r in zip(hyps, refs):
        gh, gr = grams(h), grams(r)
        overlap = sum((gh & gr).values())
        scores.append(0.0 if overlap == 0 else 2 * overlap / (sum(gh.values()) + sum(gr.values())))
    return scores


@pytest.fixture(scope="module")
def nlp():
    from nlgmetrics.modelroles import load_spacy

    return load_spacy("packaged:en_core_web_sm")


@pytest.fixture(scope="module")
def report(nlp):
    calls = Counter()

    def counted(metric):
        def wrapped(hyps, refs, srcs):
            calls[metric.__name__] += 1
            return metric(hyps, refs, srcs)

        return wrapped

    metrics = {"f1": counted(unigram_f1), "precision": counted(unigram_precision), "bigram": counted(bigram_f1)}
    result = run_judged(
        metrics,
        PARAGRAPHS,
        REFERENCES,
        tests=["truncation", "token_drop", "local_swap", "sentence_switching", "copy_source"],
        levels={"truncation": [0.2, 0.4], "token_drop": [0.1, 0.3], "sentence_switching": [1]},
        seeds=(1, 2, 3),
        nlp=nlp,
    )
    return result, calls


def test_one_batched_call_per_metric(report):
    _, calls = report
    assert calls == {"unigram_f1": 1, "unigram_precision": 1, "bigram_f1": 1}


def test_known_blind_spots_pass_and_fail_as_constructed(report):
    result, _ = report
    tests = result["tests"]
    assert tests["truncation"]["passed"] == {"f1": True, "precision": False, "bigram": True}
    assert tests["token_drop"]["passed"]["f1"] and not tests["token_drop"]["passed"]["precision"]
    for order_test in ("local_swap", "sentence_switching"):
        assert tests[order_test]["passed"]["f1"] is False  # unchanged bag of words: equal, not lower
        assert tests[order_test]["passed"]["bigram"] is True
    assert result["summary"]["bigram"]["failed"] == 0


def test_report_shape_and_noise_ratios(report):
    result, _ = report
    json.dumps(result)  # JSON-able
    truncation = result["tests"]["truncation"]
    assert truncation["levels"] == [0.0, 0.2, 0.4] and truncation["n_applied"] == len(PARAGRAPHS)
    assert truncation["noise_ratio"][0] == 0.0 and 0.15 < truncation["noise_ratio"][1] < truncation["noise_ratio"][2]
    curve = truncation["metrics"]["f1"]
    assert len(curve["mean"]) == len(curve["std"]) == 3 and curve["std"][0] == 0.0
    assert curve["mean"][0] == pytest.approx(np.mean(unigram_f1(PARAGRAPHS, REFERENCES)))
    swap = result["tests"]["local_swap"]
    assert swap["halved_noise_ratio"] and swap["noise_ratio"][1] < 0.1


def test_missing_sources_make_a_test_not_applicable(report):
    result, _ = report
    copy = result["tests"]["copy_source"]
    assert copy["applicable"] is False and copy["n_applied"] == 0 and "source" in copy["reason"]
    assert copy["skipped"] == {"sample has no source": len(PARAGRAPHS)}
    assert result["summary"]["f1"]["not_applicable"] == 1


def test_markdown_and_plots(report, tmp_path):
    result, _ = report
    table = markdown_table(result)
    row = next(line for line in table.splitlines() if line.startswith("| truncation "))
    assert row.endswith("| pass | **FAIL** | pass |")
    assert "| copy_source | targeted | 0/6 | - | n/a | n/a | n/a |" in table
    small = {
        **result,
        "tests": {"truncation": result["tests"]["truncation"], "copy_source": result["tests"]["copy_source"]},
    }
    written = write_report(small, tmp_path)
    assert written["plot:truncation"].stat().st_size > 1000 and "plot:copy_source" not in written
    assert json.loads(written["json"].read_text())["tests"]["truncation"]["levels"] == [0.0, 0.2, 0.4]


def test_same_seeds_same_report_and_batch_independent_noise(nlp):
    kwargs = dict(tests=["token_drop"], seeds=(7, 8), nlp=nlp)
    a = run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, **kwargs)
    b = run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, **kwargs)
    assert a == b
    whole = noise_test("token_drop", PARAGRAPHS, [0.3], (7,), [{}] * 6, {})
    part = noise_test("token_drop", PARAGRAPHS[:2], [0.3], (7,), [{}] * 2, {})
    assert whole.texts[0][0][:2] == part.texts[0][0]
    expected = np.mean([noise_ratio(h, t) for h, t in zip(PARAGRAPHS, whole.texts[0][0])])
    assert whole.noise[0][0] == pytest.approx(expected)


def test_samples_are_kept_only_where_every_level_applies(nlp):
    hyps = [
        "One sentence only here.",
        "First sentence. Second sentence. Third one.",
        "A is here. B is there. C is near. D is far.",
    ]
    result = run_judged(
        {"f1": unigram_f1},
        hyps,
        hyps,
        tests=["sentence_switching"],
        seeds=(1, 2),
        nlp=nlp,
        levels={"sentence_switching": [1, 2]},
    )
    test = result["tests"]["sentence_switching"]
    assert test["applicable"] and test["n_applied"] == 2  # two switches fit three sentences (a 3-cycle)
    assert test["skipped"] == {"needs two sentences that may move, has 1": 1}


def test_levels_giving_identical_texts_are_dropped_with_a_warning(nlp):
    hyps = ["She went to the office today.", "He walked home after the long game."]
    result = run_judged({"f1": unigram_f1}, hyps, hyps, tests=["middle_swap"], seeds=(1, 2), nlp=nlp)
    test = result["tests"]["middle_swap"]
    assert test["levels"] == [0.0, 0.5] and "dropped" in test["warnings"][0]


def test_bad_input_is_rejected(nlp):
    with pytest.raises(ValueError, match="references"):
        run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES[:2], tests=["truncation"])
    with pytest.raises(ValueError, match="levels"):
        run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["truncation"], levels={"truncation": [0]})
    with pytest.raises(ValueError, match="not among the tests"):
        run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["truncation"], levels={"negation": [1]})
    with pytest.raises(ValueError, match="returned"):
        score_once({"bad": lambda h, r, s: [0.0]}, ["a", "b"], ["a", "b"], None)
    with pytest.raises(ValueError, match="masked LM"):
        run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["bert_diverge"])


def test_pass_rule_is_strict():
    assert strictly_decreasing([1.0, 0.9, 0.5])
    assert not strictly_decreasing([1.0, 1.0, 0.5])
    assert not strictly_decreasing([1.0, 0.5, 0.6])
    assert not strictly_decreasing([1.0, float("nan")])


def test_scoring_deduplicates_rows():
    seen = []

    def metric(h, r, s):
        seen.append(len(h))
        return [float(len(x)) for x in h]

    scores = score_once({"len": metric}, ["a", "bb", "a"], ["x", "x", "x"], ["s", "s", "s"])
    assert seen == [2] and list(scores["len"]) == [1.0, 2.0, 1.0]


# ---------------------------------------------------------------- regressions of the THumB CNN/DM report

SUMMARIES = [  # CNN/DM-like: two to three sentences, as the paper's gold summaries ("typically three")
    "Donald Sterling lost his NBA team. His former companion must pay back $2.6 million.",
    "A storm hit the coast. Many trees fell on the roads. The police closed two bridges.",
    "The museum reopened after a long repair. Visitors queued outside. The new hall shows old maps.",
]


def test_sentence_switching_applies_to_three_sentence_summaries(nlp):
    """The THumB report applied sentence switching to 2/100 summaries: two switches demanded four sentences
    (disjoint pairs) and the run pinned the last sentence. Two switches now need three sentences."""
    result = run_judged(
        {"bigram": bigram_f1}, SUMMARIES, SUMMARIES, tests=["sentence_switching"], seeds=(1, 2, 3), nlp=nlp
    )
    test = result["tests"]["sentence_switching"]
    assert test["levels"] == [0.0, 1.0, 2.0] and test["n_applied"] == 2
    assert test["skipped"] == {"2 switch(es) need 3 candidates, has 2": 1}
    assert 0 < test["noise_ratio"][1] < test["noise_ratio"][2]


def test_multi_reference_rows_reach_the_metric_as_lists(nlp):
    seen = []

    def best_of(hyps, refs, srcs):
        seen.append(refs)
        return [max(bigram_f1([h] * len(r), list(r))) for h, r in zip(hyps, refs)]

    refs = [[p, p.upper()] for p in PARAGRAPHS]
    result = run_judged(
        {"best": best_of},
        PARAGRAPHS,
        refs,
        tests=["truncation"],
        seeds=(1,),
        nlp=nlp,
        levels={"truncation": [0.2, 0.4]},
    )
    assert len(seen) == 1 and all(isinstance(r, list) and len(r) == 2 for r in seen[0])
    assert result["tests"]["truncation"]["passed"]["best"]
    scores = score_once(
        {"n": lambda h, r, s: [float(len(x)) for x in r]}, ["a", "a", "a"], [["x", "y"], ["x", "y"], ["x"]], None
    )
    assert list(scores["n"]) == [2.0, 2.0, 1.0]
    with pytest.raises(TypeError, match="non-empty list"):
        run_judged({"best": best_of}, PARAGRAPHS, [[]] * len(PARAGRAPHS), tests=["truncation"])


def test_self_evaluation_bias_is_listed_as_run_separately(report, nlp):
    result, _ = report
    assert "self_evaluation_bias" in result["unavailable"]
    assert "nlgmetrics-evaluate self-bias" in result["unavailable"]["self_evaluation_bias"]["reason"]
    table = markdown_table(result)
    assert "| self_evaluation_bias | targeted | - | - | separate | separate | separate |" in table
    assert "Run separately: `self_evaluation_bias`" in table
    assert result["summary"]["f1"]["not_applicable"] == 1  # tests run elsewhere are not counted as run here
    with pytest.raises(ValueError, match="not part of the perturbation suite"):
        run_judged({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["self_evaluation_bias"], nlp=nlp)


def test_curve_table_shows_how_a_metric_failed(report):
    from nlgmetrics.stress import curve_table

    result, _ = report
    table = curve_table(result, "truncation", ["precision", "f1"], digits=3)
    lines = table.splitlines()
    assert lines[0].startswith("| metric | 0 (noise 0.000) | 0.2 (noise ") and lines[0].endswith("| passed |")
    curve = result["tests"]["truncation"]["metrics"]["precision"]["mean"]
    assert lines[2] == "| precision | " + " | ".join(f"{m:.3f}" for m in curve) + " | **FAIL** |"
    with pytest.raises(ValueError, match="not applicable"):
        curve_table(result, "copy_source")
    with pytest.raises(ValueError, match="no curve for nope"):
        curve_table(result, "truncation", ["nope"])


def test_tests_on_too_few_samples_are_shown_but_not_judged(report, nlp):
    from nlgmetrics.stress import DEFAULT_MIN_APPLIED, judge

    result, _ = report
    switching = result["tests"]["sentence_switching"]
    n = len(PARAGRAPHS)
    applicable = [name for name, test in result["tests"].items() if test["applicable"]]
    assert switching["n_applied"] == n and len(applicable) == 4

    def verdicts(r):
        return {key: value for key, value in r.items() if key != "protocol"}

    assert result["protocol"]["min_applied"] == 1 and judge(result, n)["protocol"]["min_applied"] == n
    assert verdicts(judge(result, min_applied=n)) == verdicts(result)  # every test reaches the minimum exactly
    strict = judge(result, min_applied=n + 1)
    assert strict["tests"]["sentence_switching"]["judged"] is False
    assert strict["tests"]["sentence_switching"]["passed"] == {"f1": None, "precision": None, "bigram": None}
    assert f"applies to {n} sample(s), fewer than {n + 1}" in strict["tests"]["sentence_switching"]["reason"]
    assert strict["tests"]["sentence_switching"]["metrics"]["f1"]["mean"] == switching["metrics"]["f1"]["mean"]
    assert strict["tests"]["copy_source"]["judged"] is False and "source" in strict["tests"]["copy_source"]["reason"]
    for metric in ("f1", "precision", "bigram"):
        assert result["summary"][metric]["too_few"] == 0
        assert strict["summary"][metric] == {"passed": 0, "failed": 0, "too_few": 4, "not_applicable": 1}
    assert result["tests"]["sentence_switching"]["judged"] is True  # judge returns a new report
    assert judge(strict, min_applied=1) == result  # verdicts come from the stored curves alone
    table = markdown_table(strict)
    row = next(line for line in table.splitlines() if line.startswith("| sentence_switching | consistency | 6/6 | "))
    assert row.endswith("| too few | too few | too few |") and "Too few: applied to fewer than 7 samples" in table
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="min_applied"):
            judge(result, min_applied=bad)
    default = run_blindspot(
        {"f1": unigram_f1},
        PARAGRAPHS,
        REFERENCES,
        tests=["truncation"],
        seeds=(1,),
        nlp=nlp,
        levels={"truncation": [0.2]},
    )
    assert DEFAULT_MIN_APPLIED > len(PARAGRAPHS) and default["tests"]["truncation"]["passed"] == {"f1": None}
