"""German rule edits: parser-free nicht/kein negation, numbers and names, and their place in synthesis."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nlgmetrics.perturb.errors import NotApplicable
from nlgmetrics.perturb.german import NAME_LISTS, WordEdit, name_edit, negation_edit, number_edit

GERMAN = [
    "Der Stadtrat hat den neuen Haushalt am Montag beschlossen.",
    "Es gibt keine Lösung für das Problem in Berlin.",
    "Ein Mann mit roter Mütze sitzt auf einer Bank.",
    "Die Ministerin ist nicht nach Wien gereist.",
    "Bei dem Unfall wurden drei Menschen verletzt.",
    "Die Firma beschäftigt rund 2.000 Mitarbeiter in Deutschland.",
]


def _apply(words: list[str], edit: WordEdit) -> list[str]:
    return words[: edit.start] + list(edit.fill) + words[edit.start + edit.length :]


def _words(text: str) -> list[str]:
    """Words and the final full stop (inner dots belong to numbers such as 2.000)."""
    return text[:-1].split() + ["."]


def test_negation_flips_polarity_at_one_place_in_every_way_it_knows():
    seen = set()
    for seed in range(40):
        for text in ("Es gibt keine Lösung .", "Er ist nicht müde .", "Ein Hund bellt .", "Sie kann schwimmen ."):
            words = text.split()
            new = _apply(words, negation_edit(words, np.random.default_rng(seed)))
            seen.add(" ".join(new))
    assert seen == {
        "Es gibt eine Lösung .",
        "Er ist müde .",
        "Kein Hund bellt .",
        "Sie kann nicht schwimmen .",
    }
    with pytest.raises(NotApplicable):  # "ein" as the particle of a separable verb is not an article
        negation_edit("Er steigt ein .".split(), np.random.default_rng(0))
    with pytest.raises(NotApplicable):  # no nicht, no kein, no article, no form of sein or a modal verb
        negation_edit("Der Hund rennt .".split(), np.random.default_rng(0))


def test_numbers_keep_their_shape_and_names_stay_in_their_list():
    rng = np.random.default_rng(3)
    for _ in range(20):
        edit = number_edit(_words(GERMAN[5]), rng)
        (new,) = edit.fill
        assert _words(GERMAN[5])[edit.start] == "2.000" and new != "2.000" and len(new) == 5 and new[1] == "."
    edit = number_edit(_words(GERMAN[4]), np.random.default_rng(0))
    assert edit.fill[0] != "drei" and edit.fill[0].islower()
    for seed in range(10):
        edit = name_edit(_words(GERMAN[5]), np.random.default_rng(seed))
        assert edit.fill[0] in NAME_LISTS["country"] and edit.fill[0] != "Deutschland"
    with pytest.raises(NotApplicable, match="number"):
        number_edit("Der Hund schläft .".split(), np.random.default_rng(0))
    with pytest.raises(NotApplicable, match="name"):
        name_edit("Der Hund schläft .".split(), np.random.default_rng(0))


def test_the_same_seed_gives_the_same_edit():
    words = _words(GERMAN[2])  # "Ein ... einer": two places, so the seed decides
    a = [negation_edit(words, np.random.default_rng(s)) for s in range(10)]
    assert a == [negation_edit(words, np.random.default_rng(s)) for s in range(10)]


def test_synthesis_rule_edits_in_german_need_no_parser_and_keep_spacing():
    from sescore.synthesis.config import RulesConfig
    from sescore.synthesis.rules import RuleEdit, load_rule_context, rule_edits
    from sescore.synthesis.tokens import join_tokens, split_tokens

    context = load_rule_context(RulesConfig(), "de")
    assert context.nlp is None and context.describe() == "nlgmetrics.perturb.german@rules-de"
    tokens = [split_tokens(t) for t in GERMAN]
    made = rule_edits(["rule_negation"] * len(tokens), tokens, list(range(len(tokens))), context, max_span=6)
    # "hat ... beschlossen" and "beschäftigt" offer no parser-free negation; the four others do
    assert [isinstance(e, RuleEdit) for e in made] == [False, True, True, True, True, False], made
    for toks, edit in zip(tokens, made):
        if isinstance(edit, RuleEdit):
            text = join_tokens(toks[: edit.start] + list(edit.fill) + toks[edit.start + edit.length :])
            assert "  " not in text and not text.startswith(" ") and text != join_tokens(toks)
    (refused,) = rule_edits(["rule_name"], [split_tokens("Der Hund schläft.")], [0], context, 6)
    assert refused.startswith("not applicable")
    with pytest.raises(ValueError, match="not 'fr'"):
        load_rule_context(RulesConfig(), "fr")


def test_a_german_recipe_refuses_english_only_rule_kinds():
    from dataclasses import replace

    from sescore.synthesis.config import ConfigError, load_config, validate

    config = load_config("configs/sescore/offline_de.yaml")
    assert config.language == "de" and set(config.rule_kinds_in_use()) == {"rule_negation", "rule_number", "rule_name"}
    mix = {**config.mix_single_edit, "rule_noun": 1}
    with pytest.raises(ConfigError, match=r"rule_noun.*English parse"):
        validate(replace(config, mix_single_edit=mix))
    with pytest.raises(ConfigError, match="not 'fr'"):
        validate(replace(config, language="fr"))


def test_german_calibration_pairs_cover_every_kind():
    from sescore.synthesis.calibration import MAJOR_KINDS, MINOR_KINDS, load_pairs

    pairs = load_pairs(Path("configs/sescore/severity_pairs_de.yaml"))
    counts = {kind: sum(p.kind == kind for p in pairs) for kind in MINOR_KINDS + MAJOR_KINDS}
    assert min(counts.values()) >= 5, counts
