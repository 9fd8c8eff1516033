"""The encode loop every encoder-based metric shares: length-sorted buckets, one forward pass each, results
scattered back by index; and the masked mean that pools token states into a sentence vector."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from nlgmetrics.modelroles.batching import bucketed_batches, token_lengths, window_cap
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, forward_precision, running_model
from nlgmetrics.truncation import note_batch

TOKENIZER_ONLY = ("special_tokens_mask", "offset_mapping")


def masked_mean(hidden: Any, attention_mask: Any) -> Any:
    """[B, T, H] -> [B, H] mean over the real tokens (differentiable; every mean-pooled embedding uses it)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def encoded_batches(
    loaded: Any,
    texts: Sequence[str],
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
    hidden_states: bool = False,
    offsets: bool = False,
    what: str = "encoder texts",
) -> Iterator[tuple[list[int], Any, Any]]:
    """Encode ``texts`` in length-sorted buckets without gradients; one ``(indices, encoding, output)`` per batch.

    Every text is padded to its own bucket's length, so what it gets never depends on the other texts of its
    batch (scores are the same whatever the batch size). Texts longer than ``max_length`` (capped at the model's
    window) are cut and counted under ``what`` (``nlgmetrics.truncation``).

    Args:
        loaded: a loaded model role (``tokenizer``, ``model``).
        texts: the texts, in any order; ``indices`` say where each batch's rows belong.
        batch_size, max_length: batching and the token cap.
        progress: a progress bar over batches.
        precision: the forward pass's (``nlgmetrics.modelroles.precision``).
        hidden_states: ask the model for every layer's states.
        offsets: the encoding carries character offsets (``offset_mapping``; a fast tokenizer is needed).
        what: the name the truncation count is kept under.

    Returns:
        An iterator of (indices into ``texts``, the tokenizer's encoding on the CPU with
        ``special_tokens_mask``, the model's output).
    """
    import torch
    from tqdm.auto import tqdm

    tokenizer, model = loaded.tokenizer, loaded.model
    max_length = window_cap(model, max_length)
    device = next(model.parameters()).device
    batches = bucketed_batches(token_lengths(tokenizer, texts, max_length), batch_size, max_length) if texts else []
    with torch.inference_mode():
        for batch, padded in tqdm(batches, desc="encode", disable=not progress, unit="batch"):
            chosen = [texts[i] for i in batch]
            enc = tokenizer(
                chosen,
                padding="max_length",
                truncation=True,
                max_length=padded,
                return_tensors="pt",
                return_special_tokens_mask=True,
                return_offsets_mapping=offsets,
            )
            note_batch(what, tokenizer, enc["attention_mask"].sum(1).tolist(), max_length, chosen)
            inputs = {k: v.to(device) for k, v in enc.items() if k not in TOKENIZER_ONLY}
            with forward_precision(device, precision):
                output = running_model(model)(**inputs, output_hidden_states=hidden_states)
            yield list(batch), enc, output
