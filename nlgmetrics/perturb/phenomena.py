"""MENLI's adversarial phenomena: one meaning-changing (or fluency) error per candidate text.

The MENLI authors did not release generators; each function follows what their released data shows
(spec MENLI.md section 3). ``level`` is the number of errors (1 by default) except for omission, where it is
the share of words dropped as one contiguous span.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lemminflect import getInflection

from nlgmetrics.perturb.docedit import edit_tokens, require_doc
from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.levels import at_least_one, check_count, check_share
from nlgmetrics.perturb.lexicon import Lexicon
from nlgmetrics.perturb.negation import add_negation, remove_negation
from nlgmetrics.perturb.numbers import change_number, number_tokens
from nlgmetrics.perturb.words import WordLayout, match_case

# Closed-class pronoun pairs, keyed by (lowercase form, fine-grained tag or "" for any tag). Each axis flips
# one contrast that keeps the verb agreement intact (he/she, we/they), so the error is about meaning only.
_PRONOUN_AXES: dict[str, dict[tuple[str, str], str]] = {
    "gender": {
        ("he", ""): "she",
        ("she", ""): "he",
        ("him", ""): "her",
        ("her", "PRP"): "him",
        ("her", "PRP$"): "his",
        ("his", "PRP$"): "her",
        ("his", "PRP"): "hers",
        ("hers", ""): "his",
        ("himself", ""): "herself",
        ("herself", ""): "himself",
    },
    "plural_person": {
        ("we", ""): "they",
        ("they", ""): "we",
        ("us", ""): "them",
        ("them", ""): "us",
        ("our", ""): "their",
        ("their", ""): "our",
        ("ours", ""): "theirs",
        ("theirs", ""): "ours",
        ("ourselves", ""): "themselves",
        ("themselves", ""): "ourselves",
    },
}
_WAS_WERE = {"was": "were", "were": "was"}
_MISMATCH_TAGS = {
    "NOUN": frozenset({"NN", "NNS"}),
    "VERB": frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"}),
    "ADJ": frozenset({"JJ", "JJR", "JJS"}),
}


def _need_lexicon(lexicon: Lexicon | None) -> Lexicon:
    if lexicon is None:
        raise ValueError("this phenomenon needs context 'lexicon' (perturb.default_lexicon())")
    return lexicon


def _inflect(lemma: str, tag: str, like: str) -> str:
    forms = getInflection(lemma, tag=tag, inflect_oov=True)
    return match_case(forms[0] if forms else lemma, like)


def _pick(rng: np.random.Generator, items: list, k: int) -> list:
    return [items[int(i)] for i in sorted(rng.choice(len(items), size=min(k, len(items)), replace=False))]


def addition(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    lexicon: Lexicon | None = None,
    **context: Any,
) -> str:
    """ "X" -> "X and Y": a random noun coordinated after ``level`` common nouns ("price" -> "price and plan")."""
    count, doc, lexicon = check_count(level), require_doc(text, doc), _need_lexicon(lexicon)
    nouns = [t for t in doc if t.pos_ == "NOUN" and t.tag_ in ("NN", "NNS") and t.text.isalpha() and not t.ent_type_]
    if not nouns:
        raise NotApplicable("no common noun to coordinate with")
    edits = {}
    for tok in _pick(rng, nouns, count):
        added = _inflect(lexicon.draw("NOUN", rng, avoid=tok.lemma_), tok.tag_, "x")
        edits[tok.i] = f"{tok.text} and {added}"
    return edit_tokens(doc, edits)


def omission(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Drop one contiguous span holding a ``level`` share of the words (at least one word, never all)."""
    share = check_share(level)
    layout = WordLayout.of(text)
    if len(layout) < 2:
        raise NotApplicable("needs at least two words")
    width = min(at_least_one(len(layout), share), len(layout) - 1)
    start = int(rng.integers(0, len(layout) - width + 1))
    return layout.without(range(start, start + width)).render()


def _mismatch(text: str, rng: np.random.Generator, level: float, doc: Any, lexicon: Lexicon | None, pos: str) -> str:
    count, doc, lexicon = check_count(level), require_doc(text, doc), _need_lexicon(lexicon)
    tokens = [
        t for t in doc if t.pos_ == pos and t.tag_ in _MISMATCH_TAGS[pos] and t.text.isalpha() and not t.ent_type_
    ]
    if not tokens:
        raise NotApplicable(f"no {pos} to replace")
    edits = {
        tok.i: _inflect(lexicon.draw(pos, rng, avoid=tok.lemma_), tok.tag_, tok.text)
        for tok in _pick(rng, tokens, count)
    }
    return edit_tokens(doc, edits)


def noun_mismatch(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    lexicon: Lexicon | None = None,
    **context: Any,
) -> str:
    """One common noun replaced by a random noun of the same number ("appreciation" -> "province")."""
    return _mismatch(text, rng, level, doc, lexicon, "NOUN")


def verb_mismatch(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    lexicon: Lexicon | None = None,
    **context: Any,
) -> str:
    """One verb replaced by a random verb in the same inflection ("crossed" -> "estimated")."""
    return _mismatch(text, rng, level, doc, lexicon, "VERB")


def adjective_mismatch(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    lexicon: Lexicon | None = None,
    **context: Any,
) -> str:
    """One adjective replaced by a random adjective ("all-time high" -> "filigree high")."""
    return _mismatch(text, rng, level, doc, lexicon, "ADJ")


def negation_flip(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Negate one random sentence's main verb, or remove its negation when it has one."""
    count, doc = check_count(level), require_doc(text, doc)
    options = [e for e in ((remove_negation(s) or add_negation(s)) for s in doc.sents) if e]
    if not options:
        raise NotApplicable("no sentence whose verb can be negated or un-negated")
    edits: dict[int, str] = {}
    for chosen in _pick(rng, options, count):
        edits.update(chosen)
    return edit_tokens(doc, edits)


def number_swap(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Every non-date number becomes a different random number of the same shape ("$850" -> "$625")."""
    check_count(level)
    doc = require_doc(text, doc)
    numbers = number_tokens(doc)
    if not numbers:
        raise NotApplicable("no non-date number")
    return edit_tokens(doc, {tok.i: change_number(tok, rng) for tok in numbers})


def pronoun_swap(text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any) -> str:
    """Flip every pronoun along one random axis present in the text: he<->she (and him/her/his) or we<->they."""
    check_count(level)
    doc = require_doc(text, doc)

    def flip(tok: Any, axis: dict[tuple[str, str], str]) -> str | None:
        new = axis.get((tok.lower_, tok.tag_)) or axis.get((tok.lower_, ""))
        return match_case(new, tok.text) if new else None

    present = [name for name, axis in _PRONOUN_AXES.items() if any(flip(t, axis) for t in doc)]
    if not present:
        raise NotApplicable("no he/she or we/they pronoun")
    axis = _PRONOUN_AXES[present[int(rng.integers(len(present)))]]
    return edit_tokens(doc, {t.i: new for t in doc if (new := flip(t, axis))})


def name_swap(
    text: str,
    rng: np.random.Generator,
    level: float,
    *,
    doc: Any = None,
    lexicon: Lexicon | None = None,
    **context: Any,
) -> str:
    """One first name (everywhere it occurs) replaced by another first name of the same gender."""
    check_count(level)
    doc, lexicon = require_doc(text, doc), _need_lexicon(lexicon)
    names = sorted(
        {
            ent[0].text
            for ent in doc.ents
            if ent.label_ == "PERSON" and ent[0].text.isalpha() and lexicon.gender_of(ent[0].text)
        }
    )
    if not names:
        raise NotApplicable("no person with a known first name")
    name = names[int(rng.integers(len(names)))]
    new = lexicon.draw_name(lexicon.gender_of(name), rng, avoid=name)
    return edit_tokens(doc, {t.i: new for t in doc if t.text == name and t.ent_type_ == "PERSON"})


def jumbling(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Shuffle the word order of the whole text."""
    check_count(level)
    layout = WordLayout.of(text)
    if len(set(layout.words)) < 2:
        raise NotApplicable("needs two different words to shuffle")
    words = list(layout.words)
    while list(words) == list(layout.words):
        words = [layout.words[int(k)] for k in rng.permutation(len(layout))]
    return layout.replaced(words).render()


def typo(text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
    """Swap ``level`` pairs of adjacent different characters ("that the" -> "tha tthe"), CheckList-style."""
    count = check_count(level)
    positions = [
        i for i in range(len(text) - 1) if text[i] != text[i + 1] and (text[i].isalnum() or text[i + 1].isalnum())
    ]
    if not positions:
        raise NotApplicable("no two adjacent different characters")
    chars = list(text)
    taken: set[int] = set()
    for i in (int(k) for k in rng.permutation(positions)):
        if len(taken) >= count * 2:
            break
        if i in taken or i + 1 in taken:
            continue
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
        taken.update((i, i + 1))
    return "".join(chars)


def _disagreeing_form(tok: Any) -> str | None:
    lower = tok.lower_
    if lower in _WAS_WERE:
        return match_case(_WAS_WERE[lower], tok.text)
    if tok.tag_ == "VBZ":
        target = "VBP"
    elif tok.tag_ == "VBP":
        target = "VBZ"
    else:
        return None
    lemma = tok.lemma_.lower() if tok.lemma_ else lower
    forms = getInflection(lemma, tag=target)
    if not forms:
        return None
    new = "are" if lemma == "be" and target == "VBP" else forms[0]
    return match_case(new, tok.text) if new.lower() != lower else None


def subject_verb_disagreement(
    text: str, rng: np.random.Generator, level: float, *, doc: Any = None, **context: Any
) -> str:
    """Break the agreement of one finite verb with its subject ("gold has crossed" -> "gold have crossed")."""
    check_count(level)
    doc = require_doc(text, doc)
    candidates = [
        (t, form)
        for t in doc
        if t.text.isalpha()
        and (form := _disagreeing_form(t))
        and any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in (t.children if t.dep_ != "aux" else t.head.children))
    ]
    if not candidates:
        raise NotApplicable("no present-tense or was/were verb with a subject")
    tok, form = candidates[int(rng.integers(len(candidates)))]
    return edit_tokens(doc, {tok.i: form})
