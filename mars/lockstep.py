"""Decode many rows of one causal LM together, each row feeding its own number of tokens per step.

MARS fills blanks left to right: one row may append a text block while another samples one token and a third
throws away its last guesses. On a CPU a one-token step costs about as much for 16 rows as for 1, so all rows
advance together over one shared KV cache. Rows never need equal lengths: a step's chunk is right-padded,
padding and discarded guesses stay in the cache as masked "holes", and each row's position ids count only its
real tokens, so every row sees exactly the attention it would see alone.

The cache grows by one column per step for every row, so transformers' ``DynamicLayer`` (``torch.cat`` of the
whole cache on every append, into freshly mapped memory whose pages fault in one by one) copies O(width) per
step and O(width^2) per reference. ``GrowingLayer`` writes each step into spare capacity and hands the model
views of the filled part, so attention reads the same numbers (every augmented text stays the same) and an
append costs only the new column; finished rows leave by moving the later rows down inside the buffer.
Measured (``bench/results/mars_length*.md``): on 200-word references the copy was 7-8% of the time, not the bulk;
appends fall to 1%, but attention then reads the cache from memory instead of from the copy just written, so
the whole run gains a few percent. Augmentation cost is nearly linear in reference tokens (model and LM head).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from nlgmetrics.modelroles.kvcache import returned_cache, with_cache


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values live in over-allocated buffers: appending copies only the new
    positions (the buffer grows by half when full, so reallocation copies are O(width) in total).

    ``keys``/``values`` are views of the first ``length`` positions, exactly the tensors ``DynamicLayer`` would
    hold, so attention reads the same numbers.
    """

    min_growth = 64  # spare positions at least per allocation: a short prefill still leaves room for steps

    def __init__(self) -> None:
        super().__init__()
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None
        self.length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.is_initialized = True

    @property
    def capacity(self) -> int:
        return 0 if self._key_buffer is None else self._key_buffer.shape[-2]

    def _refresh_views(self) -> None:
        assert self._key_buffer is not None and self._value_buffer is not None
        self.keys = self._key_buffer[:, :, : self.length]
        self.values = self._value_buffer[:, :, : self.length]

    def _reallocate(
        self, like_keys: torch.Tensor, like_values: torch.Tensor, capacity: int, rows: torch.Tensor | None = None
    ) -> None:
        """New buffers of ``capacity`` positions holding the filled part (of the selected ``rows``, if given)."""
        batch = like_keys.shape[0] if rows is None else rows.numel()
        keys = like_keys.new_empty((batch, like_keys.shape[1], capacity, like_keys.shape[3]))
        values = like_values.new_empty((batch, like_values.shape[1], capacity, like_values.shape[3]))
        if self.length:
            old_keys, old_values = self.keys, self.values
            if rows is not None:
                old_keys, old_values = old_keys.index_select(0, rows), old_values.index_select(0, rows)
            keys[:, :, : self.length] = old_keys
            values[:, :, : self.length] = old_values
        self._key_buffer, self._value_buffer = keys, values
        self._refresh_views()

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new positions after the filled part and return views of everything filled so far."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        need = self.length + key_states.shape[-2]
        if need > self.capacity:  # room for half as much again: a fork's copy need not grow on its first step
            self._reallocate(key_states, value_states, need + max(need // 2, self.min_growth))
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[:, :, self.length : need] = key_states
        self._value_buffer[:, :, self.length : need] = value_states
        self.length = need
        self._refresh_views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep (reorder, repeat) rows, copying only the filled positions.

        Dropping finished rows (increasing indices, the decoder's common case) moves the later rows down inside
        the buffer instead of allocating a new one: freshly allocated pages are expensive to fault in (large
        tensors come straight from mmap), and the buffer already has the room.
        """
        if self._key_buffer is None or self._value_buffer is None:
            return
        kept = [int(i) for i in indices.tolist()]
        if any(a >= b for a, b in zip(kept, kept[1:])):
            self._reallocate(self._key_buffer, self._value_buffer, self.capacity, rows=indices)
            return
        for target, source in enumerate(kept):  # source >= target: a row is read before anything overwrites it
            if source != target:
                self._key_buffer[target, :, : self.length] = self._key_buffer[source, :, : self.length]
                self._value_buffer[target, :, : self.length] = self._value_buffer[source, :, : self.length]
        self._key_buffer, self._value_buffer = self._key_buffer[: len(kept)], self._value_buffer[: len(kept)]
        self._refresh_views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self._key_buffer is not None:
            rows = torch.arange(self._key_buffer.shape[0], device=self._key_buffer.device)
            self.batch_select_indices(rows.repeat_interleave(repeats))

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.batch_select_indices(beam_idx)

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` positions (transformers' convention: a negative count)."""
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative number of positions to remove")
        if self._key_buffer is not None and tokens_to_remove:
            self.length = max(0, self.length + tokens_to_remove)
            self._refresh_views()

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        self.length = 0
        super().reset()


def new_cache(model: Any, growing: bool = True) -> DynamicCache:
    """An empty cache for ``model``: ``GrowingLayer`` for every plain full-attention layer, else transformers' own.

    Layer kinds other than ``DynamicLayer`` (sliding windows, linear attention, KV sharing) keep their own class:
    they have their own storage rules and the lockstep decoder never needed them to be fast.
    """
    config = getattr(model, "config", None)
    cache = DynamicCache(config=config) if config is not None else DynamicCache()
    if not growing:
        return cache
    if not cache.layers:  # no per-layer types known: layers are created on first use
        cache.layer_class_to_replicate = GrowingLayer
        return cache
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


class LockstepBatch:
    """Rows sharing one KV cache. ``step`` feeds chunks and returns the last hidden states of the real tokens."""

    def __init__(self, model: Any, pad_id: int, growing_cache: bool = True) -> None:
        self.model = model
        self.growing_cache = growing_cache  # False = transformers' DynamicCache (torch.cat per step), to compare
        self.base = model.base_model
        self.pad_id = int(pad_id)
        self.device = next(model.parameters()).device
        self.cache: Any = None
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)
        self.next_pos = torch.zeros(0, dtype=torch.long, device=self.device)
        self.real: list[list[int]] = []  # physical cache index of each real token, per row

    @property
    def n_rows(self) -> int:
        return len(self.real)

    def step(self, chunks: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """Feed ``chunks[r]`` to row ``r`` (the first call defines the rows); returns [len(chunk), H] per row."""
        if self.cache is not None and len(chunks) != self.n_rows:
            raise ValueError(f"{len(chunks)} chunks for {self.n_rows} rows")
        if self.cache is None:
            self.real = [[] for _ in chunks]
            self.mask = torch.zeros((len(chunks), 0), dtype=torch.long, device=self.device)
            self.next_pos = torch.zeros(len(chunks), dtype=torch.long, device=self.device)
            self.cache = new_cache(self.model, self.growing_cache)
        width = max(1, max(len(c) for c in chunks))
        ids = torch.full((len(chunks), width), self.pad_id, dtype=torch.long)
        new_mask = torch.zeros((len(chunks), width), dtype=torch.long)
        for r, chunk in enumerate(chunks):
            if chunk:
                ids[r, : len(chunk)] = torch.as_tensor(list(chunk), dtype=torch.long)
                new_mask[r, : len(chunk)] = 1
        ids, new_mask = ids.to(self.device), new_mask.to(self.device)
        positions = self.next_pos.unsqueeze(1) + torch.arange(width, device=self.device).unsqueeze(0)
        mask = torch.cat([self.mask, new_mask], dim=1)
        start = self.mask.shape[1]
        with torch.no_grad():
            out = self.base(
                input_ids=ids, attention_mask=mask, position_ids=positions, **with_cache(self.base, self.cache)
            )
        self.cache = returned_cache(out)
        self.mask = mask
        hidden = out.last_hidden_state
        results = []
        for r, chunk in enumerate(chunks):
            n = len(chunk)
            self.real[r].extend(range(start, start + n))
            self.next_pos[r] += n
            results.append(hidden[r, :n])
        return results

    def hide_last(self, row: int, count: int) -> None:
        """Forget the row's last ``count`` real tokens (rejected guesses): mask them and rewind the position."""
        if count <= 0:
            return
        if count > len(self.real[row]):
            raise ValueError(f"row {row} has only {len(self.real[row])} tokens")
        dropped = self.real[row][-count:]
        del self.real[row][-count:]
        self.mask[row, dropped] = 0
        self.next_pos[row] -= count

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Keep (and reorder, or repeat) rows: finished rows stop costing compute, a shared prefix becomes copies."""
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask = self.mask[index]
        self.next_pos = self.next_pos[index]
        self.real = [list(self.real[r]) for r in rows]

    def fork(self, row: int, copies: int) -> "LockstepBatch":
        """A new batch holding ``copies`` independent copies of one row (for side computations)."""
        other = LockstepBatch(self.model, self.pad_id, self.growing_cache)
        index = torch.full((copies,), row, dtype=torch.long, device=self.device)
        cache = new_cache(self.model, self.growing_cache)
        for layer_index, layer in enumerate(self.cache.layers):
            cache.update(layer.keys[index], layer.values[index], layer_index)  # indexing copies
        other.cache = cache
        other.mask = self.mask[index].clone()
        other.next_pos = self.next_pos[index].clone()
        other.real = [list(self.real[row]) for _ in range(copies)]
        return other
