"""Add or remove the negation of a sentence's main verb, CheckList-style, as token edits.

Shared by the blind-spot negation noise (which must only ADD negation: the paper's fallback heuristic removed
existing negations by mistake, turning the noise into a different test) and MENLI's negation phenomenon
(which adds or removes).
"""

from __future__ import annotations

from typing import Any

from lemminflect import getInflection

from nlgmetrics.perturb.words import match_case

FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})
_DO_SUPPORT = {"VBD": "did", "VBZ": "does", "VBP": "do", "VB": "do"}
_NEGATORS = frozenset({"not", "n't", "never", "no"})
_CONTRACTED_AUX = {"ca": "can", "wo": "will", "sha": "shall"}


def main_verb(sent: Any) -> Any | None:
    """The sentence's root when it is a verb, else its first finite verb or auxiliary."""
    root = sent.root
    if root.pos_ in ("VERB", "AUX"):
        return root
    for tok in sent:
        if tok.pos_ in ("VERB", "AUX") and tok.tag_ in FINITE_TAGS:
            return tok
    return None


def negation_tokens(verb: Any) -> list[Any]:
    """Negators attached to the verb (``not``, ``n't``, ``never``)."""
    return [c for c in verb.children if c.dep_ == "neg" and c.lower_ in _NEGATORS]


def add_negation(sent: Any) -> dict[int, str] | None:
    """Token edits that negate the sentence's main verb, or None when it is already negated / has no verb.

    "She went" -> "She did not go"; "He is here" -> "He is not here"; "They can swim" -> "They can not swim".
    """
    verb = main_verb(sent)
    if verb is None or negation_tokens(verb):
        return None
    auxiliaries = sorted((c for c in verb.children if c.dep_ in ("aux", "auxpass")), key=lambda t: t.i)
    if auxiliaries:
        if any(negation_tokens(aux) for aux in auxiliaries):
            return None
        first = auxiliaries[0]
        if first.lower_ == "to":  # infinitive root ("To be honest"): no finite verb to negate
            return None
        return {first.i: first.text + " not"}
    if verb.pos_ == "AUX" or verb.lemma_ == "be":
        return {verb.i: verb.text + " not"}
    if verb.tag_ in _DO_SUPPORT:
        lemma = verb.lemma_.lower() if verb.lemma_ else verb.lower_
        do = match_case(_DO_SUPPORT[verb.tag_], verb.text)
        return {verb.i: f"{do} not {lemma}"}
    if verb.tag_ in ("VBG", "VBN"):
        return {verb.i: match_case("not", verb.text) + " " + (verb.lower_ if verb.text[:1].isupper() else verb.text)}
    return None


def remove_negation(sent: Any) -> dict[int, str] | None:
    """Token edits that drop the main verb's negation ("did not go" -> "went"), or None if not negated."""
    verb = main_verb(sent)
    if verb is None:
        return None
    holders = [verb] + [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
    for holder in holders:
        negators = negation_tokens(holder)
        if not negators:
            continue
        edits = {neg.i: "" for neg in negators}
        aux = next((c for c in verb.children if c.dep_ == "aux" and c.i < negators[0].i), None)
        if aux is not None and aux.lemma_ == "do" and verb.pos_ == "VERB" and aux.tag_ in ("VBD", "VBZ", "VBP"):
            inflected = getInflection(verb.lemma_, tag=aux.tag_) or (verb.text,)
            edits[aux.i] = ""
            edits[verb.i] = match_case(inflected[0], aux.text)
        elif aux is not None and aux.lower_ in _CONTRACTED_AUX:
            edits[aux.i] = match_case(_CONTRACTED_AUX[aux.lower_], aux.text)
        return edits
    return None
