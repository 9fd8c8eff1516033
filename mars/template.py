"""Templates: a reference cut into text blocks [T] and blanks [B].

Blocks carry their leading whitespace so that filling every blank with its original words reproduces the
reference exactly, and so that a generator can tell whether a fill must start a new word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class TextBlock:
    """Words kept from the reference; ``lead`` is the whitespace before them."""

    text: str
    lead: str = ""


@dataclass(frozen=True)
class Blank:
    """Masked reference words; a fill replaces ``lead + original``."""

    n_words: int
    original: str
    lead: str = ""


Block = TextBlock | Blank


@dataclass(frozen=True)
class Template:
    blocks: tuple[Block, ...]
    ratio: float

    @property
    def blanks(self) -> list[Blank]:
        return [b for b in self.blocks if isinstance(b, Blank)]

    @property
    def n_masked(self) -> int:
        return sum(b.n_words for b in self.blanks)

    def render(self, fills: Sequence[str]) -> str:
        """The template with blank ``i`` replaced by ``fills[i]`` (fills include their own leading space)."""
        blanks = self.blanks
        if len(fills) != len(blanks):
            raise ValueError(f"template has {len(blanks)} blanks but {len(fills)} fills were given")
        parts: list[str] = []
        it = iter(fills)
        for block in self.blocks:
            parts.append(block.lead + block.text if isinstance(block, TextBlock) else next(it))
        return "".join(parts).strip()

    def original(self) -> str:
        return self.render([b.lead + b.original for b in self.blanks])

    def display(self, blank: str = "[B]") -> str:
        """Human-readable form, one ``[B]`` per masked word (for logs and tests)."""
        parts = []
        for block in self.blocks:
            if isinstance(block, TextBlock):
                parts.append(block.lead + block.text)
            else:
                parts.append(block.lead + blank * block.n_words)
        return "".join(parts).strip()

    def to_json(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "blocks": [
                {"text": b.text, "lead": b.lead}
                if isinstance(b, TextBlock)
                else {"blank": b.n_words, "original": b.original, "lead": b.lead}
                for b in self.blocks
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Template":
        blocks: list[Block] = []
        for b in data["blocks"]:
            if "blank" in b:
                blocks.append(Blank(int(b["blank"]), b["original"], b["lead"]))
            else:
                blocks.append(TextBlock(b["text"], b["lead"]))
        return cls(tuple(blocks), float(data["ratio"]))


def template_from_mask(words: Sequence[str], spaces: Sequence[str], mask: Sequence[bool], ratio: float) -> Template:
    """Group consecutive masked words into one blank and consecutive kept words into one text block.

    ``spaces[i]`` is the whitespace after word ``i`` (spaCy's ``whitespace_``); trailing whitespace of the last
    word is dropped, as augmented references are compared as sentences.
    """
    if not (len(words) == len(spaces) == len(mask)):
        raise ValueError(f"words, spaces and mask differ in length: {len(words)}, {len(spaces)}, {len(mask)}")
    blocks: list[Block] = []
    i = 0
    while i < len(words):
        j = i
        while j + 1 < len(words) and bool(mask[j + 1]) == bool(mask[i]):
            j += 1
        lead = spaces[i - 1] if i > 0 else ""
        text = "".join(words[k] + (spaces[k] if k < j else "") for k in range(i, j + 1))
        if mask[i]:
            blocks.append(Blank(j - i + 1, text, lead))
        else:
            blocks.append(TextBlock(text, lead))
        i = j + 1
    return Template(tuple(blocks), ratio)
