"""Most frequent word n-grams of a corpus: the material of the frequent n-gram test.

Language models score sequences of frequent n-grams as likely; a text stitched from them is worthless, so a
metric that prefers it over the gold hypothesis has a blind spot (paper, section 5.3).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable


def top_ngrams(lines: Iterable[str], n: int = 4, k: int = 50, lowercase: bool = True) -> list[str]:
    """The ``k`` most frequent whitespace-word ``n``-grams (ties broken alphabetically, so results are stable)."""
    if n < 1 or k < 1:
        raise ValueError(f"n and k must be positive, got n={n}, k={k}")
    counts: Counter[str] = Counter()
    for line in lines:
        words = (line.lower() if lowercase else line).split()
        counts.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    if not counts:
        raise ValueError(f"corpus has no {n}-gram")
    return [gram for gram, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]
