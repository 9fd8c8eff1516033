"""Self-evaluation bias (blind-spot paper 5.4): LM log-likelihood, seeded sampling, and the bias statistic."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nlgmetrics.baselines.lm_likelihood import (
    LMLikelihoodScorer,
    continuation_logprobs,
    encode_pair,
    sample_continuations,
)
from nlgmetrics.modelroles import load_causal_lm
from nlgmetrics.stress.self_bias import markdown, prompts_from_paragraphs, run_self_bias, self_bias_report

CONTEXTS = ["The river runs", "", "A long and winding road leads to the old house on the hill", "Numbers: 1 2 3"]
TEXTS = ["through the valley.", "Hello world.", "nobody lives there any more", "4 5 6 7 8 9"]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_batched_logprobs_equal_one_unpadded_forward_per_pair(tiny, arch, batch_size):
    lm = load_causal_lm(str(tiny[arch]))
    totals, counts = continuation_logprobs(lm, CONTEXTS, TEXTS, batch_size=batch_size)
    for context, text, total, count in zip(CONTEXTS, TEXTS, totals, counts):
        ctx, txt = encode_pair(lm.tokenizer, context, text, 512)
        ids = torch.tensor([ctx + txt])
        with torch.inference_mode():
            logprobs = torch.log_softmax(lm.model(input_ids=ids).logits[0, :-1].float(), -1)
        expected = logprobs[len(ctx) - 1 :].gather(-1, torch.tensor(txt).unsqueeze(-1)).sum().item()
        assert count == len(txt) > 0
        assert total == pytest.approx(expected, abs=1e-4)


def test_a_pairs_logprob_is_bit_identical_whatever_its_batch(tiny):
    """Alone, in batches of 3 and all together: the same sums to the last bit (--devices shards and chunked metric
    updates rely on it). An LM of SmolLM2's widths (one layer, random weights; the 32-wide test models round alike
    either way): padded to the batch's longest, 3 of these 12 sums moved by up to 3e-5."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny["llama"])
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=1,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    lm = SimpleNamespace(model=LlamaForCausalLM(config).eval(), tokenizer=tokenizer, device=torch.device("cpu"))
    contexts = CONTEXTS * 3
    texts = [t if i < 4 else (t + " and then some more words") * (i % 3 + 1) for i, t in enumerate(TEXTS * 3)]
    together, _ = continuation_logprobs(lm, contexts, texts, batch_size=16)
    in_threes, _ = continuation_logprobs(lm, contexts, texts, batch_size=3)
    alone = np.array([continuation_logprobs(lm, [c], [t])[0][0] for c, t in zip(contexts, texts)])
    assert len(set(together.tolist())) == len(texts)
    np.testing.assert_array_equal(together, in_threes)
    np.testing.assert_array_equal(together, alone)


def test_scorer_is_mean_token_logprob_and_conditions_on_sources(tiny):
    scorer = LMLikelihoodScorer(str(tiny["gpt2"]))
    plain = scorer.score(TEXTS)
    totals, counts = continuation_logprobs(load_causal_lm(str(tiny["gpt2"])), [""] * 4, TEXTS)
    assert plain == pytest.approx(list(totals / counts))
    assert scorer.score(TEXTS, None, CONTEXTS) != plain
    assert scorer.signature().startswith("lm-likelihood|lm:")


def test_sampling_is_seeded_per_item_whatever_the_batch(tiny):
    lm = load_causal_lm(str(tiny["llama"]))
    prompts = ["Once upon a time", "The market", "In 1990 the city council decided", "Rain", "We"]
    one = sample_continuations(lm, prompts, max_new_tokens=12, seed=3, batch_size=1)
    many = sample_continuations(lm, prompts, max_new_tokens=12, seed=3, batch_size=4)
    assert one == many
    assert sample_continuations(lm, prompts[:3], max_new_tokens=12, seed=3, batch_size=2) == one[:3]  # streams by index
    assert sample_continuations(lm, prompts, max_new_tokens=12, seed=4, batch_size=4) != one
    assert all(isinstance(text, str) for text in one) and any(one)


def test_bias_statistic_flags_an_evaluator_that_prefers_its_own_generator():
    rng = np.random.default_rng(0)
    n = 200
    judge_a, judge_b = rng.normal(0, 1, n), rng.normal(0.5, 1, n)  # the neutral judge prefers B's outputs
    scores = {
        "lm:a": {"a": rng.normal(1.0, 1, n), "b": rng.normal(0, 1, n)},  # a's LM loves a's outputs
        "lm:b": {"a": 2 * judge_a - 3, "b": 2 * judge_b - 3},  # b's LM orders every pair as the judge does
        "judge": {"a": judge_a, "b": judge_b},
    }
    report = self_bias_report(scores, {"lm:a": "a", "lm:b": "b"}, n_boot=500, seed=1)
    tests = {t["evaluator"]: t for t in report["tests"]}
    assert tests["lm:a"]["verdict"] == "prefers its own generator" and tests["lm:a"]["ci95"][0] > 0
    assert tests["lm:a"]["reference_metrics"] == ["judge"]
    assert tests["lm:b"]["verdict"] == "no evidence of self-preference" and tests["lm:b"]["bias"] == 0
    assert report["ranking"]["lm:a"] == ["a", "b"] and report["ranking"]["judge"] == ["b", "a"]
    assert self_bias_report(scores, {"lm:a": "a", "lm:b": "b"}, n_boot=500, seed=1) == report
    table = markdown(report)
    assert "| lm:a | **" in table and "prefers its own generator" in table


def test_bias_report_rejects_ragged_or_unknown_input():
    good = {"m": {"a": np.zeros(3), "b": np.ones(3)}}
    with pytest.raises(ValueError, match="same 3 prompts"):
        self_bias_report({**good, "x": {"a": np.zeros(3), "b": np.ones(2)}}, {"m": "a"})
    with pytest.raises(ValueError, match="unknown metric or generator"):
        self_bias_report(good, {"m": "zzz"})


def test_prompts_from_paragraphs_keeps_full_length_continuations():
    words = " ".join(f"w{i}" for i in range(10))
    prompts, truths = prompts_from_paragraphs([words, "too short"], prompt_words=4, continuation_words=3)
    assert prompts == ["w0 w1 w2 w3"] and truths == ["w4 w5 w6"]


def test_run_self_bias_end_to_end_on_two_tiny_generators(tiny):
    from nlgmetrics.baselines import SacreBleuScorer

    generators = {"gpt2": load_causal_lm(str(tiny["gpt2"])), "llama": load_causal_lm(str(tiny["llama"]))}
    chrf = SacreBleuScorer("chrf")
    prompts = [f"Story {i}: the cat and the dog went to the market" for i in range(6)]
    truths = ["and bought some bread for the family"] * 6
    report = run_self_bias(generators, {"chrf": chrf.score}, prompts, truths, max_new_tokens=8, n_boot=50)
    assert set(report["metrics"]) == {"lm:gpt2", "lm:llama", "chrf"}
    assert report["prompts"] + report["dropped_empty"] == 6
    assert {(t["evaluator"], t["other_generator"]) for t in report["tests"]} == {
        ("lm:gpt2", "llama"),
        ("lm:llama", "gpt2"),
    }
    assert all(t["reference_metrics"] == ["chrf"] for t in report["tests"])


def test_cli_writes_report_table_and_plot(tiny, tmp_path):
    from nlgmetrics.cli import evaluate

    paragraphs = tmp_path / "p.txt"
    paragraphs.write_text("\n".join(f"Paragraph {i} " + "word " * 20 for i in range(5)) + "\n")
    out = tmp_path / "sb"
    argv = [
        "self-bias",
        "--generators",
        f"{tiny['gpt2']},{tiny['llama']}",
        "--data",
        str(paragraphs),
        "--out",
        str(out),
        "--judges",
        "chrf",
        "--prompt-words",
        "8",
        "--continuation-words",
        "8",
        "--max-new-tokens",
        "6",
        "--bootstrap",
        "20",
        "--quiet",
    ]
    assert evaluate.main(argv) == 0
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "bias.png"}
    assert evaluate.main([*argv[:2], str(tiny["gpt2"]), *argv[3:]]) == 1  # one generator is no contrast


def test_lm_ratio_is_candidate_minus_best_reference(tiny):
    plain = LMLikelihoodScorer(str(tiny["gpt2"]))
    ratio = LMLikelihoodScorer(str(tiny["gpt2"]), relative=True)
    hyps, refs = TEXTS[:2], [[TEXTS[2], TEXTS[3]], TEXTS[3]]
    h, r = plain.score(hyps), plain.score(TEXTS[2:])
    assert ratio.score(hyps, refs) == pytest.approx([h[0] - max(r), h[1] - r[1]])
    assert ratio.score([TEXTS[0]], [TEXTS[0]]) == [0.0]
    assert ratio.name == "lm-ratio" and "max(logprob(ref))" in ratio.signature()
    with pytest.raises(ValueError, match="reference"):
        ratio.score(hyps, None)


def test_lm_ratio_sends_each_distinct_text_to_the_lm_once(tiny, monkeypatch):
    """Judged sets repeat every reference for every system: the LM must not score them again per row."""
    import nlgmetrics.baselines.lm_likelihood as module

    seen = []
    real = module.continuation_logprobs

    def spy(lm, contexts, texts, *args, **kwargs):
        seen.extend(zip(contexts, texts))
        return real(lm, contexts, texts, *args, **kwargs)

    ratio = LMLikelihoodScorer(str(tiny["gpt2"]), relative=True)
    expected = ratio.score(TEXTS[:2], [TEXTS[2], TEXTS[2]])
    monkeypatch.setattr(module, "continuation_logprobs", spy)
    hyps, refs = [TEXTS[0], TEXTS[1], TEXTS[0]], [[TEXTS[2], TEXTS[3]], [TEXTS[2]], [TEXTS[2], TEXTS[3]]]
    scores = ratio.score(hyps, refs)
    assert len(seen) == len(set(seen)) == 4
    assert scores[0] == scores[2] and scores[1] == pytest.approx(expected[1])


def test_menli_plus_lm_ratio_composes_from_the_cli(tiny, tmp_path):
    import json

    from nlgmetrics.cli import evaluate

    (tmp_path / "h").write_text("The cat sat on the mat.\ncat the mat on sat the.\n")
    (tmp_path / "r").write_text("The cat sat on the mat.\nThe cat sat on the mat.\n")
    out = tmp_path / "s.jsonl"
    assert (
        evaluate.main(
            [
                "score",
                "--metric",
                "menli+lm-ratio",
                "--nli-model",
                str(tiny["nli"]),
                "--causal-lm",
                str(tiny["gpt2"]),
                "--hyps",
                str(tmp_path / "h"),
                "--refs",
                str(tmp_path / "r"),
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert len([json.loads(line) for line in out.read_text().splitlines()]) == 2
