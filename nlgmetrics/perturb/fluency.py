"""The ten fluency noises of the blind-spot paper (Table 16), as pure functions.

Each takes ``(text, rng, level, **context)`` and returns the noised text or raises ``NotApplicable``.
Word-level noises work on whitespace words (as the paper's code did); the part-of-speech ones need the spaCy
parse of the text as context ``doc``. None re-capitalises sentence starts: the noise is the edit itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nlgmetrics.perturb.docedit import edit_tokens, replace_spans, require_doc, sentence_spans
from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.levels import at_least_one, bernoulli_mask, check_share
from nlgmetrics.perturb.words import WordLayout, match_case

ARTICLES = frozenset({"a", "an", "the"})
SENTENCE_END = ".!?"
# The paper's punctuation swap: commas become periods and the other way round; ! ? ; : collapse onto them.
PUNCTUATION_SWAP = {".": ",", ",": ".", "!": ",", "?": ",", ":": ".", ";": "."}


def _words(text: str, minimum: int = 1) -> WordLayout:
    layout = WordLayout.of(text)
    if len(layout) < minimum:
        raise NotApplicable(f"needs at least {minimum} word(s), text has {len(layout)}")
    return layout


def truncation(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Drop the last ``level`` share of words (at least one) and close with a period.

    The period is the paper's choice: the test targets the lost information, not a missing full stop.
    """
    share = check_share(level)
    layout = _words(text, minimum=2)
    n_drop = max(1, math.floor(share * len(layout) + 1e-9))
    if n_drop >= len(layout):
        raise NotApplicable(f"cannot drop {n_drop} of {len(layout)} words and keep any")
    kept = layout.without(range(len(layout) - n_drop, len(layout)))
    words = list(kept.words)
    last = words[-1].rstrip(",;:-–—")
    if not last:
        words.pop()
        if not words:  # only punctuation would remain (e.g. "; the")
            raise NotApplicable("truncation would leave no word")
        last = words[-1]
    if not last.endswith(tuple(SENTENCE_END)):
        last += "."
    words[-1] = last
    return WordLayout(kept.lead, tuple(words), kept.seps[: len(words) - 1] + ("",)).render()


def article_removal(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Remove each article (a/an/the) with probability ``level``."""
    share = check_share(level)
    layout = _words(text)
    candidates = [i for i, word in enumerate(layout.words) if word.lower() in ARTICLES]
    if not candidates:
        raise NotApplicable("no article (a/an/the)")
    mask = bernoulli_mask(rng, len(candidates), share)
    return layout.without({i for i, hit in zip(candidates, mask) if hit}).render()


def _remove_tokens(text: str, rng: np.random.Generator, share: float, doc: Any, keep, what: str) -> str:
    doc = require_doc(text, doc)
    candidates = [tok.i for tok in doc if keep(tok)]
    if not candidates:
        raise NotApplicable(f"no {what}")
    mask = bernoulli_mask(rng, len(candidates), share)
    return edit_tokens(doc, {i: "" for i, hit in zip(candidates, mask) if hit})


def preposition_removal(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Remove each preposition (spaCy ADP) with probability ``level``."""
    return _remove_tokens(text, rng, check_share(level), doc, lambda t: t.pos_ == "ADP", "preposition (ADP)")


def stopword_removal(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Remove each spaCy stop word with probability ``level``."""
    return _remove_tokens(
        text, rng, check_share(level), doc, lambda t: t.is_stop and not (t.is_punct or t.is_space), "stop word"
    )


def verb_lemmatization(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Replace each inflected verb (spaCy VERB) by its lemma with probability ``level`` ("went" -> "go")."""
    share = check_share(level)
    doc = require_doc(text, doc)
    candidates = [t for t in doc if t.pos_ == "VERB" and t.lemma_ and t.lemma_.lower() != t.text.lower()]
    if not candidates:
        raise NotApplicable("no inflected verb")
    mask = bernoulli_mask(rng, len(candidates), share)
    return edit_tokens(doc, {t.i: match_case(t.lemma_, t.text) for t, hit in zip(candidates, mask) if hit})


def token_drop(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Drop ``ceil(level * n)`` random words (at least one, never all)."""
    share = check_share(level)
    layout = _words(text, minimum=2)
    n_drop = min(at_least_one(len(layout), share), len(layout) - 1)
    drop = rng.choice(len(layout), size=n_drop, replace=False)
    return layout.without(set(int(i) for i in drop)).render()


def repeated_token(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Repeat ``ceil(level * n)`` random words once each ("to" -> "to to")."""
    share = check_share(level)
    layout = _words(text)
    n_rep = min(at_least_one(len(layout), share), len(layout))
    for i in sorted((int(i) for i in rng.choice(len(layout), size=n_rep, replace=False)), reverse=True):
        layout = layout.with_inserted(i, layout.words[i])
    return layout.render()


def local_swap(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Swap ``ceil(level * n)`` random words with their right neighbour (distinct positions, random order)."""
    share = check_share(level)
    layout = _words(text, minimum=2)
    positions = [i for i in range(len(layout) - 1) if layout.words[i] != layout.words[i + 1]]
    if not positions:
        raise NotApplicable("no two adjacent words differ")
    n_swap = min(at_least_one(len(layout), share), len(positions))
    words = list(layout.words)
    for k in rng.choice(positions, size=n_swap, replace=False):
        words[k], words[k + 1] = words[k + 1], words[k]
    return layout.replaced(words).render()


def _swap_halves(sentence: str, first_token: Any) -> str | None:
    """ "She went to the office." -> "The office she went to." (cut at the middle word)."""
    core = sentence.rstrip(SENTENCE_END + "\"'”’)")
    end = sentence[len(core) :]
    words = core.split()
    if len(words) < 2:
        return None
    middle = math.ceil(len(words) / 2)
    if first_token.pos_ != "PROPN" and first_token.text != "I":
        words[0] = words[0][:1].lower() + words[0][1:]
    swapped = words[middle:] + words[:middle]
    swapped[-1] = swapped[-1].rstrip(",;:")
    if swapped[0]:
        swapped[0] = swapped[0][:1].upper() + swapped[0][1:]
    return " ".join(w for w in swapped if w) + end


def middle_swap(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Swap the two halves of a ``level`` share of the sentences (at least one): a wrong word order."""
    share = check_share(level)
    doc = require_doc(text, doc)
    spans = sentence_spans(doc)
    swapped = []
    for start, end in spans:
        first = doc.char_span(start, end, alignment_mode="expand")
        new = _swap_halves(text[start:end], first[0]) if first is not None and len(first) else None
        swapped.append(new if new is not None and new != text[start:end] else None)
    candidates = [k for k, new in enumerate(swapped) if new is not None]
    if not candidates:
        raise NotApplicable("no sentence with two or more words to swap")
    chosen = set(int(k) for k in rng.choice(candidates, size=at_least_one(len(candidates), share), replace=False))
    return replace_spans(text, spans, [swapped[k] if k in chosen else text[s:e] for k, (s, e) in enumerate(spans)])


def noised_punctuation(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Swap each punctuation mark (. , ! ? : ;) with probability ``level``: commas <-> periods.

    Marks between two digits ("3.5", "2,000") are part of a number, not punctuation, and stay.
    """
    share = check_share(level)
    candidates = [
        i
        for i, ch in enumerate(text)
        if ch in PUNCTUATION_SWAP and not (0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit())
    ]
    if not candidates:
        raise NotApplicable("no punctuation mark to noise")
    chars = list(text)
    for i, hit in zip(candidates, bernoulli_mask(rng, len(candidates), share)):
        if hit:
            chars[i] = PUNCTUATION_SWAP[chars[i]]
    return "".join(chars)
