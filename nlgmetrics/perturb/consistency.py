"""The consistency noises of the blind-spot paper (Table 16) except BERT-diverge (see ``bert_diverge``).

Switches never undo each other, so the noise grows with the level (the paper's code allowed a pair to come back
later, which can cancel an earlier switch); a text with too few candidates raises ``NotApplicable`` (the paper's
code returned it unchanged or reversed it). Word switches draw ``level`` *disjoint* pairs of compatible words
(``n`` switches move exactly ``2n`` words). Sentence switching draws ``level`` switches that each join two
different cycles of the permutation built so far, i.e. a permutation that no fewer than ``level`` switches can
undo: it needs only ``level + 1`` sentences, so two switches apply to the three-sentence summaries of CNN/DM as
in the paper (whose two distinct successive switches on three sentences make the same 3-cycle), where disjoint
pairs would need four.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Callable, Sequence

import numpy as np
from lemminflect import getInflection

from nlgmetrics.perturb.docedit import edit_tokens, replace_spans, require_doc, sentences_of
from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.levels import bernoulli_mask, check_count, check_share
from nlgmetrics.perturb.negation import add_negation
from nlgmetrics.perturb.words import match_case

# Entity label -> generic phrase that destroys the information but keeps the sentence grammatical.
GENERIC_ENTITY = {
    "PERSON": "a person",
    "GPE": "a place",
    "LOC": "a place",
    "FAC": "a place",
    "ORG": "an organization",
    "PRODUCT": "a product",
    "EVENT": "an event",
    "WORK_OF_ART": "a work",
}
_DETERMINERS = frozenset({"a", "an", "the"})


def _disjoint_pairs(
    rng: np.random.Generator,
    n_items: int,
    n_pairs: int,
    allowed: Sequence[tuple[int, int]] | None = None,
) -> list[tuple[int, int]]:
    """``n_pairs`` random pairs sharing no item (among ``allowed`` pairs if given), so that ``n`` switches move
    exactly ``2n`` items and more switches always mean more noise (overlapping swaps can undo each other)."""
    pairs = list(combinations(range(n_items), 2)) if allowed is None else list(allowed)
    for _ in range(1 if allowed is None else 20):  # greedy always succeeds on the complete graph
        chosen: list[tuple[int, int]] = []
        used: set[int] = set()
        for k in rng.permutation(len(pairs)):
            i, j = pairs[int(k)]
            if i not in used and j not in used:
                chosen.append((i, j))
                used.update((i, j))
                if len(chosen) == n_pairs:
                    return chosen
    raise NotApplicable(f"{n_pairs} switch(es) need {2 * n_pairs} candidates forming disjoint pairs")


def _irreducible_switches(rng: np.random.Generator, n_items: int, n_switches: int) -> list[tuple[int, int]]:
    """``n_switches`` random switches whose product no fewer switches can undo (transposition distance n).

    Each switch takes two items from *different* cycles of the permutation built so far, which merges the cycles
    and raises the distance by exactly one; a switch inside one cycle would split it and undo earlier work.
    A permutation of ``n_items`` is at most ``n_items - 1`` switches away from the identity.
    """
    if n_switches > n_items - 1:
        raise NotApplicable(f"{n_switches} switch(es) need {n_switches + 1} candidates, has {n_items}")
    cycle = list(range(n_items))  # cycle id of every item
    swaps: list[tuple[int, int]] = []
    for _ in range(n_switches):
        pairs = [(i, j) for i, j in combinations(range(n_items), 2) if cycle[i] != cycle[j]]
        i, j = pairs[int(rng.integers(len(pairs)))]
        old, new = cycle[j], cycle[i]
        cycle = [new if c == old else c for c in cycle]
        swaps.append((i, j))
    return swaps


def _permute(n_items: int, swaps: Sequence[tuple[int, int]]) -> list[int]:
    order = list(range(n_items))
    for i, j in swaps:
        order[i], order[j] = order[j], order[i]
    return order


def _changed(text: str, new: str, what: str) -> str:
    if new == text:
        raise NotApplicable(f"{what} left the text unchanged (identical candidates)")
    return new


def sentence_switching(
    text: str, rng: np.random.Generator, level: float, *, doc: Any = None, keep_last: bool = False, **context: Any
) -> str:
    """Switch sentences ``level`` times, no switch undoing another. ``keep_last`` pins the final sentence.

    ``level`` switches need ``level + 1`` sentences that may move (see the module docstring); pin the last
    sentence for open-ended text only, as the paper did for WikiText, not for summaries or translations.
    """
    n_switches = check_count(level)
    spans, sentences = sentences_of(text, doc)
    movable = len(spans) - 1 if keep_last else len(spans)
    if movable < 2:
        raise NotApplicable(f"needs two sentences that may move, has {movable}")
    order = _permute(movable, _irreducible_switches(rng, movable, n_switches)) + list(range(movable, len(spans)))
    return _changed(text, replace_spans(text, spans, [sentences[k] for k in order]), "sentence switching")


def sentence_replacement(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    pool: Sequence[str] | None = None,
    **context: Any,
) -> str:
    """Replace ``level`` random sentences by sentences of other samples (``pool``) not found in this text."""
    n_replace = check_count(level)
    if not pool:
        raise ValueError("sentence_replacement needs context 'pool' (sentences of the other samples)")
    spans, sentences = sentences_of(text, doc)
    if n_replace > len(spans):
        raise NotApplicable(f"cannot replace {n_replace} sentence(s) of a {len(spans)}-sentence text")
    slots = sorted(int(k) for k in rng.choice(len(spans), size=n_replace, replace=False))
    new, used = list(sentences), set()
    for slot in slots:
        for _ in range(100):
            candidate = pool[int(rng.integers(len(pool)))]
            if candidate.strip() and candidate not in text and candidate not in used:
                break
        else:
            raise NotApplicable("pool has no sentence foreign to this text")
        used.add(candidate)
        new[slot] = candidate
    return replace_spans(text, spans, new)


def negation(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Negate the main verb of each not-yet-negated sentence with probability ``level`` (adds, never removes)."""
    share = check_share(level)
    doc = require_doc(text, doc)
    edits_per_sentence = [e for e in (add_negation(sent) for sent in doc.sents) if e]
    if not edits_per_sentence:
        raise NotApplicable("no sentence with a verb that can be negated")
    edits: dict[int, str] = {}
    for sentence_edits, hit in zip(edits_per_sentence, bernoulli_mask(rng, len(edits_per_sentence), share)):
        if hit:
            edits.update(sentence_edits)
    return edit_tokens(doc, edits)


def generic_named_entity(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Replace each person/place/organisation/... entity by a generic phrase with probability ``level``."""
    share = check_share(level)
    doc = require_doc(text, doc)
    entities = [e for e in doc.ents if e.label_ in GENERIC_ENTITY]
    if not entities:
        raise NotApplicable("no named entity of a replaceable type")
    edits: dict[int, str] = {}
    for ent, hit in zip(entities, bernoulli_mask(rng, len(entities), share)):
        if not hit:
            continue
        phrase, start = GENERIC_ENTITY[ent.label_], ent.start
        before = doc[ent.start - 1] if ent.start > 0 else None
        if before is not None and before.lower_ in _DETERMINERS and before.i not in edits:
            edits[before.i] = ""
            start = before.i
        if doc[start].is_sent_start and doc[start].text[:1].isupper():
            phrase = phrase[0].upper() + phrase[1:]
        edits[ent.start] = phrase
        for tok in ent[1:]:
            edits[tok.i] = ""
    return edit_tokens(doc, edits)


def ne_switching(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Switch ``level`` pairs of named entities of the same type (Paris <-> Boston, never Paris <-> 1990)."""
    n_pairs = check_count(level)
    doc = require_doc(text, doc)
    entities = list(doc.ents)
    pairs = [
        (i, j)
        for i, j in combinations(range(len(entities)), 2)
        if entities[i].label_ == entities[j].label_ and entities[i].text != entities[j].text
    ]
    if not pairs:
        raise NotApplicable("no two different named entities of the same type")
    order = _permute(len(entities), _disjoint_pairs(rng, len(entities), n_pairs, pairs))
    spans = [(e.start_char, e.end_char) for e in entities]
    return _changed(text, replace_spans(text, spans, [entities[k].text for k in order]), "entity switching")


def _reinflect(lemma: str, tag: str, like: str) -> str:
    forms = getInflection(lemma, tag=tag, inflect_oov=True) if tag else ()
    return match_case(forms[0] if forms else lemma, like)


def _switch_words(text: str, rng: np.random.Generator, level: float, doc: Any, keep: Callable, what: str) -> str:
    n_pairs = check_count(level)
    doc = require_doc(text, doc)
    tokens = [t for t in doc if keep(t)]
    lemmas = [(t.lemma_ or t.text).lower() for t in tokens]
    pairs = [(i, j) for i, j in combinations(range(len(tokens)), 2) if lemmas[i] != lemmas[j]]
    if not pairs:
        raise NotApplicable(f"no two {what}s with different lemmas")
    order = _permute(len(tokens), _disjoint_pairs(rng, len(tokens), n_pairs, pairs))
    edits = {
        tok.i: _reinflect(lemmas[k], tok.tag_, tok.text)
        for slot, (tok, k) in enumerate(zip(tokens, order))
        if lemmas[k] != lemmas[slot]
    }
    return _changed(text, edit_tokens(doc, edits), f"{what} switching")


def verb_switching(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Switch ``level`` pairs of verbs, each re-inflected to its partner's tag ("went ... talked" -> "talked ...
    went")."""
    return _switch_words(text, rng, level, doc, lambda t: t.pos_ == "VERB" and t.text.isalpha(), "verb")


def noun_switching(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Switch ``level`` pairs of common nouns, each re-inflected to its partner's number."""
    return _switch_words(text, rng, level, doc, lambda t: t.pos_ == "NOUN" and t.text.isalpha(), "noun")
