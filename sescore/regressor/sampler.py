"""Batches of similar length in a seeded random order, DDP-ready.

Random batches pad every pair to the longest member; grouping by length cuts padded compute substantially.
The class follows ``torch.utils.data.BatchSampler``'s signature (``sampler``, ``batch_size``, ``drop_last``) so
that Lightning can swap its index sampler for a ``DistributedSampler`` under DDP: each rank then buckets its own
shard, and the seeded epoch order comes from whichever index sampler is plugged in.
``random_state``/``set_random_state``/``skip_next`` let ``nlgmetrics.resume.ResumableDataLoader`` continue an
interrupted epoch where it stopped.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
from torch.utils.data import BatchSampler, Sampler


class LengthBucketBatchSampler(BatchSampler):
    """Take ``batch_size * pool`` indices from ``sampler``, sort them by length, cut batches, shuffle those batches.

    Every chunk but the last holds whole batches, so the number of batches equals ``BatchSampler``'s.
    """

    def __init__(
        self,
        sampler: Sampler[int],
        batch_size: int,
        drop_last: bool,
        lengths: Sequence[int],
        pool: int = 50,
        seed: int = 0,
    ) -> None:
        super().__init__(sampler, batch_size, drop_last)
        if pool < 1:
            raise ValueError(f"pool must be >= 1, got {pool}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.pool = pool
        self.seed = seed
        self._iteration = 0
        self.skip_next = 0  # batches the next epoch leaves out at its start (a resumed run saw them)

    def random_state(self) -> dict[str, Any]:
        """What decides the next epoch's order: the epoch counter and the index sampler's generator, if any."""
        generator = getattr(self.sampler, "generator", None)
        state: dict[str, Any] = {"iteration": self._iteration}
        if generator is not None:
            state["generator"] = generator.get_state()
        return state

    def set_random_state(self, state: dict[str, Any]) -> None:
        self._iteration = int(state["iteration"])
        generator = getattr(self.sampler, "generator", None)
        if generator is not None and "generator" in state:
            generator.set_state(state["generator"])

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip_next = self.skip_next, 0
        for number, batch in enumerate(self._epoch()):
            if number >= skip:
                yield batch

    def _epoch(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self._iteration])
        self._iteration += 1
        span = self.batch_size * self.pool
        indices = list(iter(self.sampler))
        for start in range(0, len(indices), span):
            chunk = np.asarray(indices[start : start + span], dtype=np.int64)
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches = [chunk[i : i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size)]
            if self.drop_last and batches and len(batches[-1]) < self.batch_size:
                batches.pop()
            for b in rng.permutation(len(batches)):
                yield batches[int(b)]
