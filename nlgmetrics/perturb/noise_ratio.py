"""The blind-spot paper's noise ratio: word-level Levenshtein(h', h) / len(h), halved for switch noises.

Levenshtein cannot express a transposition, so a swap of two words costs two edits; halving the ratio for
swap/switch noises keeps their levels comparable with deletions (paper, footnote 7).
"""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein


def noise_ratio(original: str, perturbed: str, halve: bool = False) -> float:
    """Word-level edit distance of ``perturbed`` from ``original`` over the number of original words."""
    words = original.split()
    if not words:
        raise ValueError("noise ratio is undefined for a text without words")
    ratio = Levenshtein.distance(words, perturbed.split()) / len(words)
    return ratio / 2.0 if halve else ratio
