"""Token embeddings from an encoder role, batched and length-sorted, for BERTScore and cosine baselines."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nlgmetrics.modelroles.batching import bucketed_batches, token_lengths
from nlgmetrics.modelroles.encode import encoded_batches, masked_mean
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION


def padded_batches(
    tokenizer: Any, texts: Sequence[str], batch_size: int, max_length: int
) -> list[tuple[np.ndarray, int]]:
    """Longest first; each text padded to its own bucket length, so its embedding never depends on its batch."""
    if not len(texts):
        return []
    return bucketed_batches(token_lengths(tokenizer, texts, max_length), batch_size, max_length)


def _prompt_mask(enc: Any, prompt: str) -> Any:
    """True for the tokens that cover a character of the text after ``prompt`` (prompt tokens are context only).

    A token that straddles the boundary (a prompt's trailing space merged into the text's first word) belongs to
    the text.
    """
    return enc["offset_mapping"][..., 1] > len(prompt)


def token_embeddings_by_layer(
    loaded: Any,
    texts: Sequence[str],
    layers: Sequence[int | None],
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
    prompt: str = "",
) -> dict[int | None, list[np.ndarray]]:
    """Per layer, per text, a [tokens, hidden] array of contextual embeddings without special tokens.

    Several layers come from one forward pass, so a layer search costs one encoding of the texts.

    Args:
        loaded: an encoder role (``nlgmetrics.modelroles.load_encoder``).
        texts: the texts; each is encoded on its own (padding never changes its vectors).
        layers: indices into ``hidden_states`` (0 = embeddings); None is the model's final output
            (``last_hidden_state``, after a final norm where the model has one).
        batch_size, max_length: batching; texts are cut at ``max_length`` tokens (counted, see truncation).
        progress: a progress bar over batches.
        precision: the forward pass's (``nlgmetrics.modelroles.precision``); the arrays are float32 either way.
        prompt: text put before every text (an instruction prompt such as EmbeddingGemma's); its tokens are
            context for the text's tokens and are never returned. Needs a fast tokenizer.

    Returns:
        {layer: [array per text]} for every requested layer.
    """
    if prompt and not getattr(loaded.tokenizer, "is_fast", False):
        raise ValueError(f"a prompt needs a fast tokenizer (character offsets); {loaded.spec!r} has a slow one")
    shown = [prompt + text for text in texts] if prompt else list(texts)
    wanted = list(dict.fromkeys(layers))
    needs_states = any(layer is not None for layer in wanted)
    out: dict[int | None, list[np.ndarray | None]] = {layer: [None] * len(texts) for layer in wanted}
    for batch, enc, result in encoded_batches(
        loaded, shown, batch_size, max_length, progress, precision, needs_states, offsets=bool(prompt)
    ):
        attention = enc["attention_mask"].bool()
        keep = attention & ~enc["special_tokens_mask"].bool()
        if prompt:
            keep &= _prompt_mask(enc, prompt)
        for layer in wanted:
            hidden = (result.hidden_states[layer] if layer is not None else result.last_hidden_state).float().cpu()
            for row, index in enumerate(batch):
                vectors = hidden[row][keep[row]]
                if vectors.shape[0] == 0:  # text of only special (or prompt) tokens: fall back to all positions
                    vectors = hidden[row][attention[row]]
                out[layer][index] = vectors.numpy()
    return out  # type: ignore[return-value]


def token_embeddings(
    loaded: Any,
    texts: Sequence[str],
    layer: int | None = None,
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
    prompt: str = "",
) -> list[np.ndarray]:
    """Per text, a [tokens, hidden] array of contextual embeddings without special tokens (one layer of
    ``token_embeddings_by_layer``; ``layer`` None = the model's final output). BERTScore matches these."""
    return token_embeddings_by_layer(loaded, texts, [layer], batch_size, max_length, progress, precision, prompt)[layer]


def mean_pooled(
    loaded: Any,
    texts: Sequence[str],
    batch_size: int = 64,
    max_length: int = 256,
    progress: bool = False,
    precision: str = DEFAULT_PRECISION,
    prefix: bool = True,
    what: str = "encoder texts",
) -> np.ndarray:
    """[N, hidden] mean of the last layer's token embeddings (all-MiniLM-L6-v2's own pooling; SEScore's and MARS's).

    A model whose folder names a ``sentence_prefix`` (e5: ``query: ``) gets it before every text unless ``prefix``
    is False: e5 was trained with prefixes and its model card asks for them. Token-level matching
    (``token_embeddings``, BERTScore) never adds it: the prefix's tokens would become matchable tokens of every
    text. ``what`` names the texts in the truncation count.
    """
    sentence_prefix = getattr(loaded, "sentence_prefix", "") if prefix else ""
    if sentence_prefix:
        texts = [sentence_prefix + text for text in texts]
    out = np.zeros((len(texts), loaded.model.config.hidden_size), dtype=np.float32)
    for batch, enc, result in encoded_batches(loaded, texts, batch_size, max_length, progress, precision, what=what):
        hidden = result.last_hidden_state.float()  # pooled in float32 (forward_precision)
        out[batch] = masked_mean(hidden, enc["attention_mask"].to(hidden.device)).cpu().numpy()
    return out
