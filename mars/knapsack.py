"""Exact 0/1 knapsack by dynamic programming with backtracking (MARS Algorithm 1).

Choosing which reference words to mask is a knapsack: each word has a mask priority (value) and a mask cost
(weight); the budget is lambda * N. References are short (tens of words, integer costs), so the exact
O(N * W) table is cheap and no approximation is needed.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def solve_knapsack(values: Sequence[float], costs: Sequence[int], capacity: int) -> list[int]:
    """Indices (ascending) of the item subset with maximal total value and total cost <= ``capacity``.

    Ties are broken deterministically: an item is taken only when it strictly improves the value, so among
    optimal subsets the one found by the backtracking (which prefers leaving later items out) is returned.
    """
    if len(values) != len(costs):
        raise ValueError(f"values and costs differ in length: {len(values)} != {len(costs)}")
    if isinstance(capacity, bool) or int(capacity) != capacity:
        raise ValueError(f"capacity must be an integer, got {capacity!r}")
    capacity = int(capacity)
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    for index, (value, cost) in enumerate(zip(values, costs)):
        if isinstance(cost, bool) or int(cost) != cost or cost < 0:
            raise ValueError(f"cost of item {index} must be a non-negative integer, got {cost!r}")
        if not math.isfinite(float(value)):
            raise ValueError(f"value of item {index} must be finite, got {value!r}")
    n = len(values)
    table = np.zeros((n + 1, capacity + 1), dtype=np.float64)
    taken = np.zeros((n + 1, capacity + 1), dtype=bool)
    for i in range(1, n + 1):
        value, cost = float(values[i - 1]), int(costs[i - 1])
        table[i] = table[i - 1]
        if cost <= capacity:
            with_item = table[i - 1, : capacity + 1 - cost] + value
            better = with_item > table[i - 1, cost:]
            table[i, cost:][better] = with_item[better]
            taken[i, cost:] = better
    chosen: list[int] = []
    j = capacity
    for i in range(n, 0, -1):
        if taken[i, j]:
            chosen.append(i - 1)
            j -= int(costs[i - 1])
    return sorted(chosen)
