"""Blind-spot protocol with toy metrics whose blind spots are known by construction."""
from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from perturb import noise_ratio
from stress import markdown_table, noise_test, run_blindspot, strictly_decreasing, write_report
from stress.blindspot import score_once

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
    return [sum((Counter(_words(h)) & Counter(_words(r))).values()) / max(1, len(_words(h)))
            for h, r in zip(hyps, refs)]


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
    from modelroles import load_spacy

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
    result = run_blindspot(
        metrics, PARAGRAPHS, REFERENCES,
        tests=["truncation", "token_drop", "local_swap", "sentence_switching", "copy_source"],
        levels={"truncation": [0.2, 0.4], "token_drop": [0.1, 0.3], "sentence_switching": [1]}, seeds=(1, 2, 3),
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
    small = {**result, "tests": {"truncation": result["tests"]["truncation"],
                                 "copy_source": result["tests"]["copy_source"]}}
    written = write_report(small, tmp_path)
    assert written["plot:truncation"].stat().st_size > 1000 and "plot:copy_source" not in written
    assert json.loads(written["json"].read_text())["tests"]["truncation"]["levels"] == [0.0, 0.2, 0.4]


def test_same_seeds_same_report_and_batch_independent_noise(nlp):
    kwargs = dict(tests=["token_drop"], seeds=(7, 8), nlp=nlp)
    a = run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, **kwargs)
    b = run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, **kwargs)
    assert a == b
    whole = noise_test("token_drop", PARAGRAPHS, [0.3], (7,), [{}] * 6, {})
    part = noise_test("token_drop", PARAGRAPHS[:2], [0.3], (7,), [{}] * 2, {})
    assert whole.texts[0][0][:2] == part.texts[0][0]
    expected = np.mean([noise_ratio(h, t) for h, t in zip(PARAGRAPHS, whole.texts[0][0])])
    assert whole.noise[0][0] == pytest.approx(expected)


def test_samples_are_kept_only_where_every_level_applies(nlp):
    hyps = ["One sentence only here.", "First sentence. Second sentence. Third one.",
            "A is here. B is there. C is near. D is far."]
    result = run_blindspot({"f1": unigram_f1}, hyps, hyps, tests=["sentence_switching"], seeds=(1, 2), nlp=nlp,
                           levels={"sentence_switching": [1, 2]})
    test = result["tests"]["sentence_switching"]
    assert test["applicable"] and test["n_applied"] == 1
    assert test["skipped"] == {"needs two sentences that may move, has 1": 1,
                               "2 switch(es) need 4 candidates forming disjoint pairs": 1}


def test_levels_giving_identical_texts_are_dropped_with_a_warning(nlp):
    hyps = ["She went to the office today.", "He walked home after the long game."]
    result = run_blindspot({"f1": unigram_f1}, hyps, hyps, tests=["middle_swap"], seeds=(1, 2), nlp=nlp)
    test = result["tests"]["middle_swap"]
    assert test["levels"] == [0.0, 0.5] and "dropped" in test["warnings"][0]


def test_bad_input_is_rejected(nlp):
    with pytest.raises(ValueError, match="references"):
        run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES[:2], tests=["truncation"])
    with pytest.raises(ValueError, match="levels"):
        run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["truncation"], levels={"truncation": [0]})
    with pytest.raises(ValueError, match="not among the tests"):
        run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["truncation"], levels={"negation": [1]})
    with pytest.raises(ValueError, match="returned"):
        score_once({"bad": lambda h, r, s: [0.0]}, ["a", "b"], ["a", "b"], None)
    with pytest.raises(ValueError, match="masked LM"):
        run_blindspot({"f1": unigram_f1}, PARAGRAPHS, REFERENCES, tests=["bert_diverge"])


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
