"""Numbers in text: find the non-date ones, change them keeping their format, or spell them out.

MENLI's number phenomenon changes every non-date number to a random number of the same shape ("$850" ->
"$625"), while the paraphrase side writes the numbers in words (num2words) so that surface overlap alone cannot
tell the good candidate from the bad one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from num2words import num2words

from nlgmetrics.perturb.docedit import edit_tokens

_DATE_LABELS = frozenset({"DATE", "TIME"})
_NUMERIC = re.compile(r"^\d{1,3}(,\d{3})+(\.\d+)?$|^\d+(\.\d+)?$")
_CURRENCY = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen"}
_SMALL_NUMBER_WORDS = {num2words(k): k for k in range(1, 21)}


def number_tokens(doc: Any) -> list[Any]:
    """Tokens that are numbers (digits like 300, 2,000, 3.5, or one..twenty) and not part of a date/time."""
    found = []
    for tok in doc:
        if tok.ent_type_ in _DATE_LABELS:
            continue
        if _NUMERIC.match(tok.text) or tok.lower_ in _SMALL_NUMBER_WORDS:
            found.append(tok)
    return found


def random_same_shape(text: str, rng: np.random.Generator) -> str:
    """Every digit redrawn; a leading non-zero digit stays non-zero; guaranteed different from ``text``."""
    for _ in range(20):
        chars = []
        for k, ch in enumerate(text):
            if ch.isdigit():
                low = 1 if (k == 0 and (ch != "0" or len(text) == 1)) else 0
                chars.append(str(int(rng.integers(low, 10))))
            else:
                chars.append(ch)
        new = "".join(chars)
        if new != text:
            return new
    return str(int(text.replace(",", "").split(".")[0] or 0) + 1)


def change_number(tok: Any, rng: np.random.Generator) -> str:
    """A different random number written like ``tok`` (digits keep their shape, words stay words)."""
    if tok.lower_ in _SMALL_NUMBER_WORDS:
        value = _SMALL_NUMBER_WORDS[tok.lower_]
        others = [k for k in range(1, 21) if k != value]
        new = num2words(others[int(rng.integers(len(others)))])
        return new.capitalize() if tok.text[:1].isupper() else new
    return random_same_shape(tok.text, rng)


def spell_out_numbers(text: str, doc: Any) -> str:
    """Write every non-date digit number in words: "$2,000" -> "two thousand dollars", "30%" -> "thirty percent"."""
    edits: dict[int, str] = {}
    for tok in number_tokens(doc):
        if not tok.text[:1].isdigit():
            continue
        value_text = tok.text.replace(",", "")
        value: float | int = float(value_text) if "." in value_text else int(value_text)
        words = num2words(value)
        before = doc[tok.i - 1] if tok.i > 0 else None
        after = doc[tok.i + 1] if tok.i + 1 < len(doc) else None
        if before is not None and before.text in _CURRENCY and before.i not in edits:
            edits[before.i] = ""
            words += " " + _CURRENCY[before.text]
        if after is not None and after.text == "%":
            edits[after.i] = ""
            words += " percent"
        edits[tok.i] = words
    return edit_tokens(doc, edits) if edits else text
