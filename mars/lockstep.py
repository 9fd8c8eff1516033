"""Decode many rows of one causal LM together, each row feeding its own number of tokens per step.

MARS fills blanks left to right: one row may append a text block while another samples one token and a third
throws away its last guesses. On a CPU a one-token step costs about as much for 16 rows as for 1, so all rows
advance together over one shared KV cache. Rows never need equal lengths: a step's chunk is right-padded,
padding and discarded guesses stay in the cache as masked "holes", and each row's position ids count only its
real tokens, so every row sees exactly the attention it would see alone.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch


class LockstepBatch:
    """Rows sharing one KV cache. ``step`` feeds chunks and returns the last hidden states of the real tokens."""

    def __init__(self, model: Any, pad_id: int) -> None:
        self.model = model
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
                input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=self.cache, use_cache=True
            )
        self.cache = out.past_key_values
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
        other = LockstepBatch(self.model, self.pad_id)
        index = torch.full((copies,), row, dtype=torch.long, device=self.device)
        cache = type(self.cache)()
        for layer_index, layer in enumerate(self.cache.layers):
            cache.update(layer.keys[index].clone(), layer.values[index].clone(), layer_index)
        other.cache = cache
        other.mask = self.mask[index].clone()
        other.next_pos = self.next_pos[index].clone()
        other.real = [list(self.real[row]) for _ in range(copies)]
        return other
