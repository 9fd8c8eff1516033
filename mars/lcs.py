"""Longest common subsequence between context and reference words.

MARS makes "context-carrying" reference words expensive to mask: the words of the longest common subsequence
of context and reference keep the augmented references anchored to what the context already says.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def lcs_positions(context: Sequence[str], reference: Sequence[str]) -> list[int]:
    """Ascending positions in ``reference`` of one longest common subsequence with ``context``.

    Among several LCSs the backtracking prefers matches late in both sequences (a fixed, documented tie rule).
    """
    n, m = len(context), len(reference)
    if n == 0 or m == 0:
        return []
    table = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(1, n + 1):
        word = context[i - 1]
        row, previous = table[i], table[i - 1]
        for j in range(1, m + 1):
            if word == reference[j - 1]:
                row[j] = previous[j - 1] + 1
            else:
                row[j] = max(previous[j], row[j - 1])
    positions: list[int] = []
    i, j = n, m
    while i > 0 and j > 0:
        if context[i - 1] == reference[j - 1]:
            positions.append(j - 1)
            i -= 1
            j -= 1
        elif table[i - 1, j] >= table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return positions[::-1]
