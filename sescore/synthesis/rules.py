"""Rule edits: errors real MT and summarisation systems make, written by plain functions instead of a language model.

The paper's edits come from a masked LM and mBART, so its errors are fluent-but-wrong fills. Real system errors
also include wrong numbers and names, flipped negation, mistranslated words and broken agreement. The toolkit's
``nlgmetrics.perturb`` package already writes each of these as a pure function of (text, spaCy doc, generator);
this module reuses them instead of copying them.

A perturbation rewrites the whole text, so the edit it made is recovered afterwards as the one token span where
the old and the new token lists differ (common prefix and suffix by token text). That span then goes through the
same budget table as every other edit: a rule edit never touches an earlier edit, and a rewrite whose changes lie
far apart (``rules.max_span``) is rejected instead of being counted as one error. Severity is labelled by NLI
exactly as for the other edits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from sescore.synthesis.config import GERMAN_RULE_KINDS, RULE_LANGUAGES, RULE_PERTURBATIONS, RulesConfig
from sescore.synthesis.tokens import Token, join_tokens, split_tokens


@dataclass(frozen=True)
class RuleEdit:
    """A rule's rewrite as one edit on the token list: ``tokens[start:start + length]`` becomes ``fill``."""

    operation: str  # insert, replace or delete
    start: int
    length: int
    fill: tuple[Token, ...]


@dataclass
class RuleContext:
    """What the rule perturbations need: for English a spaCy pipeline (parses) and a word lexicon (substitutes);
    for German nothing but the language (its rules read words only)."""

    nlp: Any
    lexicon: Any
    spec: str
    language: str = "en"

    def describe(self) -> str:
        if self.language != "en":
            return f"{self.spec}@rules-{self.language}"
        meta = getattr(self.nlp, "meta", {}) or {}
        return f"{self.spec}@{meta.get('name', '?')}-{meta.get('version', '?')}"


def load_rule_context(config: RulesConfig, language: str = "en") -> RuleContext:
    """The English rules' spaCy pipeline and lexicon, or (``language="de"``) the German word rules."""
    if language == "de":
        return RuleContext(None, None, "nlgmetrics.perturb.german", "de")
    if language != "en":
        raise ValueError(f"rule edits exist for {', '.join(RULE_LANGUAGES)}, not '{language}'")
    from nlgmetrics.modelroles import load_spacy
    from nlgmetrics.perturb.lexicon import default_lexicon

    return RuleContext(load_spacy(config.spacy), default_lexicon(max_names=config.lexicon_names), config.spacy)


def german_rule_edit(kind: str, tokens: Sequence[Token], seed: int) -> RuleEdit | str:
    """A German rule's one edit on the token list (spacing kept), or the reason it makes none."""
    from nlgmetrics.perturb.errors import NotApplicable
    from nlgmetrics.perturb.german import GERMAN_RULES

    try:
        edit = GERMAN_RULES[GERMAN_RULE_KINDS[kind]]([t.text for t in tokens], np.random.default_rng(seed))
    except NotApplicable as reason:
        return f"not applicable: {reason}"
    if edit.length:  # a replacement keeps the spacing of the words it replaces
        fill = tuple(Token(w, tokens[edit.start].space_before if k == 0 else True) for k, w in enumerate(edit.fill))
    else:
        fill = tuple(Token(w, edit.start > 0 or k > 0) for k, w in enumerate(edit.fill))
    return _rule_edit(edit.start, edit.length, fill)


def _rule_edit(start: int, length: int, fill: tuple[Token, ...]) -> RuleEdit:
    """The edit replacing ``length`` tokens at ``start`` by ``fill``, its operation named by its shape."""
    operation = "insert" if length == 0 else "delete" if not fill else "replace"
    return RuleEdit(operation, start, length, fill)


def token_diff(old: Sequence[Token], new: Sequence[Token]) -> RuleEdit | None:
    """The single edit turning ``old`` into ``new`` (tokens compared by text); None when they are equal."""
    a, b = [t.text for t in old], [t.text for t in new]
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    length, fill = len(a) - prefix - suffix, tuple(new[prefix : len(new) - suffix])
    if length == 0 and not fill:
        return None
    return _rule_edit(prefix, length, fill)


def rule_edits(
    kinds: Sequence[str],
    token_lists: Sequence[list[Token]],
    seeds: Sequence[int],
    context: RuleContext,
    max_span: int,
) -> list[RuleEdit | str]:
    """For each (kind, tokens, seed): the edit the rule makes, or the reason it makes none.

    English texts are parsed in one ``nlp.pipe`` call; German rules read the words. Each rule draws only from
    ``default_rng(seed)``, so the result for one variant never depends on the others.
    """
    if not len(kinds) == len(token_lists) == len(seeds):
        raise ValueError(f"rule_edits: {len(kinds)} kinds, {len(token_lists)} token lists, {len(seeds)} seeds")
    if context.language == "de":
        made = [german_rule_edit(k, tokens, seed) for k, tokens, seed in zip(kinds, token_lists, seeds)]
    else:
        made = _english_rule_edits(kinds, token_lists, seeds, context)
    out: list[RuleEdit | str] = []
    for edit in made:
        width = max(edit.length, len(edit.fill)) if isinstance(edit, RuleEdit) else 0
        out.append(f"span of {width} tokens > rules.max_span {max_span}" if width > max_span else edit)
    return out


def _english_rule_edits(
    kinds: Sequence[str], token_lists: Sequence[list[Token]], seeds: Sequence[int], context: RuleContext
) -> list[RuleEdit | str]:
    """The English rules (``nlgmetrics.perturb`` on one spaCy pass), each rewrite turned back into one edit."""
    from nlgmetrics.perturb.errors import NotApplicable
    from nlgmetrics.perturb.registry import get_perturbation

    texts = [join_tokens(tokens) for tokens in token_lists]
    docs = list(context.nlp.pipe(texts)) if texts else []
    out: list[RuleEdit | str] = []
    for kind, tokens, seed, text, doc in zip(kinds, token_lists, seeds, texts, docs):
        perturbation = get_perturbation(RULE_PERTURBATIONS[kind])
        try:
            new_text = perturbation(text, np.random.default_rng(seed), 1, doc=doc, lexicon=context.lexicon)
        except NotApplicable as reason:
            out.append(f"not applicable: {reason}")
            continue
        edit = token_diff(tokens, split_tokens(new_text))
        out.append("not applicable: text unchanged" if edit is None else edit)
    return out


__all__ = [
    "GERMAN_RULE_KINDS",
    "RuleContext",
    "RuleEdit",
    "german_rule_edit",
    "load_rule_context",
    "rule_edits",
    "token_diff",
]
