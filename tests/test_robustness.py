"""MARS Table 4 robustness: the two attacks (perturb.attacks), the protocol (stress.robustness), the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nlgmetrics.perturb import NotApplicable, get_perturbation
from nlgmetrics.perturb.attacks import context_sentence, reorder, split_sentences
from nlgmetrics.stress.robustness import ATTACKS, make_attacks, markdown_table, run_robustness, summarize

STORY = "her fears were confirmed when her engine was smoking and the mechanic laughed at it ."
CONTEXT = "wendy was driving down the road . she heard her car making a noise . she pulled over !"


def word_overlap(hyps, refs, srcs):
    """Toy metric: share of reference bigrams found in the candidate (order-sensitive, higher = better)."""
    out = []
    for h, r in zip(hyps, refs):
        r = r[0] if isinstance(r, list) else r
        hb = set(zip(h.split(), h.split()[1:]))
        rb = list(zip(r.split(), r.split()[1:]))
        out.append(sum(b in hb for b in rb) / max(1, len(rb)))
    return out


# ---------------------------------------------------------------- reorder


def test_reorder_moves_half_of_the_tokens_and_keeps_the_bag_of_words():
    words = [f"w{i}" for i in range(40)]
    text = " ".join(words)
    for seed in range(20):
        out = reorder(text, np.random.default_rng(seed), 0.5).split()
        assert sorted(out) == sorted(words)
        assert sum(a != b for a, b in zip(out, words)) == 20  # exactly round(0.5 * 40) positions change


@pytest.mark.parametrize("n,share,moved", [(2, 0.5, 2), (3, 0.5, 2), (7, 0.5, 4), (10, 0.3, 3), (10, 1.0, 10)])
def test_reorder_share_is_rounded_with_at_least_two_tokens(n, share, moved):
    words = [f"t{i}" for i in range(n)]
    out = reorder(" ".join(words), np.random.default_rng(1), share).split()
    assert sum(a != b for a, b in zip(out, words)) == moved


def test_reorder_is_deterministic_per_seed_and_keeps_layout():
    text = "one two  three\nfour five six seven eight"
    a = reorder(text, np.random.default_rng(7), 0.5)
    assert a == reorder(text, np.random.default_rng(7), 0.5)
    assert any(reorder(text, np.random.default_rng(s), 0.5) != a for s in range(8))
    assert [len(line.split()) for line in a.split("\n")] == [3, 5] and "  " in a
    assert sorted(a.split()) == sorted(text.split())


def test_reorder_refuses_texts_it_cannot_change():
    with pytest.raises(NotApplicable):
        reorder("alone", np.random.default_rng(0), 0.5)
    with pytest.raises(NotApplicable):
        reorder("la la la la", np.random.default_rng(0), 0.5)
    with pytest.raises(ValueError, match="share"):
        reorder(STORY, np.random.default_rng(0), 1.5)


# ---------------------------------------------------------------- context sentence


def test_split_sentences_on_final_punctuation():
    assert split_sentences(CONTEXT) == [
        "wendy was driving down the road .",
        "she heard her car making a noise .",
        "she pulled over !",
    ]
    assert split_sentences("no final mark") == ["no final mark"]
    assert split_sentences("  ") == []


def test_context_sentence_copies_one_context_sentence_chosen_by_the_seed():
    sentences = set(split_sentences(CONTEXT))
    picked = {context_sentence(STORY, np.random.default_rng(s), 1, source=CONTEXT) for s in range(30)}
    assert picked == sentences
    assert context_sentence(STORY, np.random.default_rng(3), 1, source=CONTEXT) == context_sentence(
        STORY, np.random.default_rng(3), 1, source=CONTEXT
    )


def test_context_sentence_refuses_without_context_or_when_it_equals_the_candidate():
    with pytest.raises(NotApplicable, match="no context"):
        context_sentence(STORY, np.random.default_rng(0), 1, source="")
    with pytest.raises(NotApplicable, match="equals"):
        context_sentence("it rained .", np.random.default_rng(0), 1, source="it rained .")


def test_attacks_are_registered_perturbations():
    assert get_perturbation("reorder").family == "targeted"
    assert get_perturbation("context_sentence")(STORY, np.random.default_rng(0), 0, source=CONTEXT) == STORY
    with pytest.raises(TypeError, match="Generator"):
        get_perturbation("reorder")(STORY, 0, 0.5)


# ---------------------------------------------------------------- protocol


def _data():
    hyps = [STORY, "she called for help and waited to get her car fixed .", "x"]
    refs = [
        "she called for help and waited for her car to be fixed .",
        "she called for help and waited to get her car fixed .",
        "the car was fine .",
    ]
    srcs = [CONTEXT, CONTEXT, ""]
    return hyps, refs, srcs


def test_make_attacks_is_pure_and_counts_skipped_items():
    hyps, _, srcs = _data()
    a = make_attacks(hyps, srcs, seed=4)
    assert a == make_attacks(hyps, srcs, seed=4)
    assert a != make_attacks(hyps, srcs, seed=5)
    assert a["reorder"]["items"] == [0, 1] and sum(a["reorder"]["skipped"].values()) == 1
    assert a["context_sentence"]["items"] == [0, 1] and a["context_sentence"]["skipped"] == {
        "sample has no context (source)": 1
    }
    assert all(t in split_sentences(CONTEXT) for t in a["context_sentence"]["texts"])
    # one attack alone draws exactly what it draws next to the other one
    assert make_attacks(hyps, srcs, seed=4, attacks=["reorder"])["reorder"] == a["reorder"]


def test_run_robustness_with_a_toy_metric():
    hyps, refs, srcs = _data()
    calls = []

    def metric(h, r, s):
        calls.append(len(h))
        return word_overlap(h, r, s)

    report = run_robustness({"toy": metric}, hyps, refs, srcs, seed=0)
    assert len(calls) == 1  # originals and both attacks in one call
    assert set(report["results"]["toy"]) == set(ATTACKS)
    reo = report["results"]["toy"]["reorder"]
    # item 0 shares no bigram with its reference (0 stays 0: a tie), item 1 drops
    assert reo["n"] == 2 and reo["drop"] > 0 and reo["robust"]
    assert reo["share_dropped"] == 0.5 and reo["share_tied"] == 0.5
    assert reo["mean_original"] == pytest.approx(np.mean(word_overlap(hyps[:2], refs[:2], None)))
    assert json.loads(json.dumps(report)) == report
    assert report == run_robustness({"toy": metric}, hyps, refs, srcs, seed=0)
    table = markdown_table(report)
    assert "| toy | reorder | 2 |" in table and "| toy | context_sentence | 2 |" in table


def test_scorer_objects_keep_their_signature():
    class Scorer:  # like MARSScorer: score() and signature(), no ``name`` attribute, also callable
        def score(self, hyps, refs, srcs=None):
            return word_overlap(hyps, refs, srcs)

        def __call__(self, hyps, refs, srcs=None):
            raise AssertionError("score() must be used")

        def signature(self):
            return "toy|v1"

    hyps, refs, srcs = _data()
    report = run_robustness({"obj": Scorer(), "fn": word_overlap}, hyps, refs, srcs)
    assert report["signatures"] == {"obj": "toy|v1", "fn": "fn|callable"}
    assert report["results"]["obj"] == report["results"]["fn"]


def test_an_order_blind_metric_is_not_robust_to_reordering():
    hyps, refs, srcs = _data()

    def bag(h, r, s):
        return [len(set(a.split()) & set(b.split())) / len(set(b.split())) for a, b in zip(h, r)]

    reo = run_robustness({"bag": bag}, hyps, refs, srcs)["results"]["bag"]["reorder"]
    assert reo["drop"] == 0 and not reo["robust"] and reo["share_tied"] == 1.0


def test_summarize_and_bad_input():
    s = summarize([1.0, 2.0, 3.0], [0.5, 2.0, 4.0])
    assert s["drop"] == pytest.approx(-0.5 / 3) and s["share_dropped"] == pytest.approx(1 / 3)
    assert s["share_tied"] == pytest.approx(1 / 3) and s["share_higher"] == pytest.approx(1 / 3) and not s["robust"]
    with pytest.raises(ValueError, match="equal length"):
        summarize([1.0], [1.0, 2.0])
    hyps, refs, srcs = _data()
    with pytest.raises(ValueError, match="no metric"):
        run_robustness({}, hyps, refs, srcs)
    with pytest.raises(ValueError, match="references"):
        run_robustness({"toy": word_overlap}, hyps, refs[:2], srcs)
    with pytest.raises(ValueError, match="contexts"):
        make_attacks(hyps, srcs[:1])
    with pytest.raises(ValueError, match="attacks must be"):
        make_attacks(hyps, srcs, attacks=["shuffle"])
    with pytest.raises(ValueError, match="non-empty"):
        make_attacks("one string", None)
    with pytest.raises(ValueError, match="returned"):
        run_robustness({"bad": lambda h, r, s: [0.0]}, hyps, refs, srcs)


# ---------------------------------------------------------------- CLI


def test_evaluate_robustness_command(capsys, tmp_path):
    from nlgmetrics.cli import evaluate

    hyps, refs, srcs = _data()
    data = tmp_path / "judged.jsonl"
    data.write_text(
        "".join(
            json.dumps({"item_id": i, "hyp": h, "refs": [r], "src": s, "scores": {"h": 1.0}}) + "\n"
            for i, (h, r, s) in enumerate(zip(hyps, refs, srcs))
        ),
        encoding="utf-8",
    )
    out, md = tmp_path / "rob.json", tmp_path / "rob.md"
    code = evaluate.main(
        ["robustness", "--metric", "chrf", "--data", str(data), "--json", str(out), "--markdown", str(md), "--quiet"]
    )
    captured = capsys.readouterr()
    assert code == 0
    report = json.loads(out.read_text())
    assert json.loads(captured.out.strip().splitlines()[-1]) == {**report, "truncated": {}}
    assert report["results"]["chrf"]["reorder"]["n"] == 2 and "chrf|" in report["signatures"]["chrf"]
    assert md.read_text() == markdown_table(report)
    code = evaluate.main(["robustness", "--metric", "nope", "--data", str(data), "--json", str(tmp_path / "x.json")])
    assert code == 1 and "unknown metric" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_mars_takes_a_one_element_reference_list():
    from mars.scorer import single_references

    assert single_references(["a", ["b"], ("c",)]) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="exactly one"):
        single_references([["a", "b"]])
