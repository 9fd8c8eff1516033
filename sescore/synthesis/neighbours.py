"""Retrieval edits in the SEScore2 way: borrow one differing span from the sentence's nearest neighbour.

Why: a language model's fill at a random position is fluent but often far from what a translation or summary
system writes. SEScore2 (Xu et al., 2023) makes errors "look real" by retrieving sentences close to the reference
and inserting or substituting the material where they differ: a system that gets a sentence wrong tends to write a
nearby sentence. Here the neighbour of each input sentence is the most similar *other* sentence of the same input
file (cosine of mean-pooled embeddings of an encoder the toolkit already loads); an edit aligns the current tokens
with the neighbour's (``difflib`` opcodes on token texts) and applies one differing chunk, drawn with the edit's own
seed. The chunk then goes through the same budget table and NLI severity as every other edit.
"""

from __future__ import annotations

import difflib
from typing import Any, Sequence

import numpy as np

from sescore.synthesis.rules import RuleEdit
from sescore.synthesis.tokens import Token


def nearest_others(vectors: np.ndarray) -> np.ndarray:
    """For each row, the index of the most cosine-similar *other* row; -1 when there is none. Ties go to the
    lower index. (Callers pass distinct texts: a duplicate line would have nothing to lend.)

    Args:
        vectors: [N, H] embeddings.

    Returns:
        [N] int64 neighbour indices.
    """
    n = len(vectors)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    unit = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    for start in range(0, n, 1024):  # [1024, N] similarity rows keep memory flat for large inputs
        sim = unit[start : start + 1024] @ unit.T
        rows = np.arange(start, min(start + 1024, n))
        sim[rows - start, rows] = -np.inf
        out[rows] = sim.argmax(axis=1)
    return out


def neighbour_texts(texts: Sequence[str], loaded: Any, batch_size: int = 64) -> list[str | None]:
    """Each text's nearest other text of ``texts`` under the encoder ``loaded`` (None: no other distinct text).

    Args:
        texts: the whole input (every sentence the run may read, so neighbours do not depend on --limit).
        loaded: an encoder (``nlgmetrics.modelroles.load_encoder``).
        batch_size: texts per encoder call.

    Returns:
        One neighbour text (or None) per input text.
    """
    from nlgmetrics.baselines.embedding import mean_pooled

    unique = list(dict.fromkeys(texts))
    index = nearest_others(mean_pooled(loaded, unique, batch_size)) if unique else np.zeros(0, dtype=np.int64)
    by_text = {text: (unique[j] if j >= 0 else None) for text, j in zip(unique, index)}
    return [by_text[text] for text in texts]


def neighbour_edit(tokens: Sequence[Token], neighbour: Sequence[Token], seed: int, max_span: int) -> RuleEdit | str:
    """One differing chunk of ``tokens`` against ``neighbour``, as an edit that puts the neighbour's material there.

    Args:
        tokens: the variant's current tokens.
        neighbour: the neighbour sentence's tokens.
        seed: the edit's own seed (its draw depends on nothing else).
        max_span: chunks wider than this on either side are not offered.

    Returns:
        The edit (replace, insert or delete), or the reason there is none.
    """
    a, b = [t.text for t in tokens], [t.text for t in neighbour]
    chunks = [
        (tag, i1, i2, j1, j2)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        if tag != "equal" and max(i2 - i1, j2 - j1) <= max_span
    ]
    if not chunks:
        return "not applicable: no differing span within neighbours.max_span"
    tag, i1, i2, j1, j2 = chunks[int(np.random.default_rng(seed).integers(len(chunks)))]
    return RuleEdit(tag, i1, i2 - i1, tuple(neighbour[j1:j2]))


__all__ = ["nearest_others", "neighbour_edit", "neighbour_texts"]
