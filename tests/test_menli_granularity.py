"""Sentence-level MENLI for long texts: pooling, the one batched pass, and exactness for short texts."""

from __future__ import annotations

import numpy as np
import pytest

from menli import menli_scores
from menli.granularity import nli_probabilities, pool_sentence_matrix, sentence_level_probs, split_sentences
from nlgmetrics.nli import load_nli


class KeywordNLI:
    """A stand-in NLI model: entailed iff every word of the hypothesis occurs in the premise, contradiction if
    the hypothesis says 'not' and the premise does not. Records every pair it is asked about."""

    max_length = None

    def __init__(self) -> None:
        self.calls: list[int] = []

    def predict_proba(self, premises, hypotheses, batch_size=64, progress=False, desc=""):
        self.calls.append(len(premises))
        out = []
        for p, h in zip(premises, hypotheses):
            words = set(p.lower().strip(".").split())
            if "not" in h.lower().split() and "not" not in words:
                out.append([0.05, 0.05, 0.9])
            elif set(h.lower().strip(".").split()) <= words:
                out.append([0.9, 0.05, 0.05])
            else:
                out.append([0.1, 0.8, 0.1])
        return np.array(out)


def test_split_sentences_is_punctuation_based_and_never_empty():
    assert split_sentences("Profits rose. Costs fell! Did they?") == ["Profits rose.", "Costs fell!", "Did they?"]
    assert split_sentences("no boundary here") == ["no boundary here"]


def test_each_hypothesis_sentence_takes_its_best_premise_sentence():
    probs = np.array(
        [[[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]], [[0.2, 0.7, 0.1], [0.6, 0.2, 0.2]]]
    )  # [premise sentence, hypothesis sentence, 3]
    assert pool_sentence_matrix(probs, "e", "mean") == pytest.approx([0.75, 0.125, 0.125])
    assert pool_sentence_matrix(probs, "e", "min") == pytest.approx([0.6, 0.2, 0.2])
    # the formula decides "best": with -c the second hypothesis sentence prefers premise 0 (c = 0.1 < 0.2)
    assert pool_sentence_matrix(probs, "-c", "mean") == pytest.approx([0.5, 0.425, 0.075])


def test_late_damage_in_a_paragraph_is_seen_at_sentence_level():
    nli = KeywordNLI()
    reference = "The company grew. Profits rose in March. The board met in May. Staff numbers held steady."
    faithful = "The company grew. Profits rose in March. The board met in May. Staff numbers held steady."
    broken = "The company grew. Profits rose in March. The board met in May. Staff numbers did not hold."
    good, bad = sentence_level_probs(nli, [reference, reference], [faithful, broken], "e")
    assert good[0] == pytest.approx(0.9) and bad[0] < good[0]
    assert nli.calls == [2 * 4 * 4]  # every sentence pair of both items in ONE batched call
    _, worst = sentence_level_probs(KeywordNLI(), [reference] * 2, [faithful, broken], "e", reduce="min")
    assert worst[2] == pytest.approx(0.9)  # min: the one contradicted sentence decides


@pytest.fixture(scope="module")
def tiny_nli(tiny):
    return load_nli(str(tiny["nli"]))


def test_auto_equals_text_granularity_for_short_pairs_to_the_bit(tiny_nli):
    hyps, refs = ["A cat sat.", "Profits fell."], ["The cat sat down.", "Profits rose."]
    text = menli_scores(tiny_nli, hyps, refs, granularity="text")
    auto = menli_scores(tiny_nli, hyps, refs, granularity="auto")
    assert np.array_equal(text, auto)


def test_auto_switches_to_sentences_only_for_pairs_over_the_window(tiny_nli):
    short = ("One short sentence.", "Another short one.")
    long_text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(40))
    probs, used = nli_probabilities(tiny_nli, [short[0], long_text], [short[1], long_text], "e", "auto")
    assert used.tolist() == [False, True]
    text_only, _ = nli_probabilities(tiny_nli, [short[0]], [short[1]], "e", "text")
    assert np.array_equal(probs[0], text_only[0])
    assert np.allclose(probs.sum(axis=1), 1.0)


def test_bad_granularity_names_the_choices():
    with pytest.raises(ValueError, match="auto, sentence, text"):
        menli_scores(KeywordNLI(), ["a"], ["b"], granularity="paragraph")
    with pytest.raises(ValueError, match="mean, min"):
        menli_scores(KeywordNLI(), ["a"], ["b"], sentence_reduce="max")


def test_pair_cache_sends_each_distinct_pair_to_the_model_once_across_calls():
    from nlgmetrics.nli import PairCache

    inner = KeywordNLI()
    cached = PairCache(inner, max_pairs=100)
    premises, hyps = ["a b. c d.", "a b. c d."], ["a b. x y.", "a b. c d."]
    first = menli_scores(cached, hyps, premises, "e", "<->", granularity="sentence")
    seen = sum(inner.calls)
    assert seen == len(set(zip(*_sentence_pairs(premises, hyps))))  # repeated sentence pairs went once
    again = menli_scores(cached, hyps, premises, "e", "<->", granularity="sentence")
    assert sum(inner.calls) == seen and cached.hits >= seen  # the second call is all hits
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, menli_scores(KeywordNLI(), hyps, premises, "e", "<->", granularity="sentence"))
    small = PairCache(KeywordNLI(), max_pairs=2)
    small.predict_proba(["p1", "p2", "p3"], ["h", "h", "h"])
    assert len(small) == 2  # least recently used pairs leave first
    with pytest.raises(ValueError, match="premises but"):
        small.predict_proba(["p"], [])


def test_pair_cache_file_resumes_a_stopped_run_without_sending_its_pairs_to_the_model_again(tmp_path):
    from nlgmetrics.nli import PairCache

    premises, hyps = ["a b. c d.", "e f. g h."], ["a b. x y.", "e f. not g."]
    path = tmp_path / "pairs.jsonl"
    first = menli_scores(PairCache(KeywordNLI(), path=path), hyps, premises, "e", "<->", granularity="sentence")
    written = path.read_bytes()
    inner = KeywordNLI()
    resumed = PairCache(inner, max_pairs=1, path=path)  # the file's pairs are kept beyond max_pairs
    np.testing.assert_array_equal(menli_scores(resumed, hyps, premises, "e", "<->", granularity="sentence"), first)
    assert inner.calls == [] and resumed.misses == 0 and resumed.hits > 0
    fresh = PairCache(KeywordNLI(), path=path)
    scored = list(zip(*_sentence_pairs(premises, hyps)))
    assert all(fresh.stored(*pair) for pair in scored) and not fresh.stored("c d.", "a b.")  # from the file alone
    assert fresh.hits == fresh.misses == 0
    menli_scores(resumed, ["c d."], ["a b."], "e", "<->", granularity="sentence")  # two new pairs
    assert sum(inner.calls) == 2 and path.read_bytes().startswith(written)  # appended, nothing rewritten
    assert len(path.read_text().splitlines()) == len(written.decode().splitlines()) + 2


def test_pair_cache_file_drops_a_cut_off_last_line_and_refuses_other_models_and_corrupt_files(tmp_path):
    from nlgmetrics.nli import PairCache

    path = tmp_path / "pairs.jsonl"
    PairCache(KeywordNLI(), path=path).predict_proba(["p1", "p2"], ["h", "h"])
    whole = path.read_text()
    path.write_text(whole + '["abc", 0.1, 0')  # a kill in the middle of an append
    inner = KeywordNLI()
    cache = PairCache(inner, path=path)
    assert path.read_text() == whole  # cut back to the last whole record
    cache.predict_proba(["p1", "p3"], ["h", "h"])
    assert inner.calls == [1] and len(path.read_text().splitlines()) == 4  # header, p1, p2, p3

    other = KeywordNLI()
    other.max_length = 128  # another window truncates differently: other probabilities
    with pytest.raises(ValueError, match="another NLI model"):
        PairCache(other, path=path)
    lines = whole.splitlines()
    path.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="line 2: not a"):
        PairCache(KeywordNLI(), path=path)
    for other_file in ('{"rows": []}\n', '{"a score store": {"k": 0.5}}'):  # the second has no newline at all
        path.write_text(other_file)
        with pytest.raises(ValueError, match="not an NLI pair cache"):
            PairCache(KeywordNLI(), path=path)
        assert path.read_text() == other_file  # refused before anything was cut


def _sentence_pairs(premises, hyps):
    """Every (premise sentence, hypothesis sentence) pair of both directions, as MENLI asks for them."""
    out_p, out_h = [], []
    for p, h in zip(premises, hyps):
        for a, b in ((p, h), (h, p)):
            for sa in split_sentences(a):
                for sb in split_sentences(b):
                    out_p.append(sa)
                    out_h.append(sb)
    return out_p, out_h


def test_pair_cache_matches_the_real_model_within_rounding(tiny):
    from nlgmetrics.nli import PairCache

    nli = load_nli(str(tiny["nli"]))
    hyps = ["the cat sat on the mat. it was warm.", "the dog ran. it was cold.", "the cat sat on the mat."]
    refs = ["the cat sat on the mat. it was warm.", "a dog ran fast. it was cold.", "the cat sat."]
    plain = menli_scores(nli, hyps, refs, "e", "<->", granularity="sentence")
    cached = PairCache(nli)
    np.testing.assert_allclose(menli_scores(cached, hyps, refs, "e", "<->", granularity="sentence"), plain, atol=1e-6)
    np.testing.assert_allclose(
        menli_scores(cached, hyps[::-1], refs[::-1], "e", "<->", granularity="sentence"), plain[::-1], atol=1e-6
    )
    assert cached.hits > 0 and cached.max_length == nli.max_length


def test_candidate_mask_keeps_lexical_neighbours_and_the_same_position():
    from menli.granularity import candidate_mask

    premise = ["Profits rose in May.", "The weather was cold.", "Staff were hired.", "Costs fell sharply."]
    hyp = ["Costs fell.", "New staff were hired.", "Profits rose."]
    mask = candidate_mask(premise, hyp, 1)
    assert mask[3, 0] and mask[2, 1] and mask[0, 2]  # the word-sharing sentence of each
    assert mask[0, 0] and mask[1, 1] and mask[3, 2]  # the same relative position (0, 4/3 -> 1, 8/3 -> 3)
    assert mask.sum(axis=0).max() <= 2
    assert candidate_mask(premise, hyp, 0).all() and candidate_mask(premise, hyp, 4).all()


def test_sentence_candidates_score_fewer_pairs_and_keep_the_pooled_vector_when_neighbours_hold_the_best():
    reference = "Profits rose in May. The weather was cold. Staff were hired. Costs fell sharply."
    hyps = ["Costs fell. Staff were hired. Profits rose.", "Costs did not fall. Staff were hired."]
    full_nli, fast_nli = KeywordNLI(), KeywordNLI()
    full = sentence_level_probs(full_nli, [reference] * 2, hyps, "e")
    fast = sentence_level_probs(fast_nli, [reference] * 2, hyps, "e", candidates=1)
    np.testing.assert_allclose(fast, full)
    assert sum(fast_nli.calls) < sum(full_nli.calls) == 4 * 3 + 4 * 2
    with pytest.raises(ValueError, match="candidates must be >= 0"):
        sentence_level_probs(KeywordNLI(), [reference], hyps[:1], "e", candidates=-1)
