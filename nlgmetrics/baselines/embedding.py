"""Token embeddings from an encoder role, batched and length-sorted, for BERTScore and cosine baselines."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nlgmetrics.modelroles.batching import bucketed_batches, token_lengths, window_cap
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, forward_precision, running_model
from nlgmetrics.truncation import note_batch


def padded_batches(
    tokenizer: Any, texts: Sequence[str], batch_size: int, max_length: int
) -> list[tuple[np.ndarray, int]]:
    """Longest first; each text padded to its own bucket length, so its embedding never depends on its batch."""
    if not len(texts):
        return []
    return bucketed_batches(token_lengths(tokenizer, texts, max_length), batch_size, max_length)


def token_embeddings(
    loaded: Any,
    texts: Sequence[str],
    layer: int | None = None,
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> list[np.ndarray]:
    """Per text, a [tokens, hidden] array of contextual embeddings without special tokens.

    ``layer`` indexes ``hidden_states`` (None = last layer); BERTScore picks a model-specific layer.
    ``precision``: the forward pass's (``nlgmetrics.modelroles.precision``); the arrays are float32 either way.
    """
    import torch
    from tqdm.auto import tqdm

    tokenizer, model = loaded.tokenizer, loaded.model
    max_length = window_cap(model, max_length)
    device = next(model.parameters()).device
    out: list[np.ndarray | None] = [None] * len(texts)
    with torch.inference_mode():
        for batch, padded in tqdm(
            padded_batches(tokenizer, texts, batch_size, max_length), desc="encode", disable=not progress, unit="batch"
        ):
            enc = tokenizer(
                [texts[i] for i in batch],
                padding="max_length",
                truncation=True,
                max_length=padded,
                return_tensors="pt",
                return_special_tokens_mask=True,
            )
            special = enc.pop("special_tokens_mask").bool()
            note_batch(
                "encoder texts", tokenizer, enc["attention_mask"].sum(1).tolist(), max_length, [texts[i] for i in batch]
            )
            enc = enc.to(device)
            with forward_precision(device, precision):
                result = running_model(model)(**enc, output_hidden_states=layer is not None)
            hidden = result.hidden_states[layer] if layer is not None else result.last_hidden_state
            keep = enc["attention_mask"].bool().cpu() & ~special
            hidden = hidden.float().cpu()
            for row, index in enumerate(batch):
                vectors = hidden[row][keep[row]]
                if vectors.shape[0] == 0:  # text of only special tokens: fall back to all positions
                    vectors = hidden[row][enc["attention_mask"][row].bool().cpu()]
                out[index] = vectors.numpy()
    return out  # type: ignore[return-value]


def mean_pooled(
    loaded: Any,
    texts: Sequence[str],
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
) -> np.ndarray:
    """[N, hidden] mean of token embeddings (all-MiniLM-L6-v2's own pooling; SEScore's and MARS's too).

    A model whose folder names a ``sentence_prefix`` (e5: ``query: ``) gets it before every text: e5 was trained
    with prefixes and its model card asks for them. Token-level matching (``token_embeddings``, BERTScore) never
    adds it: the prefix's tokens would become matchable tokens of every text.
    """
    import torch
    from tqdm.auto import tqdm

    prefix = getattr(loaded, "sentence_prefix", "")
    if prefix:
        texts = [prefix + text for text in texts]
    tokenizer, model = loaded.tokenizer, loaded.model
    max_length = window_cap(model, max_length)
    device = next(model.parameters()).device
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for batch, padded in tqdm(
            padded_batches(tokenizer, texts, batch_size, max_length), desc="encode", disable=not progress, unit="batch"
        ):
            enc = tokenizer(
                [texts[i] for i in batch],
                padding="max_length",
                truncation=True,
                max_length=padded,
                return_tensors="pt",
            ).to(device)
            note_batch(
                "encoder texts", tokenizer, enc["attention_mask"].sum(1).tolist(), max_length, [texts[i] for i in batch]
            )
            with forward_precision(device, precision):
                hidden = running_model(model)(**enc).last_hidden_state.float()  # pooled in float32 (forward_precision)
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out[batch] = pooled.float().cpu().numpy()
    return out
