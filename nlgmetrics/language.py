"""Which language a set of references is in, so a metric never scores text its models cannot read unnoticed.

A learned metric trained on English scores German text with no error and a meaningless number. Each metric that
depends on a language checks the references' language against what its models cover: given by the user
(``--lang``, ``lang=``) or identified from the references with py3langid (langid.py's model, offline, BSD).
Identification reads the references joined together, since single short segments are often misread; where the
identifier is not confident (too little text, mixed languages), the language stays undetermined and the metric
keeps its default behaviour, saying so in its signature (``lang:und``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Sequence

CONFIDENCE = 0.9
SAMPLE = 200
MIN_LETTERS = 20
UNDETERMINED = "und"
_CODE = re.compile(r"^[a-z]{2,3}$")

NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "zh": "Chinese", "ru": "Russian"}


class LanguageError(ValueError):
    """The text's language is one the metric's models do not cover (or ``lang`` is not a language code)."""


def check_lang(lang: str | None) -> str | None:
    """``lang`` as a lower-case ISO 639 code, or None for "identify it"; a clear error for anything else."""
    if lang is None or lang == "auto":
        return None
    code = str(lang).strip().lower()
    if not _CODE.match(code):
        raise LanguageError(f"--lang {lang!r}: expected an ISO 639-1 code such as en or de, or auto")
    return code


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def first_references(refs: Sequence) -> list[str]:
    """The first reference of each item (items hold one string or a list of references)."""
    out = []
    for ref in refs:
        if isinstance(ref, str):
            out.append(ref)
        elif ref:
            out.append(str(ref[0]))
    return out


def identify(texts: Sequence[str]) -> str:
    """The language of ``texts`` taken together (up to the first ``SAMPLE``), or ``"und"`` when not confident.

    Args:
        texts: references (or any texts of one language).

    Returns:
        An ISO 639-1 code such as ``"en"``, or ``"und"`` (undetermined): fewer than ``MIN_LETTERS`` letters, or
        the identifier's probability under ``CONFIDENCE``.
    """
    joined = "\n".join(texts[:SAMPLE])
    if sum(char.isalpha() for char in joined) < MIN_LETTERS:
        return UNDETERMINED
    code, probability = _identifier().classify(joined)
    return code if probability >= CONFIDENCE else UNDETERMINED


def resolve_lang(lang: str | None, refs: Sequence) -> str:
    """The user's ``lang`` when given, else the language identified from the references."""
    return check_lang(lang) or identify(first_references(refs))


def name(code: str) -> str:
    """A language code with its English name where known (``German (de)``), for messages."""
    return f"{NAMES[code]} ({code})" if code in NAMES else code


__all__ = ["LanguageError", "check_lang", "first_references", "identify", "name", "resolve_lang"]
