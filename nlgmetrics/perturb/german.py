"""German rule edits that need no parser: negation with nicht/kein, numbers, names.

The English rules read a spaCy parse; no German pipeline installs offline, and German word order makes a
dependency-free negation of the main verb unreliable. These rules use only what holds without a parse:
an indefinite article and its negation differ in one word (``ein`` <-> ``kein``, every case ending), a present
``nicht`` can be removed, and ``nicht`` after a form of *sein* or a modal verb reads naturally ("ist nicht
müde", "kann nicht kommen"). Numbers are digits or number words; names are single-word entries of small lists
of German first names, cities and countries (a name becomes another of the same list). Each function works on
a list of words and returns one edit, so callers place it in their own token model.

Every function draws only from the generator it is given and raises ``NotApplicable`` when the text offers no
place for the edit.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence, TypeVar

import numpy as np

from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.numbers import random_same_shape
from nlgmetrics.perturb.words import match_case

T = TypeVar("T")
_EIN = ("ein", "eine", "einen", "einem", "einer", "eines")
_KEIN = {"k" + form: form for form in _EIN}
_NEGATABLE_VERBS = frozenset(
    "bin bist ist sind seid war warst waren wart wird werden wurde wurden "
    "kann kannst können könnt konnte konnten muss musst müssen müsst musste mussten "
    "soll sollst sollen sollt sollte sollten will willst wollen wollt wollte wollten "
    "darf darfst dürfen dürft durfte durften".split()
)
_NUMBER_WORDS = (
    "zwei drei vier fünf sechs sieben acht neun zehn elf zwölf zwanzig dreißig vierzig fünfzig hundert tausend"
).split()
_DIGITS = re.compile(r"^\d+(?:[.,]\d+)*$")
NAME_LISTS: dict[str, tuple[str, ...]] = {
    "female": tuple(
        "Anna Maria Laura Julia Sarah Lena Katharina Sophie Lisa Hannah Claudia Sabine Petra Monika Ursula Andrea "
        "Stefanie Nicole Melanie Susanne Angela Renate Birgit Heike Karin".split()
    ),
    "male": tuple(
        "Thomas Michael Andreas Stefan Peter Klaus Markus Christian Martin Frank Jürgen Wolfgang Uwe Matthias "
        "Alexander Tobias Jan Lukas Felix Jonas Florian Sebastian Daniel Helmut Dieter".split()
    ),
    "city": tuple(
        "Berlin Hamburg München Köln Frankfurt Stuttgart Düsseldorf Leipzig Dortmund Essen Bremen Dresden Hannover "
        "Nürnberg Wien Graz Zürich Basel Paris Rom London Madrid Warschau Prag Brüssel Amsterdam Moskau Peking "
        "Tokio Washington".split()
    ),
    "country": tuple(
        "Deutschland Österreich Frankreich Italien Spanien Polen Russland China Japan Indien Brasilien Kanada "
        "Griechenland Schweden Norwegen Dänemark Ungarn Tschechien Belgien Portugal Ägypten Mexiko".split()
    ),
}
_NAME_CLASS = {name: group for group, names in NAME_LISTS.items() for name in names}


class WordEdit(NamedTuple):
    """``words[start:start + length]`` becomes ``fill`` (empty: a deletion; ``length`` 0: an insertion)."""

    start: int
    length: int
    fill: tuple[str, ...]


def _is_word(word: str) -> bool:
    return any(ch.isalpha() for ch in word)


def _pick(rng: np.random.Generator, options: Sequence[T], what: str) -> T:
    """One of the places (or edits) on offer, drawn before anything is drawn for the edit itself."""
    if not options:
        raise NotApplicable(f"no {what}")
    return options[int(rng.integers(len(options)))]


def _other(rng: np.random.Generator, choices: Sequence[str], current: str) -> str:
    others = [c for c in choices if c != current]
    return others[int(rng.integers(len(others)))]


def negation_edit(words: Sequence[str], rng: np.random.Generator) -> WordEdit:
    """Flip the polarity at one place: drop ``nicht``, ``kein``-> ``ein``, ``ein`` -> ``kein`` before a word, or
    ``nicht`` after a form of *sein*/*werden* or a modal verb (not where ``nicht``/``kein``/``ein`` follows)."""
    options: list[WordEdit] = []
    for i, word in enumerate(words):
        lower = word.lower()
        following = words[i + 1].lower() if i + 1 < len(words) else ""
        if lower == "nicht":
            options.append(WordEdit(i, 1, ()))
        elif lower in _KEIN:
            options.append(WordEdit(i, 1, (match_case(_KEIN[lower], word),)))
        elif lower in _EIN and _is_word(following):  # an article, not the particle of "steigt ein."
            options.append(WordEdit(i, 1, (match_case("k" + lower, word),)))
        elif lower in _NEGATABLE_VERBS and _is_word(following) and following != "nicht":
            if following not in _KEIN and following not in _EIN:
                options.append(WordEdit(i + 1, 0, ("nicht",)))
    return _pick(rng, options, "nicht, kein, article or finite form of sein/werden/a modal verb")


def number_edit(words: Sequence[str], rng: np.random.Generator) -> WordEdit:
    """One number becomes a different one written the same way: digits keep their shape (``2.000`` ->
    ``7.000``, ``5,3`` -> ``8,1``), a number word becomes another number word."""
    i = _pick(rng, [i for i, w in enumerate(words) if _DIGITS.match(w) or w.lower() in _NUMBER_WORDS], "number")
    word = words[i]
    if _DIGITS.match(word):
        return WordEdit(i, 1, (random_same_shape(word, rng),))
    return WordEdit(i, 1, (match_case(_other(rng, _NUMBER_WORDS, word.lower()), word),))


def name_edit(words: Sequence[str], rng: np.random.Generator) -> WordEdit:
    """One first name, city or country of ``NAME_LISTS`` becomes another of the same list."""
    positions = [i for i, word in enumerate(words) if word in _NAME_CLASS]
    i = _pick(rng, positions, "German first name, city or country of the lists")
    return WordEdit(i, 1, (_other(rng, NAME_LISTS[_NAME_CLASS[words[i]]], words[i]),))


GERMAN_RULES = {"negation": negation_edit, "number": number_edit, "name": name_edit}

__all__ = ["GERMAN_RULES", "NAME_LISTS", "WordEdit", "name_edit", "negation_edit", "number_edit"]
