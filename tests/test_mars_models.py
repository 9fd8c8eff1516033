"""MARS end to end on tiny random models: lockstep decoding, planning safety, cloze constraints, score, cache."""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

from tiny_models import build_bert, build_causal_lm  # noqa: E402

from mars import MARS, build, geometric_weights, mean_pooled_embeddings  # noqa: E402
from mars.cloze import ClozeAugmenter, ClozeJob  # noqa: E402
from mars.lockstep import GrowingLayer, LockstepBatch  # noqa: E402
from mars.naive import MaskedLMFiller  # noqa: E402
from mars.planning import plan_logits_parameters, scope_parameter_names  # noqa: E402
from mars.template import TextBlock  # noqa: E402
from nlgmetrics.modelroles import load_model  # noqa: E402

REFS = [
    "the man buys a red car in the city . he drives it to the river .",
    "the old teacher reads a story to the student . they often sing .",
    "she sells her house because the price is high today .",
]
SRCS = ["the man has a job in the city .", "the teacher is happy .", ""]
HYPS = [
    "a man buys a new car . he drives to the city .",
    "the teacher reads to the child .",
    "she sells the small house today .",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("mars_tiny")
    return {
        "encoder": str(build_bert(root / "encoder", "encoder")),
        "mlm": str(build_bert(root / "mlm", "masked_lm")),
        "llama": str(build_causal_lm(root / "llama", "llama")),
        "gpt2": str(build_causal_lm(root / "gpt2", "gpt2")),
    }


def _config(tiny, tmp_path, arch="llama", **extra):
    values = {
        "models": {
            "causal_lm": tiny[arch],
            "encoder": tiny["encoder"],
            "masked_lm": tiny["mlm"],
            "spacy": "packaged:en_core_web_sm",
        },
        "masking": {"ratios": [0.0, 0.4, 0.8]},
        "cloze": {"lockstep_references": 2},
        "cache_dir": str(tmp_path / "cache"),
        "progress": False,
        "device": "cpu",
    }
    values.update(extra)
    return values


def _weights_digest(model) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_lockstep_rows_see_exactly_their_own_tokens(tiny, arch):
    lm = load_model("causal_lm", tiny[arch])
    head = lm.model.get_output_embeddings()
    batch = LockstepBatch(lm.model, lm.tokenizer.pad_token_id)
    seqs = [[1, 5, 9], [1, 7], [1, 4, 4, 8, 2]]
    batch.step(seqs)
    for adds in ([[11], [12, 13, 14], []], [[20, 21], [22], [23]]):
        batch.step(adds)
        for r, add in enumerate(adds):
            seqs[r] = seqs[r] + add
        if adds[0] == [11]:
            batch.hide_last(1, 2)  # rejected guesses become holes
            seqs[1] = seqs[1][:-2]
    fork = batch.fork(0, 2)
    forked = fork.step([[30], [31, 32]])
    batch.keep_rows([2, 0, 0])
    hidden = batch.step([[40], [41], [42]])
    expected = [
        (seqs[2] + [40], hidden[0]),
        (seqs[0] + [41], hidden[1]),
        (seqs[0] + [42], hidden[2]),
        (seqs[0] + [31, 32], forked[1]),
    ]
    for tokens, states in expected:
        with torch.no_grad():
            reference = lm.model(torch.tensor([tokens])).logits[0, -1]
            assert torch.allclose(head(states[-1]), reference, atol=1e-4)


def test_parameter_planning_scopes_never_touch_the_model(tiny):
    lm = load_model("causal_lm", tiny["llama"])
    before = _weights_digest(lm.model)
    ids = torch.tensor([[1, 5, 9, 11]])
    with torch.no_grad():
        base = lm.model(ids).logits[0, -1]
    for scope in ("all", "last_layers:1", "head"):
        names = scope_parameter_names(lm.model, scope)
        assert names
        planned = plan_logits_parameters(lm.model, ids, [20, 21], names, eta=0.5, steps=3, temperature=1.3)
        assert not torch.allclose(planned, base)
        assert torch.log_softmax(planned / 1.3, -1)[[20, 21]].sum() > torch.log_softmax(base / 1.3, -1)[[20, 21]].sum()
    assert _weights_digest(lm.model) == before
    assert all(p.grad is None for p in lm.model.parameters())


def _jobs(scorer, seed_offset=0):
    templates = scorer.templates(REFS, SRCS)
    return [
        ClozeJob(t, ctx, 100 + i + seed_offset)
        for per_ref, ctx in zip(templates, SRCS)
        for i, t in enumerate(per_ref)
        if t.ratio > 0
    ]


def _assert_respects_template(job, fills):
    template = job.template
    assert len(fills) == len(template.blanks)
    out = template.render(fills)
    cursor = 0
    for block in template.blocks:  # every text block appears verbatim, in order
        if isinstance(block, TextBlock):
            found = out.find(block.text, cursor)
            assert found >= cursor, (block.text, out)
            cursor = found + len(block.text)
    for blank, fill in zip(template.blanks, fills):
        assert fill and "\n" not in fill
        if blank.lead == " " and blank is not template.blocks[0]:
            assert fill.startswith(" ")  # a fill starts a new word where the masked words did


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("llama", {}),
        ("gpt2", {"cloze": {"judge_lookahead": -1, "text_chunk": 0}}),
        ("llama", {"planning": {"scope": "hidden"}, "cloze": {"judge_scope": "span", "blank_length_unit": "tokens"}}),
    ],
)
def test_generation_keeps_text_blocks_and_leaves_weights_bit_identical(tiny, tmp_path, arch, overrides):
    scorer = build(_config(tiny, tmp_path, arch, **overrides))
    lm = load_model("causal_lm", tiny[arch])
    before = _weights_digest(lm.model)
    jobs = _jobs(scorer)
    augmenter = ClozeAugmenter(lm, scorer.config.cloze, scorer.config.planning)
    fills = augmenter.fill([jobs[:3], jobs[3:]])
    assert _weights_digest(lm.model) == before
    for job, job_fills in zip(jobs, fills[0] + fills[1]):
        _assert_respects_template(job, job_fills)
    assert any(t.blanks for t in (j.template for j in jobs))


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_text_blocks_are_fed_to_the_lm_verbatim(tiny, tmp_path, arch):
    scorer = build(_config(tiny, tmp_path, arch))
    lm = load_model("causal_lm", tiny[arch])
    augmenter = ClozeAugmenter(lm, scorer.config.cloze, scorer.config.planning)
    for job in _jobs(scorer):
        prefix, segments = augmenter._program(job)
        assert lm.tokenizer.decode(prefix[1:]) == job.context.strip()
        assert len(segments) == len(job.template.blocks)
        for index, (segment, block) in enumerate(zip(segments, job.template.blocks)):
            if isinstance(block, TextBlock):
                lead = " " if index == 0 and job.context else block.lead
                assert lm.tokenizer.decode(segment.tokens) == lead + block.text
            else:
                assert segment.kind == "blank" and segment.n_candidates == block.n_words + 1
                following = segments[index + 1].tokens if index + 1 < len(segments) else []
                assert segment.future == following and segment.judge_tokens == following[:1]


def test_cloze_is_deterministic_per_seed_whatever_the_grouping(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path))
    lm = load_model("causal_lm", tiny["llama"])
    augmenter = ClozeAugmenter(lm, scorer.config.cloze, scorer.config.planning)
    jobs = _jobs(scorer)
    together = augmenter.augment([jobs])[0]
    assert augmenter.augment([jobs])[0] == together
    one_by_one = [augmenter.augment([[job]])[0][0] for job in jobs]
    assert one_by_one == together
    reseeded = augmenter.augment([_jobs(scorer, seed_offset=1)])[0]
    assert reseeded != together


def test_scorer_augments_per_ratio_and_score_is_the_weighted_cosine(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path), score__q=0.5)
    sets = scorer.augment(REFS, SRCS)
    assert [len(s) for s in sets] == [3, 3, 3]
    assert [s[0] for s in sets] == REFS  # ratio 0 is the human reference itself
    assert all(s[2] != s[0] for s in sets)  # 80% masking changes the reference
    scores = scorer.score(HYPS, REFS, SRCS)
    encoder = load_model("encoder", tiny["encoder"])
    weights = geometric_weights(3, 0.5)
    for hyp, refs, score in zip(HYPS, sets, scores):
        with torch.no_grad():  # by hand: mean of token embeddings, cosine, weights 4/7, 2/7, 1/7
            embeddings = []
            for text in [hyp] + refs:
                inputs = encoder.tokenizer(text, return_tensors="pt")
                embeddings.append(encoder.model(**inputs).last_hidden_state[0].mean(dim=0))
        expected = sum(
            float(w) * float(torch.nn.functional.cosine_similarity(embeddings[0], e, dim=0))
            for w, e in zip(weights, embeddings[1:])
        )
        assert math.isclose(score, expected, rel_tol=1e-4, abs_tol=1e-5)
    assert torch.allclose(weights, torch.tensor([4 / 7, 2 / 7, 1 / 7]))
    batched = mean_pooled_embeddings(encoder, HYPS, batch_size=2)
    single = torch.cat([mean_pooled_embeddings(encoder, [h]) for h in HYPS])
    assert torch.allclose(batched, single, atol=1e-5)


def test_cache_hit_avoids_generation(tiny, tmp_path, monkeypatch):
    first = build(_config(tiny, tmp_path))
    scores = first.score(HYPS, REFS, SRCS)
    cache_file = first.cache.path
    assert cache_file is not None and cache_file.is_file()
    assert len(cache_file.read_text().splitlines()) == 1 + 2 * len(REFS)  # the header, then one record each

    def no_generation(*args, **kwargs):
        raise AssertionError("generation must not run on a cache hit")

    monkeypatch.setattr(ClozeAugmenter, "fill", no_generation)
    second = build(_config(tiny, tmp_path))
    assert second.score(HYPS, REFS, SRCS) == pytest.approx(scores, abs=1e-6)
    with pytest.raises(AssertionError, match="must not run"):
        build(_config(tiny, tmp_path), seed=1).score(HYPS, REFS, SRCS)  # another config hash: a miss


def test_no_context_ablation_ignores_sources(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path), ablation="no_context")
    assert scorer.augment(REFS, SRCS) == scorer.augment(REFS, ["x y z", "", "the dog ."])
    assert "noctx" in scorer.signature()


def test_naive_masked_lm_baseline_keeps_length_and_text(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path), ablation="naive")
    sets = scorer.augment(REFS, SRCS)
    mlm = load_model("masked_lm", tiny["mlm"])
    filler = MaskedLMFiller(mlm)
    templates = scorer.templates(REFS, SRCS)
    for per_ref, refs, context in zip(templates, sets, SRCS):
        assert refs[0] in REFS
        for template, text in zip(per_ref[1:], refs[1:]):
            masked, counts = filler._masked_text(ClozeJob(template, context, 0))
            # fixed length: one slot per sub-word of the masked words, so the template keeps the reference length
            assert len(mlm.tokenizer(masked)["input_ids"]) == len(mlm.tokenizer(template.original())["input_ids"])
            assert masked.count(mlm.tokenizer.mask_token) == sum(counts) >= len(template.blanks) > 0
            cursor = 0
            for block in template.blocks:  # kept words survive verbatim, in order
                if isinstance(block, TextBlock):
                    cursor = text.index(block.text, cursor) + len(block.text)
            assert text != template.original()
    assert len(scorer.score(HYPS, REFS, SRCS)) == 3
    assert scorer.signature().startswith("MARS|mlm:")


def test_metric_accumulates_per_sample_scores(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path))
    metric = MARS(scorer=scorer, per_sample=True)
    assert MARS.higher_is_better and not MARS.full_state_update
    metric.update(HYPS[:2], REFS[:2], SRCS[:2])
    metric.update(HYPS[2:], REFS[2:], None)
    values = metric.compute()
    assert values.shape == (3,)
    assert values[:2].tolist() == pytest.approx(scorer.score(HYPS[:2], REFS[:2], SRCS[:2]), abs=1e-6)
    assert values[2].item() == pytest.approx(scorer.score(HYPS[2:], REFS[2:])[0], abs=1e-6)
    metric.reset()
    assert metric.scores == []


def test_signature_names_models_hashes_config_and_version(tiny, tmp_path):
    scorer = build(_config(tiny, tmp_path))
    signature = scorer.signature()
    lm = load_model("causal_lm", tiny["llama"])
    assert signature.startswith("MARS|lm:") and f"@{lm.hash}" in signature
    assert f"cfg:{scorer.config_hash()}" in signature and "version:" in signature and "ratios:0,0.4,0.8" in signature
    assert build(_config(tiny, tmp_path), score__q=0.5).signature() != signature


@pytest.mark.parametrize(
    "hyps,refs,srcs,message",
    [
        (["a"], ["b", "c"], None, "hyps=1, refs=2"),
        (["a", "b"], ["b", "c"], ["x"], "srcs=1"),
        ([""], ["b"], None, r"hyps\[0\] is empty"),
        (["a"], [3], None, r"refs\[0\] is int"),
    ],
)
def test_bad_input_raises_a_clear_error(tiny, tmp_path, hyps, refs, srcs, message):
    scorer = build(_config(tiny, tmp_path))
    with pytest.raises(ValueError, match=message):
        scorer.score(hyps, refs, srcs)


def test_mars_scorer_is_a_scorer_so_protocols_keep_its_signature(tiny, tmp_path):
    from nlgmetrics.metaeval.scorer import Scorer, as_scorer

    scorer = build(_config(tiny, tmp_path))
    assert isinstance(scorer, Scorer) and as_scorer(scorer) is scorer
    assert as_scorer(scorer).signature().startswith("MARS|")


def _count_fed_tokens(monkeypatch) -> list[int]:
    """Tokens fed to the LM per lockstep step, appended to the returned list (the LM's work)."""
    fed: list[int] = []
    step = LockstepBatch.step

    def counting_step(self, chunks):
        fed.append(sum(len(c) for c in chunks))
        return step(self, chunks)

    monkeypatch.setattr(LockstepBatch, "step", counting_step)
    return fed


# speed changes must not change augmented references: skipping text after the last blank is output-neutral
@pytest.mark.parametrize("arch,cloze", [("llama", {}), ("gpt2", {"judge_lookahead": -1, "text_chunk": 0})])
def test_skipping_trailing_text_changes_nothing_but_the_work(tiny, tmp_path, monkeypatch, arch, cloze):
    scorer = build(
        {
            "models": {"causal_lm": tiny[arch], "encoder": tiny["encoder"], "spacy": "packaged:en_core_web_sm"},
            "masking": {"ratios": [0.0, 0.2, 0.4, 0.6]},
            "cloze": {"lockstep_references": 3, **cloze},
            "cache_dir": None,
            "progress": False,
            "device": "cpu",
        }
    )
    jobs = [
        ClozeJob(t, ctx, 7 + i)
        for per_ref, ctx in zip(scorer.templates(REFS, SRCS), SRCS)
        for i, t in enumerate(per_ref)
        if t.ratio > 0
    ]
    assert any(j.template.blanks and isinstance(j.template.blocks[-1], TextBlock) for j in jobs)  # text to skip
    fed = _count_fed_tokens(monkeypatch)
    augmenter = ClozeAugmenter(load_model("causal_lm", tiny[arch]), scorer.config.cloze, scorer.config.planning)
    results, work = {}, {}
    for skip in (False, True):
        augmenter.skip_trailing_text = skip
        fed.clear()
        results[skip] = augmenter.augment([jobs])[0]
        work[skip] = sum(fed)
    assert results[True] == results[False]
    assert work[True] < work[False]


# The growing KV cache (issue 16) is a speed change only: the same states bit for bit, the same augmented texts
def _lockstep_trace(lm, growing: bool) -> tuple[list[torch.Tensor], LockstepBatch]:
    """Every hidden state of a decode that appends, hides guesses, repeats, drops, forks and reorders rows."""
    batch = LockstepBatch(lm.model, lm.tokenizer.pad_token_id, growing)
    states = list(batch.step([[1, 5, 9], [1, 7], [1, 4, 4, 8, 2]]))
    batch.keep_rows([0, 0, 1, 2])  # a shared prefix becomes copies: a new buffer
    for t in range(90):  # past the first capacity (64 positions), so the buffer grows while rows decode
        states += batch.step([[10 + t % 7], [20 + t % 5, 21][: 1 + t % 2], [], [30 + t % 3]])
        if t % 9 == 4:
            batch.hide_last(1, 1)  # a rejected guess becomes a hole
    batch.keep_rows([0, 2, 3])  # a finished row leaves: the others move down inside the buffer
    states += batch.step([[3], [4], [5]])
    states += batch.fork(2, 2).step([[6], [7, 8]])
    batch.keep_rows([2, 0])  # reorder: a new buffer
    states += batch.step([[9], [10, 11]])
    return states, batch


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_growing_cache_gives_the_dynamic_caches_states_bit_for_bit(tiny, arch, monkeypatch):
    lm = load_model("causal_lm", tiny[arch])
    reallocations = []
    reallocate = GrowingLayer._reallocate

    def counting(self, *args, **kwargs):
        reallocations.append((self, "grow" if kwargs.get("rows") is None else "select"))
        return reallocate(self, *args, **kwargs)

    monkeypatch.setattr(GrowingLayer, "_reallocate", counting)
    new, batch = _lockstep_trace(lm, growing=True)
    old, old_batch = _lockstep_trace(lm, growing=False)
    assert len(new) == len(old) and all(torch.equal(a, b) for a, b in zip(new, old))
    assert all(type(layer) is GrowingLayer for layer in batch.cache.layers)
    assert not any(isinstance(layer, GrowingLayer) for layer in old_batch.cache.layers)
    # appends copy only the new positions: the first layer's buffer was allocated for 5 + 64 positions and grew
    # twice (to 1.5x the width then needed) for a width of 143, instead of being copied on each of the 91 steps;
    # the repeat and the reorder made new buffers, dropping a row moved the others down inside the buffer
    first = batch.cache.layers[0]
    assert batch.mask.shape[1] == 143 and 143 < first.capacity <= 143 * 3 // 2
    assert [kind for layer, kind in reallocations if layer is first] == ["grow", "select", "grow", "grow", "select"]


@pytest.mark.parametrize("arch,cloze", [("llama", {}), ("gpt2", {"judge_lookahead": -1, "text_chunk": 0})])
def test_growing_cache_leaves_every_augmented_text_unchanged(tiny, arch, cloze):
    scorer = build(
        {
            "models": {"causal_lm": tiny[arch], "encoder": tiny["encoder"], "spacy": "packaged:en_core_web_sm"},
            "masking": {"ratios": [0.0, 0.2, 0.4, 0.6, 0.8]},
            "cloze": cloze,
            "cache_dir": None,
            "progress": False,
            "device": "cpu",
        }
    )
    long_ref = " ".join(REFS + REFS[:2])  # long enough for the cache to outgrow its first capacity while rows decode
    refs, srcs = REFS + [long_ref], SRCS + [SRCS[0]]
    jobs = [
        ClozeJob(t, ctx, 11 + i)
        for per_ref, ctx in zip(scorer.templates(refs, srcs), srcs)
        for i, t in enumerate(per_ref)
        if t.ratio > 0
    ]
    augmenter = ClozeAugmenter(load_model("causal_lm", tiny[arch]), scorer.config.cloze, scorer.config.planning)
    results = {}
    for growing in (False, True):
        augmenter.growing_cache = growing
        results[growing] = augmenter.augment([jobs])[0]
    assert results[True] == results[False]
    assert len(augmenter._encode(long_ref)) > GrowingLayer.min_growth


# The window (issue 16's cost bound): the LM stops at the window, so long references cost what short ones do
def test_window_bounds_the_lm_work_and_leaves_short_references_alone(tiny, monkeypatch):
    long_ref = " ".join([REFS[0], REFS[1], REFS[2], REFS[0]])  # ~50 words
    refs, srcs = [REFS[2], long_ref], ["", SRCS[0]]
    fed = _count_fed_tokens(monkeypatch)
    out, work = {}, {}
    for words in (0, 12, 1000):
        scorer = build(
            {
                "models": {"causal_lm": tiny["llama"], "encoder": tiny["encoder"], "spacy": "packaged:en_core_web_sm"},
                "masking": {"ratios": [0.0, 0.4, 0.8], "window_words": words},
                "cloze": {"lockstep_references": 2},
                "cache_dir": None,
                "progress": False,
                "device": "cpu",
            }
        )
        fed.clear()
        out[words] = scorer.augment(refs, srcs)
        work[words] = sum(fed)
    assert out[1000] == out[0] and work[1000] == work[0]  # a window longer than every reference changes nothing
    assert out[12][0] == out[0][0]  # the 10-word reference fits the window: same augmentations
    tail = long_ref.split()[14:]  # spaCy words = whitespace words here; 12 words + slack for a fill's length
    for augmented in out[12][1][1:]:
        assert augmented != long_ref and augmented.split()[-len(tail) :] == tail
    assert work[12] < work[0] / 2
