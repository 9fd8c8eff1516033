"""Causal-LM log-likelihood: GPT-PPL-style scoring and seeded top-k sampling, batched.

Both halves of the blind-spot paper's self-evaluation-bias test (section 5.4) live here because they share one
tokenisation convention: a text is scored or generated as the continuation of a context, ``BOS + context`` then
`` " " + text`` (the BOS token, or EOS where a tokenizer has none, makes the first text token predictable and is
what GPT-PPL implementations prepend). Contexts are left-padded so every row's text ends at the last position;
only those positions' logits are computed (``logits_to_keep``), which keeps memory flat for 256k vocabularies.

Sampling draws every random number from a per-item ``torch.Generator`` seeded by (seed, item index): an item's
continuation does not depend on which other items share its batch, nor on the batch size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from nlgmetrics.modelroles.batching import bucket_length, bucketed_batches, length_sorted_batches
from nlgmetrics.modelroles.kvcache import returned_cache, with_cache
from nlgmetrics.signature import Signature


def _start_id(tokenizer: Any) -> int:
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if start is None:
        raise ValueError("the causal LM's tokenizer has neither a BOS nor an EOS token to start a context with")
    return int(start)


def _pad_id(tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def model_window(lm: Any, max_length: int) -> int:
    """``max_length`` capped by the model's position table (GPT-2: 1024; tiny test models: 256)."""
    config = lm.model.config
    window = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    return min(max_length, int(window)) if window else max_length


def encode_pair(tokenizer: Any, context: str, text: str, max_length: int) -> tuple[list[int], list[int]]:
    """Token ids of ``BOS + context`` and of ``" " + text``; the context is cut from the left to fit ``max_length``."""
    ctx = (
        [_start_id(tokenizer)] + tokenizer(context.strip(), add_special_tokens=False)["input_ids"]
        if context.strip()
        else [_start_id(tokenizer)]
    )
    txt = tokenizer(" " + text.strip(), add_special_tokens=False)["input_ids"] if text.strip() else []
    txt = txt[: max_length - 1]
    keep = max_length - len(txt)
    if len(ctx) > keep:
        ctx = ctx[:1] + ctx[len(ctx) - keep + 1 :]
    return ctx, txt


def _left_padded(rows: Sequence[list[int]], pad: int, width: int | None = None) -> tuple[Any, Any, Any]:
    """Ids, mask and positions of ``rows`` left-padded to ``width`` (default: the longest row)."""
    import torch

    width = max(len(r) for r in rows) if width is None else width
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
        mask[i, width - len(row) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, positions


def continuation_logprobs(
    lm: Any,
    contexts: Sequence[str],
    texts: Sequence[str],
    batch_size: int = 8,
    max_length: int = 512,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: the summed log-probability of ``text``'s tokens given ``context``, and how many tokens that is.

    ``lm`` is a loaded causal LM (``nlgmetrics.modelroles.load_causal_lm``). Empty texts get 0 tokens (the
    caller decides what a mean over no tokens means).
    """
    import torch
    from tqdm.auto import tqdm

    if len(contexts) != len(texts):
        raise ValueError(f"{len(contexts)} contexts but {len(texts)} texts")
    max_length = model_window(lm, max_length)
    pairs = [encode_pair(lm.tokenizer, c, t, max_length) for c, t in zip(contexts, texts)]
    totals, counts = np.zeros(len(pairs)), np.array([len(t) for _, t in pairs], dtype=np.int64)
    pad = _pad_id(lm.tokenizer)
    # a pair's log-probability must not depend on its batch (--devices shards, chunked metric updates): each pair is
    # left-padded to its own bucket length and the logits are kept for a multiple of 8 positions, so every matrix
    # product has a multiple of 8 rows (see bucketed_batches and filled_rows); with "pad to the batch's longest"
    # the same pair's sum moved by up to 1.5e-5 (SmolLM2) between batches
    batches = bucketed_batches([len(c) + len(t) for c, t in pairs], batch_size, max_length)
    device = lm.device
    for batch, padded in tqdm(batches, desc="LM log-likelihood", disable=not progress, leave=False):
        most = int(max(counts[batch]))
        if most == 0:
            continue
        kept = bucket_length(most + 1, padded)  # positions whose logits are computed: >= most + 1, <= padded
        keep = kept - 1  # the last `keep` tokens get a prediction
        ids, mask, positions = _left_padded([pairs[i][0] + pairs[i][1] for i in batch], pad, padded)
        with torch.inference_mode():
            logits = lm.model(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                position_ids=positions.to(device),
                logits_to_keep=kept,
            ).logits
        targets = ids[:, -keep:].to(device)
        # one row's log-softmax at a time (it predicts the last `keep` tokens): a whole batch's would hold a second
        # [batch, keep, vocab] tensor beside the logits; each row's values are the same either way
        picked = (
            torch.stack(
                [
                    torch.log_softmax(logits[row, :-1].float(), dim=-1).gather(-1, targets[row, :, None])[:, 0]
                    for row in range(len(batch))
                ]
            )
            .cpu()
            .numpy()
        )
        del logits
        for row, index in enumerate(batch):
            n = counts[index]
            totals[index] = float(picked[row, keep - n :].sum()) if n else 0.0
    return totals, counts


def item_seed(seed: int, index: int) -> int:
    """A 63-bit seed for item ``index``: independent streams per item, reproducible from (seed, index)."""
    return int(
        np.random.SeedSequence([int(seed), int(index)]).generate_state(2, dtype=np.uint32).view(np.uint64)[0]
        >> np.uint64(1)
    )


def sample_continuations(
    lm: Any,
    prompts: Sequence[str],
    max_new_tokens: int = 40,
    top_k: int = 50,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 8,
    max_length: int = 512,
    progress: bool = False,
) -> list[str]:
    """Top-k sampled continuations (the paper decodes with k = 50), one per prompt, seeded per item.

    A row keeps drawing after it emits EOS (the draws are discarded), so its random stream never depends on
    its neighbours. The text returned is the decoded new tokens up to EOS, special tokens removed.
    """
    import torch
    from tqdm.auto import tqdm

    if max_new_tokens < 1 or top_k < 1 or temperature <= 0:
        raise ValueError("max_new_tokens and top_k must be >= 1 and temperature > 0")
    tok = lm.tokenizer
    eos, pad = tok.eos_token_id, _pad_id(tok)
    contexts = [encode_pair(tok, p, "", model_window(lm, max_length) - max_new_tokens)[0] for p in prompts]
    out: list[str] = [""] * len(prompts)
    device = lm.device
    batches = length_sorted_batches([len(c) for c in contexts], batch_size)
    for batch in tqdm(batches, desc="sampling", disable=not progress, leave=False):
        generators = [torch.Generator().manual_seed(item_seed(seed, int(i))) for i in batch]
        ids, mask, positions = _left_padded([contexts[i] for i in batch], pad)
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        new = torch.zeros((len(batch), max_new_tokens), dtype=torch.long)
        done = torch.zeros(len(batch), dtype=torch.bool)
        past, step_ids, step_pos = None, ids, positions
        with torch.inference_mode():
            for step in range(max_new_tokens):
                result = lm.model(
                    input_ids=step_ids,
                    attention_mask=mask,
                    position_ids=step_pos,
                    logits_to_keep=1,
                    **with_cache(lm.model, past),
                )
                past = returned_cache(result)
                values, indices = result.logits[:, -1].float().topk(min(top_k, result.logits.shape[-1]), dim=-1)
                probs = torch.softmax(values / temperature, dim=-1).cpu()
                picks = torch.stack([torch.multinomial(probs[r], 1, generator=g)[0] for r, g in enumerate(generators)])
                chosen = indices.cpu().gather(1, picks.unsqueeze(1)).squeeze(1)
                new[:, step] = chosen
                if eos is not None:
                    done |= chosen == eos
                if bool(done.all()):
                    break
                step_ids = chosen.unsqueeze(1).to(device)
                step_pos = step_pos[:, -1:] + 1
                mask = torch.cat([mask, torch.ones((len(batch), 1), dtype=mask.dtype, device=device)], dim=1)
        for row, index in enumerate(batch):
            tokens = new[row, : step + 1].tolist()
            if eos is not None and eos in tokens:
                tokens = tokens[: tokens.index(eos)]
            out[int(index)] = tok.decode(tokens, skip_special_tokens=True).strip()
    return out


@dataclass
class LMLikelihoodScorer:
    """GPT-PPL as a Scorer: mean token log-probability of the hypothesis under a causal LM (higher is better).

    With sources the hypothesis is scored as their continuation (BARTScore/GPTScore's conditional form);
    without, from BOS alone. An empty hypothesis has no tokens and scores -inf.

    ``relative=True`` (``lm-ratio``) subtracts the best reference's mean log-probability: a log-likelihood
    ratio of candidate to reference, so the fluency signal is measured against what a fluent text of the same
    content scores rather than on the LM's absolute scale (long, rare-word references do not look
    disfluent). This is the fluency partner MENLI's combiner can take (``menli+lm-ratio``).
    """

    model: str = "packaged:smollm2"
    batch_size: int = 8
    device: str | None = None
    progress: bool = False
    relative: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or ("lm-ratio" if self.relative else "lm-likelihood")

    def _lm(self) -> Any:
        from nlgmetrics.modelroles import load_causal_lm

        return load_causal_lm(self.model, device=self.device)

    def score(
        self, hyps: Sequence[str], refs: Sequence | None = None, srcs: Sequence[str] | None = None
    ) -> list[float]:
        from nlgmetrics.inputs import InputError, check_pairs, check_same_length, check_sources, validate_texts

        if self.relative:
            if refs is None:
                raise InputError("lm-ratio needs one reference (or a list of references) per hypothesis")
            hyps, ref_lists, checked = check_pairs(hyps, refs, srcs)
        else:
            hyps, checked = validate_texts("hyps", hyps), check_sources("srcs", srcs)
            check_same_length(hyps=hyps, srcs=checked)
        contexts = [s or "" for s in checked] if checked is not None else [""] * len(hyps)
        texts, owners = list(hyps), list(range(len(hyps)))
        if self.relative:
            for index, ref_list in enumerate(ref_lists):
                for one in ref_list:
                    texts.append(one)
                    owners.append(index)
            contexts = contexts + [contexts[i] for i in owners[len(hyps) :]]
        # each distinct (context, text) once: judged sets repeat every reference for every system
        distinct = list(dict.fromkeys(zip(contexts, texts)))
        where = {pair: i for i, pair in enumerate(distinct)}
        totals, counts = continuation_logprobs(
            self._lm(), [c for c, _ in distinct], [t for _, t in distinct], self.batch_size, progress=self.progress
        )
        means = np.where(counts > 0, totals / np.maximum(counts, 1), -np.inf)
        means = means[[where[pair] for pair in zip(contexts, texts)]]
        if not self.relative:
            return [float(m) for m in means]
        best = np.full(len(hyps), -np.inf)
        np.maximum.at(best, np.asarray(owners[len(hyps) :], dtype=np.int64), means[len(hyps) :])
        return [float(m - b) for m, b in zip(means[: len(hyps)], best)]

    def signature(self) -> str:
        lm = self._lm()
        quantity = "logprob(hyp)-max(logprob(ref))" if self.relative else "mean-token-logprob"
        return str(Signature(self.name, (("lm", f"{self.model}@{lm.hash[:12]}"), quantity), version_key="nlgmetrics"))
