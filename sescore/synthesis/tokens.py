"""Word-level tokens: the unit that the budget table, span lengths and edit positions count.

The original counted XLM-R sub-words for MLM edits and kept a second table of mBART sub-words that was never
updated. Here every filler (masked LM, seq2seq, causal LM, each with its own tokenizer) must respect one table,
so positions are counted in a tokenizer-independent unit: words and single punctuation marks. Each token
remembers whether a space preceded it, so ``join_tokens(split_tokens(t)) == t`` for whitespace-normalised text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# numbers with separators (1,000 3.5 12:30), words with inner apostrophes/hyphens/dots (don't, 28-year-old,
# U.S), or one non-space character that is not a word character (punctuation, symbols, stray combining marks).
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|\w+(?:['’\-.]\w+)*|[^\w\s]")
_CLOSING = frozenset(".,;:!?%)]}’”'\"»…")


class Token(NamedTuple):
    text: str
    space_before: bool


def normalize_whitespace(text: str) -> str:
    """Collapse runs of whitespace to one space (the original pre-processing), so tokens round-trip exactly."""
    return " ".join(text.split())


def split_tokens(text: str) -> list[Token]:
    """Tokens of ``text`` with their spacing; covers every non-space character."""
    tokens = []
    previous_end = 0
    for match in _TOKEN.finditer(text):
        tokens.append(Token(match.group(), match.start() > previous_end))
        previous_end = match.end()
    return tokens


def join_tokens(tokens: list[Token]) -> str:
    """Inverse of :func:`split_tokens`; the first token never gets a leading space."""
    parts = []
    for index, token in enumerate(tokens):
        if index and token.space_before:
            parts.append(" ")
        parts.append(token.text)
    return "".join(parts)


def is_closing_punctuation(text: str) -> bool:
    """Marks that attach to the word before them; an inserted comma should read ``word,`` not ``word ,``."""
    return bool(text) and all(ch in _CLOSING for ch in text)


def words_of(fill_text: str) -> list[Token]:
    """Tokens of a model's fill, spaced the way they would be written after a word."""
    tokens = split_tokens(normalize_whitespace(fill_text))
    if tokens:
        tokens[0] = Token(tokens[0].text, not is_closing_punctuation(tokens[0].text))
    return tokens


__all__ = ["Token", "is_closing_punctuation", "join_tokens", "normalize_whitespace", "split_tokens", "words_of"]
