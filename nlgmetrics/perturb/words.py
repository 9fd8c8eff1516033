"""Whitespace words with their layout, for the perturbations the paper defines on ``text.split()``.

Keeping the whitespace that followed each word lets a perturbation drop or move words without flattening the
line breaks of a paragraph, and makes "no edit" round-trip to the identical string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Sequence

_WORD_OR_SPACE = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class WordLayout:
    """``lead`` + word_0 + sep_0 + word_1 + sep_1 ... (sep_i is the whitespace after word i)."""

    lead: str
    words: tuple[str, ...]
    seps: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> "WordLayout":
        pieces = _WORD_OR_SPACE.findall(text)
        lead = ""
        if pieces and pieces[0].isspace():
            lead = pieces.pop(0)
        words, seps = [], []
        for piece in pieces:
            if piece.isspace():
                seps[-1] = piece
            else:
                words.append(piece)
                seps.append("")
        return cls(lead, tuple(words), tuple(seps))

    def __len__(self) -> int:
        return len(self.words)

    def render(self) -> str:
        return self.lead + "".join(w + s for w, s in zip(self.words, self.seps))

    def replaced(self, words: Sequence[str]) -> "WordLayout":
        """Same layout, new words in the same slots (swaps, shuffles, substitutions)."""
        if len(words) != len(self.words):
            raise ValueError("replaced() keeps the number of words")
        return WordLayout(self.lead, tuple(words), self.seps)

    def without(self, drop: Collection[int]) -> "WordLayout":
        """Drop words by index; the text keeps the trailing whitespace of the original last word."""
        keep = [i for i in range(len(self.words)) if i not in drop]
        words = [self.words[i] for i in keep]
        seps = [self.seps[i] for i in keep]
        if seps:
            seps[-1] = self.seps[-1]
        return WordLayout(self.lead, tuple(words), tuple(seps))

    def with_inserted(self, after: int, word: str) -> "WordLayout":
        """Insert ``word`` after word ``after`` (or at the start for -1), separated by one space."""
        words = list(self.words)
        seps = list(self.seps)
        if after < 0:
            words.insert(0, word)
            seps.insert(0, " ")
        else:
            words.insert(after + 1, word)
            seps.insert(after + 1, seps[after])
            seps[after] = " "
        return WordLayout(self.lead, tuple(words), tuple(seps))


def match_case(new: str, like: str) -> str:
    """Give ``new`` the capitalisation pattern of ``like`` (UPPER, Title or as is)."""
    if not new or not like:
        return new
    if like.isupper() and len(like) > 1:
        return new.upper()
    if like[0].isupper():
        return new[0].upper() + new[1:]
    return new
