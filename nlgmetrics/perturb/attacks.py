"""The two adversarial candidates of the MARS robustness test (Liu et al., 2021, Table 4).

- ``reorder``: a weak system whose output is not readable - ``level`` share of the candidate's tokens (the paper
  uses 50%) trade places, all other tokens stay where they were.
- ``context_sentence``: a system with no generation ability - the candidate becomes a sentence copied from the
  context (the paper "randomly retrieves a sentence from the context").

Both are pure functions ``(text, rng, level, **context) -> str`` like every perturbation of this package and
raise ``NotApplicable`` when they cannot change the candidate, so a metric never looks robust to an attack that
was not made. Tokens are whitespace words: the ROC data is pre-tokenised, so punctuation marks are tokens too.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.levels import check_share
from nlgmetrics.perturb.words import WordLayout

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace or the end.
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+[\"'”’)\]]*(?=\s|$)|$)", re.DOTALL)


def reorder(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Move ``round(level * n)`` random tokens (at least 2) so that each takes another chosen token's place.

    The chosen positions are put in a random order and rotated by one (a single cycle), so every chosen
    position receives a different position's token: exactly the chosen share of positions moves, not fewer
    by chance as with a plain shuffle. Positions whose tokens are equal words ("." and ".") may still read the
    same; if all chosen tokens are the same word the attack refuses.
    """
    share = check_share(level)
    layout = WordLayout.of(text)
    n = len(layout)
    if n < 2:
        raise NotApplicable(f"needs at least 2 tokens to reorder, text has {n}")
    k = min(n, max(2, int(np.floor(share * n + 0.5))))
    if len(set(layout.words)) < 2:
        raise NotApplicable("all tokens are the same word: reordering changes nothing")
    words = list(layout.words)
    for _ in range(100):
        positions = [int(p) for p in rng.choice(n, size=k, replace=False)]
        moved = [words[p] for p in positions]
        if len(set(moved)) >= 2:
            break
    else:
        raise NotApplicable("could not draw tokens that differ (text is almost one repeated word)")
    new = list(words)
    for j, position in enumerate(positions):
        new[positions[(j + 1) % k]] = words[position]
    return layout.replaced(new).render()


def split_sentences(text: str) -> list[str]:
    """Sentences of a plain text by final punctuation (. ! ?), stripped; no model needed.

    The MARS contexts are short story openings ("we went out . it rained ."), where punctuation-based splitting
    is exact; a parse would add a model for no gain.
    """
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def context_sentence(
    text: str, rng: np.random.Generator, level: float, *, source: str | None = None, **context: Any
) -> str:
    """The candidate becomes one random sentence of the context (``source``), copied verbatim."""
    if source is None or not source.strip():
        raise NotApplicable("sample has no context (source)")
    sentences = [s for s in split_sentences(source) if s != text.strip()]
    if not sentences:
        raise NotApplicable("every context sentence equals the candidate")
    return sentences[int(rng.integers(len(sentences)))]
