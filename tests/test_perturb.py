"""Perturbation library: registry contract, hypothesis properties, and hand-written golden examples."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nlgmetrics.perturb import (
    FAMILIES,
    MENLI_CODES,
    PERTURBATIONS,
    NotApplicable,
    default_lexicon,
    get_perturbation,
    noise_ratio,
    perturbations_in,
    spell_out_numbers,
    top_ngrams,
)
from nlgmetrics.perturb.targeted import DEFAULT_INJECTION

PARAGRAPH = (
    "She went to the office in Boston on Monday. And she talked to her staff about Paris and London. "
    "Mark Johnson said the company had sold 3,000 cars in 2019, although the market was slow. "
    "We think they will not change their plans soon. The old bridge over the river was closed by the police. "
    "Mary bought a new house near the lake, and her brother painted the doors. "
    "Investors in New York and Tokyo watched the prices rise for three weeks. "
    "The children played in the park while their parents read the newspapers."
)
WORDS = (
    "the a an The cat dogs John Mary Paris she he we they us them his her it is was were has have "
    "went go talked sold 3,000 2019 $850 30% not n't never in on to of and , . ? ! ; : big old quickly "
    "office house river price office. cars. Boston. ran runs happy"
).split()
MODEL_FREE = [name for name, p in PERTURBATIONS.items() if "mlm" not in p.needs]
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def nlp():
    from nlgmetrics.modelroles import load_spacy

    return load_spacy("packaged:en_core_web_sm")


@pytest.fixture(scope="module")
def shared():
    """Context every perturbation may draw on, apart from the per-text parse."""
    return {
        "pool": ["Prices fell sharply.", "This is an amazing game.", "The weather was cold."],
        "source": "Sie ging ins Büro.",
        "ngrams": ["in the middle of", "one of the most", "at the end of"],
        "vocabulary": ["apple", "river", "blue", "seven"],
        "lexicon": default_lexicon(),
    }


def _apply(name, text, nlp, shared, level, seed=0, **extra):
    perturbation = get_perturbation(name)
    doc = nlp(text) if "doc" in perturbation.needs else None
    return perturbation(text, np.random.default_rng(seed), level, doc=doc, **shared, **extra)


def _outcome(name, text, nlp, shared, level, seed):
    try:
        return _apply(name, text, nlp, shared, level, seed)
    except NotApplicable as refusal:
        return ("NotApplicable", refusal.reason)


english_like = st.lists(st.sampled_from(WORDS), min_size=0, max_size=30).map(" ".join)
any_text = st.one_of(st.text(max_size=60), english_like)


# ---------------------------------------------------------------- registry contract


def test_registry_covers_every_family_and_the_spec_lists():
    assert set(FAMILIES) == {p.family for p in PERTURBATIONS.values()}
    assert len(perturbations_in("fluency")) == 10
    assert len(perturbations_in("consistency")) == 8
    assert len(perturbations_in("menli")) == 12
    assert set(MENLI_CODES) == {
        "add",
        "drop",
        "neg",
        "num",
        "pron",
        "word_NN",
        "word_JJ",
        "word_VB",
        "name",
        "typo",
        "jumble",
        "subject_verb_dis",
    }
    for name in (
        "positioned_shuffle_start",
        "positioned_random_end",
        "injection",
        "frequent_ngram",
        "copy_source",
        "repetition",
    ):
        assert get_perturbation(name).family == "targeted"
    halved = {n for n, p in PERTURBATIONS.items() if p.halve_noise_ratio}
    assert {
        "local_swap",
        "middle_swap",
        "sentence_switching",
        "ne_switching",
        "verb_switching",
        "noun_switching",
    } <= halved
    assert "truncation" not in halved and "token_drop" not in halved


def test_registry_rejects_bad_calls(shared):
    with pytest.raises(KeyError, match="unknown perturbation"):
        get_perturbation("nope")
    with pytest.raises(ValueError, match="needs context doc"):
        get_perturbation("negation")("He went home.", np.random.default_rng(0), 1.0)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        get_perturbation("token_drop")("a b c", 0, 0.5)
    with pytest.raises(ValueError, match="share in"):
        get_perturbation("token_drop")("a b c", np.random.default_rng(0), 1.5)
    with pytest.raises(ValueError, match="whole number"):
        get_perturbation("repetition")("a b c d e", np.random.default_rng(0), 2.5)
    with pytest.raises(ValueError, match="perturbations_in|unknown family"):
        perturbations_in("syntax")


# ---------------------------------------------------------------- properties


@PROPERTY
@pytest.mark.parametrize("name", MODEL_FREE)
@given(text=any_text, seed=st.integers(0, 2**32 - 1), level_index=st.integers(0, 5))
def test_never_crashes_is_deterministic_and_level_zero_is_identity(nlp, shared, name, text, seed, level_index):
    perturbation = get_perturbation(name)
    level = perturbation.default_levels[level_index % len(perturbation.default_levels)]
    first = _outcome(name, text, nlp, shared, level, seed)
    assert isinstance(first, str) or first[0] == "NotApplicable"
    assert _outcome(name, text, nlp, shared, level, seed) == first
    assert _apply(name, text, nlp, shared, 0) == text


# Noises whose edits for a seed are nested or counted (switches use disjoint pairs, drawn from one stream),
# so the noise ratio cannot shrink as the level grows.
PER_SEED_MONOTONE = [
    "truncation",
    "article_removal",
    "preposition_removal",
    "stopword_removal",
    "verb_lemmatization",
    "token_drop",
    "repeated_token",
    "noised_punctuation",
    "negation",
    "repetition",
    "generic_named_entity",
    "verb_switching",
    "noun_switching",
]


@PROPERTY
@pytest.mark.parametrize("name", PER_SEED_MONOTONE)
@given(text=english_like, seed=st.integers(0, 2**32 - 1))
def test_noise_ratio_grows_with_level_for_each_seed(nlp, shared, name, text, seed):
    perturbation = get_perturbation(name)
    if not text.split():
        return
    ratios = []
    for level in perturbation.default_levels:
        out = _outcome(name, text, nlp, shared, level, seed)
        if not isinstance(out, str):
            return
        ratios.append(noise_ratio(text, out, perturbation.halve_noise_ratio))
    assert ratios == sorted(ratios), ratios


@pytest.mark.parametrize("name", PER_SEED_MONOTONE)
def test_noise_ratio_grows_with_level_on_a_paragraph_where_every_level_applies(nlp, shared, name):
    """The property above skips word salad a perturbation cannot apply to; here every level must apply, so
    each perturbation is checked on at least these five seeds whatever the random examples were."""
    perturbation = get_perturbation(name)
    for seed in range(5):
        outs = [_outcome(name, PARAGRAPH, nlp, shared, level, seed) for level in perturbation.default_levels]
        assert all(isinstance(out, str) for out in outs), (seed, outs)
        ratios = [noise_ratio(PARAGRAPH, out, perturbation.halve_noise_ratio) for out in outs]
        assert ratios == sorted(ratios) and ratios[-1] > 0, (seed, ratios)


@pytest.mark.parametrize(
    "name",
    [
        "local_swap",
        "middle_swap",
        "sentence_switching",
        "sentence_replacement",
        "verb_switching",
        "noun_switching",
        "ne_switching",
    ],
)
def test_noise_ratio_grows_with_level_on_average(nlp, shared, name):
    perturbation = get_perturbation(name)
    doc = nlp(PARAGRAPH)
    means = []
    for level in perturbation.default_levels:
        ratios = [
            noise_ratio(
                PARAGRAPH,
                perturbation(PARAGRAPH, np.random.default_rng(seed), level, doc=doc, **shared),
                perturbation.halve_noise_ratio,
            )
            for seed in range(8)
        ]
        means.append(float(np.mean(ratios)))
    assert means[0] > 0
    assert all(a < b for a, b in zip(means, means[1:])), means


# ---------------------------------------------------------------- golden examples: fluency


@pytest.mark.parametrize(
    "name, text, level, expected",
    [
        ("article_removal", "The cat sat on a mat.", 1.0, "cat sat on mat."),
        ("truncation", "She went to the office today.", 0.5, "She went to."),
        ("preposition_removal", "She went to the office in Boston.", 1.0, "She went the office Boston."),
        ("stopword_removal", "She went to the office.", 1.0, "went office."),
        ("verb_lemmatization", "She went to the office.", 1.0, "She go to the office."),
        ("middle_swap", "She went to the office.", 1.0, "The office she went to."),
        ("noised_punctuation", "Hello, world. Pay 3.5 now!", 1.0, "Hello. world, Pay 3.5 now,"),
    ],
)
def test_fluency_golden(nlp, shared, name, text, level, expected):
    assert _apply(name, text, nlp, shared, level) == expected


def test_word_count_noises_edit_exactly_the_promised_number_of_words(nlp, shared):
    text = "one two three four five six seven eight nine ten"
    dropped = _apply("token_drop", text, nlp, shared, 0.3, seed=4).split()
    assert len(dropped) == 7 and dropped == [w for w in text.split() if w in dropped]
    repeated = _apply("repeated_token", text, nlp, shared, 0.2, seed=4).split()
    assert len(repeated) == 12 and sum(a == b for a, b in zip(repeated, repeated[1:])) == 2
    swapped = _apply("local_swap", text, nlp, shared, 0.1, seed=4).split()
    assert Counter(swapped) == Counter(text.split()) and swapped != text.split()


def test_layout_survives_word_edits(nlp, shared):
    text = "First line here.\nSecond line there now."
    out = _apply("article_removal", "The dog.\n\nA cat.", nlp, shared, 1.0)
    assert out == "dog.\n\ncat."
    assert _apply("truncation", text, nlp, shared, 0.4) == "First line here.\nSecond line."


def test_refusals_are_raised_not_returned(nlp, shared):
    for name, text, level in [
        ("article_removal", "No articles here.", 1.0),
        ("truncation", "Hi", 0.5),
        ("truncation", "; the", 0.5),  # only punctuation would remain (found by hypothesis)
        ("local_swap", "same same same", 0.5),
        ("sentence_switching", "Only one sentence here.", 1),
        ("negation", "He did not go.", 1.0),
        ("ne_switching", "Paris is nice.", 1),
        ("copy_source", "A hypothesis.", 1),
        ("menli_number", "No numbers at all.", 1),
        ("menli_name", "Nobody was here.", 1),
        ("positioned_shuffle_start", "too short", 10),
    ]:
        ctx = dict(shared, source=None) if name == "copy_source" else shared
        with pytest.raises(NotApplicable):
            _apply(name, text, nlp, ctx, level)
    with pytest.raises(NotApplicable, match="empty"):
        _apply("stopword_removal", "it is the", nlp, shared, 1.0)


# ---------------------------------------------------------------- golden examples: consistency

TWO_SENTENCES = "She went to the office in Boston. And she talked to her staff about Paris."


def test_consistency_golden(nlp, shared):
    assert _apply("negation", TWO_SENTENCES, nlp, shared, 1.0) == (
        "She did not go to the office in Boston. And she did not talk to her staff about Paris."
    )
    assert _apply("generic_named_entity", "She went to the office in Boston.", nlp, shared, 1.0) == (
        "She went to the office in a place."
    )
    assert _apply("ne_switching", TWO_SENTENCES, nlp, shared, 1) == (
        "She went to the office in Paris. And she talked to her staff about Boston."
    )
    verbs = "She went to the office. She talked to her staff."
    assert _apply("verb_switching", verbs, nlp, shared, 1) == "She talked to the office. She went to her staff."
    assert _apply("noun_switching", verbs, nlp, shared, 1) == "She went to the staff. She talked to her office."
    assert _apply("sentence_switching", "She went home. He stayed out.", nlp, shared, 1) == (
        "He stayed out. She went home."
    )


def test_negation_only_adds(nlp, shared):
    text = "He did not go. She stayed."
    out = _apply("negation", text, nlp, shared, 1.0)
    assert out == "He did not go. She did not stay."


def test_sentence_switching_can_pin_the_last_sentence(nlp, shared):
    text = "One is here. Two is there. Three is everywhere. Four ends it."
    for seed in range(5):
        out = _apply("sentence_switching", text, nlp, shared, 1, seed=seed, keep_last=True)
        assert out.endswith("Four ends it.") and out != text


def test_sentence_switches_never_undo_each_other(nlp, shared):
    """Regression (THumB report: sentence switching applied to 2/100 summaries): two switches of a
    three-sentence summary make a 3-cycle, as the paper's two distinct successive switches do; disjoint pairs
    needed four sentences. Level n always yields a permutation no fewer than n switches can undo."""
    three = "One is here. Two is there. Three is everywhere."
    sentences = ["One is here.", "Two is there.", "Three is everywhere."]
    for seed in range(10):
        out = _apply("sentence_switching", three, nlp, shared, 2, seed=seed)
        assert sorted(out.split(" ")) == sorted(three.split(" "))  # same sentences, only moved
        assert all(out.index(s) != three.index(s) for s in sentences), out  # a 3-cycle moves every sentence
    with pytest.raises(NotApplicable, match="2 switch\\(es\\) need 3 candidates, has 2"):
        _apply("sentence_switching", "She went home. He stayed out.", nlp, shared, 2)
    five = " ".join(f"Sentence {w} is here." for w in ("one", "two", "three", "four", "five"))
    parts = [f"Sentence {w} is here." for w in ("one", "two", "three", "four", "five")]
    for level in (1, 2, 3, 4):
        for seed in range(5):
            out = _apply("sentence_switching", five, nlp, shared, level, seed=seed)
            moved_to = [out.index(p) for p in parts]
            perm = [sorted(moved_to).index(x) for x in moved_to]
            seen, cycles = set(), 0
            for start in range(5):
                if start not in seen:
                    cycles += 1
                    while start not in seen:
                        seen.add(start)
                        start = perm[start]
            assert 5 - cycles == level  # transposition distance equals the level
    with pytest.raises(NotApplicable):
        _apply("sentence_switching", five, nlp, shared, 5)


def test_sentence_replacement_uses_foreign_sentences(nlp, shared):
    text = "She went home. He stayed out."
    out = _apply("sentence_replacement", text, nlp, shared, 1, seed=3)
    kept = [s for s in ("She went home.", "He stayed out.") if s in out]
    assert len(kept) == 1 and any(s in out for s in shared["pool"])
    with pytest.raises(NotApplicable):
        _apply("sentence_replacement", text, nlp, shared, 3)


# ---------------------------------------------------------------- golden examples: targeted


def test_targeted_golden(nlp, shared):
    words = [f"w{i}" for i in range(20)]
    text = " ".join(words)
    for position, window in (("start", slice(0, 10)), ("middle", slice(5, 15)), ("end", slice(10, 20))):
        out = _apply(f"positioned_shuffle_{position}", text, nlp, shared, 10, seed=1).split()
        assert sorted(out[window]) == sorted(words[window]) and out[window] != words[window]
        outside = [i for i in range(20) if not window.start <= i < window.stop]
        assert [out[i] for i in outside] == [words[i] for i in outside]
        random_span = _apply(f"positioned_random_{position}", text, nlp, shared, 10, seed=1).split()
        assert set(random_span[window]) <= set(shared["vocabulary"])
    assert _apply("repetition", "a b c d e", nlp, shared, 2) == "a b c d e b c d e b c d e"
    assert _apply("copy_source", "A hypothesis.", nlp, shared, 1) == shared["source"]
    assert _apply("injection", "Any summary.", nlp, shared, 1) == DEFAULT_INJECTION
    freq = _apply("frequent_ngram", "one two three four five six seven", nlp, shared, 1.0, seed=2).split()
    vocab = {w for g in shared["ngrams"] for w in g.split()}
    assert len(freq) == 7 and set(freq) <= vocab


def test_top_ngrams_counts_and_breaks_ties_stably():
    lines = ["a b c d", "a b c e", "x a b c"]
    assert top_ngrams(lines, n=3, k=2) == ["a b c", "b c d"]
    with pytest.raises(ValueError):
        top_ngrams(["a"], n=3)


# ---------------------------------------------------------------- golden examples: MENLI phenomena


def test_menli_golden(nlp, shared):
    assert (
        _apply("menli_pronoun", "Unless we change course soon, the world will regard us with scorn.", nlp, shared, 1)
        == "Unless they change course soon, the world will regard them with scorn."
    )
    assert (
        _apply("menli_subject_verb", "Now that gold has crossed the barrier, why can't it rise?", nlp, shared, 1)
        == "Now that gold have crossed the barrier, why can't it rise?"
    )
    assert _apply("menli_negation", "He does not like it.", nlp, shared, 1) == "He likes it."
    assert _apply("menli_negation", "He likes it.", nlp, shared, 1) == "He does not like it."
    assert _apply("menli_negation", "I can't swim.", nlp, shared, 1) == "I can swim."


def test_menli_numbers(nlp, shared):
    out = _apply("menli_number", "Gold hit $850 in 1980.", nlp, shared, 1, seed=5)
    assert out.startswith("Gold hit $") and out.endswith(" in 1980.")
    new = out.split("$")[1].split()[0]
    assert len(new) == 3 and new.isdigit() and new != "850" and new[0] != "0"
    text = "Back then, gold hit $850, or well over $2,000 and 30% more."
    assert spell_out_numbers(text, nlp(text)) == (
        "Back then, gold hit eight hundred and fifty dollars, or well over two thousand dollars and thirty "
        "percent more."
    )


def test_menli_name_keeps_gender(nlp, shared):
    lexicon = shared["lexicon"]
    for seed in range(5):
        out = _apply("menli_name", "Mark showed home videos to Mark's friends.", nlp, shared, 1, seed=seed)
        new = out.split()[0]
        assert new != "Mark" and lexicon.gender_of(new) == "male"
        assert out.count(new) == 2


def test_menli_single_word_errors(nlp, shared):
    text = "The old price of gold has risen sharply this year."
    tags = {t.i: t for t in nlp(text)}
    for name, pos in (
        ("menli_noun_mismatch", "NOUN"),
        ("menli_verb_mismatch", "VERB"),
        ("menli_adjective_mismatch", "ADJ"),
    ):
        out = _apply(name, text, nlp, shared, 1, seed=7)
        changed = [i for i, (a, b) in enumerate(zip(text.split(), out.split())) if a != b]
        assert len(out.split()) == len(text.split()) and len(changed) == 1, (name, out)
        assert tags[changed[0]].pos_ == pos
    added = _apply("menli_addition", text, nlp, shared, 1, seed=7).split()
    assert len(added) == len(text.split()) + 2 and "and" in added
    assert tags[added.index("and") - 1].pos_ == "NOUN"


def test_menli_surface_errors(nlp, shared):
    text = "that the price was inevitably headed for the top"
    typo = _apply("menli_typo", text, nlp, shared, 1, seed=1)
    assert sorted(typo) == sorted(text) and sum(a != b for a, b in zip(typo, text)) == 2
    jumbled = _apply("menli_jumbling", text, nlp, shared, 1, seed=1)
    assert Counter(jumbled.split()) == Counter(text.split()) and jumbled != text
    for seed in range(5):
        dropped = _apply("menli_omission", text, nlp, shared, 0.2, seed=seed).split()
        words = text.split()
        width = len(words) - len(dropped)
        assert width == math.ceil(0.2 * len(words))
        assert any(dropped == words[:s] + words[s + width :] for s in range(len(words) - width + 1))
