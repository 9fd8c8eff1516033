"""Word lists the substitution noises draw from, read from installed packages instead of written by hand.

* nouns / verbs / adjectives: lemmas of lemminflect's inflection lexicon (so every drawn word can also be
  re-inflected to the tag of the word it replaces);
* first names by gender: the US-census frequency lists shipped with the ``names`` package.
"""

from __future__ import annotations

import csv
import gzip
import importlib.resources
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

import numpy as np

from nlgmetrics.perturb.errors import NotApplicable

# Verbs that are (mostly) auxiliaries: swapping them in as a "random verb" produces nonsense, not an error.
_AUXILIARY_LEMMAS = frozenset({"be", "have", "do", "will", "shall", "may", "might", "can", "could", "must", "ought"})
_LEMMINFLECT_POS = {"noun": "nouns", "verb": "verbs", "adj": "adjectives"}


@dataclass(frozen=True)
class Lexicon:
    """Candidate replacement words per part of speech, and first names per gender (most frequent first)."""

    nouns: tuple[str, ...]
    verbs: tuple[str, ...]
    adjectives: tuple[str, ...]
    male_names: tuple[str, ...]
    female_names: tuple[str, ...]
    gender: Mapping[str, str] = field(repr=False)

    def words(self, pos: str) -> tuple[str, ...]:
        try:
            return {"NOUN": self.nouns, "VERB": self.verbs, "ADJ": self.adjectives}[pos]
        except KeyError:
            raise ValueError(f"lexicon has no word list for POS {pos!r}") from None

    def draw(self, pos: str, rng: np.random.Generator, avoid: str = "") -> str:
        """A random lemma of ``pos`` other than ``avoid`` (case-insensitive)."""
        pool = self.words(pos)
        if not pool:
            raise NotApplicable(f"lexicon has no {pos} words")
        for _ in range(20):
            word = pool[int(rng.integers(len(pool)))]
            if word.lower() != avoid.lower():
                return word
        raise NotApplicable(f"lexicon offers no {pos} other than {avoid!r}")

    def gender_of(self, first_name: str) -> str | None:
        """'male' / 'female' for a known first name, else None."""
        return self.gender.get(first_name.lower())

    def draw_name(self, gender: str, rng: np.random.Generator, avoid: str = "") -> str:
        pool = self.male_names if gender == "male" else self.female_names
        for _ in range(20):
            name = pool[int(rng.integers(len(pool)))]
            if name.lower() != avoid.lower():
                return name
        raise NotApplicable(f"no other {gender} first name than {avoid!r}")


def _lemminflect_lemmas(min_len: int, max_len: int) -> dict[str, list[str]]:
    path = importlib.resources.files("lemminflect") / "resources" / "infl_lu.csv.gz"
    lists: dict[str, list[str]] = {key: [] for key in _LEMMINFLECT_POS.values()}
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            if len(row) < 2 or row[1] not in _LEMMINFLECT_POS:
                continue
            lemma = row[0]
            if lemma.isalpha() and lemma.islower() and lemma.isascii() and min_len <= len(lemma) <= max_len:
                if row[1] == "verb" and lemma in _AUXILIARY_LEMMAS:
                    continue
                lists[_LEMMINFLECT_POS[row[1]]].append(lemma)
    return lists


def _census_names(max_names: int) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]:
    root = importlib.resources.files("names")
    frequency: dict[str, dict[str, float]] = {"male": {}, "female": {}}
    for gender, filename in (("male", "dist.male.first"), ("female", "dist.female.first")):
        for line in (root / filename).read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                frequency[gender][parts[0].capitalize()] = float(parts[1])
    gender_of = {}
    for name in set(frequency["male"]) | set(frequency["female"]):
        male, female = frequency["male"].get(name, 0.0), frequency["female"].get(name, 0.0)
        gender_of[name.lower()] = "male" if male >= female else "female"
    top = {
        g: tuple(n for n in sorted(f, key=lambda n: -f[n]) if gender_of[n.lower()] == g)[:max_names]
        for g, f in frequency.items()
    }
    return top["male"], top["female"], gender_of


@lru_cache(maxsize=2)
def default_lexicon(max_names: int = 300, min_len: int = 3, max_len: int = 12) -> Lexicon:
    """The lexicon from lemminflect and the census name lists (read once per process)."""
    lists = _lemminflect_lemmas(min_len, max_len)
    male, female, gender = _census_names(max_names)
    return Lexicon(tuple(lists["nouns"]), tuple(lists["verbs"]), tuple(lists["adjectives"]), male, female, gender)
