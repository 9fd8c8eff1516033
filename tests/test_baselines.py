"""Baselines: BERTScore's greedy matching by hand, identity, multi-reference max, sacrebleu agreement."""

import numpy as np
import pytest
import sacrebleu

from nlgmetrics.baselines import BERTScorer, CosineScorer, SacreBleuScorer, bertscore_f1


def test_bertscore_f1_by_hand():
    hyp = np.array([[1.0, 0.0], [0.0, 1.0]])
    ref = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    # precision: each hyp token's best match = 1, 1 -> 1.0; recall: ref tokens' best = 1, 0.8, 1 -> 2.8/3
    recall = 2.8 / 3
    assert bertscore_f1(hyp, ref) == pytest.approx(2 * recall / (1 + recall))


def test_encoder_scorers_on_a_tiny_encoder(tiny):
    hyps = ["the cat sat on the mat", "a dog runs"]
    refs = [["the cat sat on the mat", "dogs fly"], ["the river is cold"]]
    for scorer in (BERTScorer(str(tiny["encoder"])), CosineScorer(str(tiny["encoder"]))):
        scores = scorer.score(hyps, refs)
        assert scores[0] == pytest.approx(1.0, abs=1e-5)  # identical reference among the two: max picks it
        assert scores[1] < 0.999
        assert scorer.signature().startswith(scorer.name + "|encoder:")


def test_sentence_bleu_and_chrf_match_sacrebleu():
    hyps, refs = ["the cat sat on a mat"], ["the cat sat on the mat"]
    assert SacreBleuScorer("bleu").score(hyps, refs)[0] == pytest.approx(
        sacrebleu.sentence_bleu(hyps[0], refs, use_effective_order=True).score
    )
    assert SacreBleuScorer("chrf").score(hyps, refs)[0] == pytest.approx(sacrebleu.sentence_chrf(hyps[0], refs).score)
    with pytest.raises(ValueError, match="hypotheses=2, references=1"):
        SacreBleuScorer("bleu").score(["a", "b"], ["c"])


def test_item_chunks_bound_distinct_texts_and_keep_order():
    from nlgmetrics.baselines.scorers import item_chunks

    hyps = ["a", "b", "c", "d", "e"]
    refs = [["r1"], ["r1"], ["r1"], ["r2"], ["r3", "r4"]]
    # a,b,r1 = 3 texts; c would make 4 > 3 -> new chunk; c,r1 + d,r2 = 4 > 3 -> cut again
    assert item_chunks(hyps, refs, 3) == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert item_chunks(hyps, refs, 100) == [(0, 5)]
    assert item_chunks(["x"], [["y", "z", "w"]], 1) == [(0, 1)]  # one item always fits, however many texts
    assert item_chunks([], [], 4) == []
    with pytest.raises(ValueError, match="max_texts"):
        item_chunks(hyps, refs, 0)


@pytest.mark.parametrize("cls", [BERTScorer, CosineScorer])
def test_encoder_scorers_in_chunks_equal_one_pass_bit_for_bit(tiny, cls):
    """Memory stays flat on big sets only if chunking changes nothing: each text's embedding is batch-independent."""
    hyps = ["the cat sat", "a dog ran far away from home", "birds", "the cat sat", "it rains all day long today"]
    refs = [["the cat sat down"], ["a dog ran", "dogs run"], ["some birds sing"], ["a cat"], ["rain"]]
    whole = cls(encoder=str(tiny["encoder"]), batch_size=2).score(hyps, refs)
    chunked = cls(encoder=str(tiny["encoder"]), batch_size=3, chunk_texts=3).score(hyps, refs)
    assert len(set(whole)) > 3
    assert chunked == whole


def test_several_layers_from_one_pass_equal_one_layer_at_a_time(tiny):
    from nlgmetrics.baselines.embedding import token_embeddings, token_embeddings_by_layer
    from nlgmetrics.modelroles import load_encoder

    loaded = load_encoder(str(tiny["encoder"]))
    texts = ["the cat sat on the mat", "a dog", "rain falls on the plain in spain today"]
    both = token_embeddings_by_layer(loaded, texts, [1, None], batch_size=2)
    for layer in (1, None):
        alone = token_embeddings(loaded, texts, layer, batch_size=3)
        assert all(np.array_equal(a, b) for a, b in zip(both[layer], alone))
    assert not np.allclose(both[1][0], both[None][0])  # the layers differ, so the test can see a mix-up


def test_a_prompt_is_context_but_never_matched(tiny):
    from nlgmetrics.baselines.embedding import token_embeddings
    from nlgmetrics.modelroles import load_encoder

    loaded = load_encoder(str(tiny["encoder"]))
    assert loaded.tokenizer.is_fast
    texts = ["the cat sat on the mat", "a dog"]
    plain = token_embeddings(loaded, texts)
    prompted = token_embeddings(loaded, texts, prompt="task: similarity | query: ")
    assert [v.shape for v in prompted] == [v.shape for v in plain]  # the prompt's tokens are dropped
    assert not np.allclose(prompted[0], plain[0])  # but the text's tokens saw them
    scorer = BERTScorer(str(tiny["encoder"]), prompt="task: similarity | query: ")
    from nlgmetrics.signature import signature_fields

    fields = signature_fields(scorer.signature())
    assert fields["prompt"] == "task:%20similarity%20%7C%20query:%20"  # '|' cannot break the signature
    assert "idf" in fields


def test_a_prompt_with_a_slow_tokenizer_is_refused(tiny):
    from types import SimpleNamespace

    from nlgmetrics.baselines.embedding import token_embeddings

    slow = SimpleNamespace(tokenizer=SimpleNamespace(is_fast=False), spec="slow-model")
    with pytest.raises(ValueError, match="fast tokenizer.*slow-model"):
        token_embeddings(slow, ["a"], prompt="query: ")
