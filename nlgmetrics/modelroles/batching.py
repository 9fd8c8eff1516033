"""Length-sorted batching shared by every model call: sort longest first, batch, restore order by index."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Index batches over items sorted longest first, so padding is small and OOM shows up on batch one.

    Callers write results back with ``out[batch] = ...``, which restores the input order.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
