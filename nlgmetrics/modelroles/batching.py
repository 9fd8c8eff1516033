"""Length-sorted batching shared by every model call: sort longest first, batch, restore order by index."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Index batches over items sorted longest first, so padding is small and OOM shows up on batch one.

    Callers write results back with ``out[batch] = ...``, which restores the input order.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


PAD_MULTIPLE = 8


def bucket_length(length: int, cap: int, multiple: int = PAD_MULTIPLE) -> int:
    """The padded length a text always gets: its own length rounded up to ``multiple``, at most ``cap``."""
    return max(1, min(cap, -(-int(length) // multiple) * multiple))


def bucketed_batches(
    lengths: Sequence[int], batch_size: int, cap: int, multiple: int = PAD_MULTIPLE
) -> list[tuple[np.ndarray, int]]:
    """``(indices, padded_length)`` batches in which every item is padded to its own bucket length.

    Why: with plain "pad to the longest in the batch", a text's padded length depends on its neighbours, and the
    reductions over the sequence (attention softmax, mean pooling) then add in a different order, so the same
    text scores differently in the last bits depending on batch composition. Padding each text to a length that
    depends only on the text makes a score identical whatever the batch size, chunking or number of processes
    (matrix products on CPU then compute each row independently of how many rows there are, given MKL's strict
    mode that ``import nlgmetrics`` sets; see ``nlgmetrics.parallel``). Longest bucket first,
    like ``length_sorted_batches``; the cost is at most ``multiple - 1`` padding tokens per text.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    buckets = np.asarray([bucket_length(n, cap, multiple) for n in lengths], dtype=np.int64)
    order = np.lexsort((np.arange(len(buckets)), -np.asarray(lengths, dtype=np.int64), -buckets))
    out: list[tuple[np.ndarray, int]] = []
    start = 0
    while start < len(order):
        size = int(buckets[order[start]])
        stop = start
        while stop < len(order) and stop - start < batch_size and buckets[order[stop]] == size:
            stop += 1
        out.append((order[start:stop], size))
        start = stop
    return out


ROW_MULTIPLE = 8


def filled_rows(batch: np.ndarray, multiple: int = ROW_MULTIPLE) -> np.ndarray:
    """``batch`` followed by copies of its first index, up to a multiple of ``multiple`` rows.

    Why: CPU matrix kernels pick their code path by the number of rows, and the paths round differently. A head on
    1 to 3 pooled vectors, or a one-output head on a row count not divisible by 4, gives other last bits than the
    same rows among 8, and on some CPUs MKL's strict mode does not change that (AMD EPYC with AVX-512, MKL 2024.2,
    measured). Token-level products are safe (``bucketed_batches`` pads lengths to multiples of 8, so their row
    counts are too); a head on one vector per text is not, unless its batch is filled like this. Callers keep the
    first ``len(batch)`` outputs; the copies cost at most ``multiple - 1`` rows per batch.
    """
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1, got {multiple}")
    batch = np.asarray(batch)
    if not len(batch):
        return batch
    return np.concatenate([batch, np.repeat(batch[:1], (-len(batch)) % multiple)])


def fill_vector_rows(model: Any) -> None:
    """Make every linear layer of ``model`` that gets one vector per text run on a multiple of ``ROW_MULTIPLE`` rows.

    A transformer's own layers see [batch, tokens, hidden] inputs, whose row count (batch x bucketed length) is
    already a multiple of 8; its pooler and classifier head see [batch, hidden], whose row count is the batch's.
    Hooks on each ``nn.Linear`` fill such 2-D inputs as ``filled_rows`` fills a batch and drop the copies' outputs,
    so a head rounds each text the same whatever its batch, at the cost of a few head rows instead of a few whole
    texts through the encoder. Applied once per model (a flag on it); outputs are unchanged where the row count
    already was a multiple.
    """
    from torch import nn

    if getattr(model, "_nlgmetrics_filled_rows", False):
        return
    for module in model.modules():
        if isinstance(module, nn.Linear) and not hasattr(module, "_nlgmetrics_rows"):
            module._nlgmetrics_rows = None  # real rows of the call in flight, when its input was filled
            module.register_forward_pre_hook(_fill_before)
            module.register_forward_hook(_cut_after)
    model._nlgmetrics_filled_rows = True


def _fill_before(module: Any, args: tuple) -> tuple | None:
    import torch

    x = args[0] if args else None
    module._nlgmetrics_rows = None
    if x is None or x.dim() != 2 or not len(x) or len(x) % ROW_MULTIPLE == 0:
        return None
    module._nlgmetrics_rows = len(x)
    return (x[torch.as_tensor(filled_rows(np.arange(len(x))), device=x.device)], *args[1:])


def _cut_after(module: Any, args: tuple, output: Any) -> Any:
    rows = module._nlgmetrics_rows
    if rows is None:
        return None
    module._nlgmetrics_rows = None
    return output[:rows]


LENGTH_CHUNK = 256


def token_lengths(
    tokenizer: object,
    texts: Sequence[str],
    cap: int | None,
    pairs: Sequence[str] | None = None,
    chunk: int = LENGTH_CHUNK,
) -> list[int]:
    """Encoded length of each text (or text pair) with special tokens, truncated at ``cap`` (``None``: untruncated).

    Tokenised ``chunk`` texts at a time, keeping only the lengths: a fast tokenizer builds a full encoding per
    text (tokens, offsets and, under truncation, the overflowing pieces), and for thousands of paragraphs these
    held at once cost ~360 MB per 1,000 paragraph pairs that the allocator never gave back (measured on TED
    paragraphs); chunking bounds that to one chunk's worth.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(pairs)} pair texts")
    truncation: bool | str = False if cap is None else ("longest_first" if pairs is not None else True)
    lengths: list[int] = []
    for start in range(0, len(texts), chunk):
        encoded = tokenizer(
            list(texts[start : start + chunk]),  # type: ignore[operator]
            None if pairs is None else list(pairs[start : start + chunk]),
            add_special_tokens=True,
            truncation=truncation,
            max_length=cap,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )
        lengths += [len(ids) for ids in encoded["input_ids"]]
    return lengths


def window_cap(model: object, max_length: int) -> int:
    """``max_length`` capped by the model's position table (a longer request would crash inside the model)."""
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if not positions:
        return max_length
    offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert") else 0  # padding_idx
    return max(8, min(max_length, int(positions) - offset))
