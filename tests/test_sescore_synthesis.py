"""SEScore error synthesis, pure parts: tokens, budget table, planning, edits, severity, calibration, config,
input handling and summaries. No model is loaded here (see test_sescore_synthesis_models.py)."""

from __future__ import annotations

import math
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sescore.synthesis.budget import BudgetTable
from sescore.synthesis.calibration import MAJOR_KINDS, MINOR_KINDS, choose_threshold, load_pairs, write_threshold
from sescore.synthesis.config import (
    ConfigError,
    SeverityConfig,
    SpanLength,
    SynthesisConfig,
    load_config,
    with_overrides,
)
from sescore.synthesis.edits import apply_edit
from sescore.synthesis.fillers import extract_infill, first_words, pick_token
from sescore.synthesis.inputs import InputError, InputReport, cap_lengths, read_sentences
from sescore.synthesis.planning import (
    draw_edit,
    draw_num_edits,
    step_mix,
    truncated_poisson_weights,
    variant_rng,
)
from sescore.synthesis.severity import agreement, rescale, severities
from sescore.synthesis.summary import summarize_rows
from sescore.synthesis.tokens import join_tokens, normalize_whitespace, split_tokens

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs" / "sescore"

# every kind possible, several attempts: the hardest case for the stratification invariant
ALL_KINDS = {"seq2seq_insert": 1, "seq2seq_replace": 1, "mlm_insert": 1, "mlm_replace": 1, "swap": 1, "delete": 1}
STRESS = SynthesisConfig(
    mix_single_edit=ALL_KINDS,
    mix_multi_edit=ALL_KINDS,
    seq2seq_max_step=5,
    retry_rejected=3,
    max_edits=12,
    num_edits_lambda=6.0,
)


# ------------------------------------------------------------------ tokens


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
@settings(max_examples=200, deadline=None)
def test_tokens_round_trip_any_text(text: str) -> None:
    normalized = normalize_whitespace(text)
    tokens = split_tokens(normalized)
    assert join_tokens(tokens) == normalized
    assert all(t.text and not t.text.isspace() for t in tokens)


def test_tokens_split_punctuation_and_keep_numbers() -> None:
    assert [t.text for t in split_tokens("The U.S. said 1,000 28-year-old people didn't go.")] == [
        "The",
        "U.S",
        ".",
        "said",
        "1,000",
        "28-year-old",
        "people",
        "didn't",
        "go",
        ".",
    ]


# ------------------------------------------------------------------ budget table (stratification)


def _simulate(seed: int, n: int, config: SynthesisConfig = STRESS) -> list[tuple[str, list]]:
    """Run planning + budget + a fake filler on n original tokens; return the per-step origin lists.

    Each token carries its original position (None for new material). An edit is stratified when every token it
    covers is an untouched original token and they were consecutive in the original sentence.
    """
    rng = np.random.default_rng(seed)
    origin: list[int | None] = list(range(n))
    touched = [False] * n
    table = BudgetTable.fresh(n)
    k = draw_num_edits(rng, config)
    log = []
    for step in range(1, k + 1):
        _, edit = draw_edit(rng, table, step, k, config)
        if edit is None:
            continue
        s, length, op = edit.start, edit.length, edit.operation
        covered = {
            "insert": [],
            "replace": list(range(s, s + length)),
            "delete": list(range(s, s + length)),
            "swap": list(range(s, s + length + 1)),
        }[op]
        for i in covered:
            assert not touched[i] and origin[i] is not None, f"seed {seed}: {op} at {s} overlaps an earlier edit"
        ids = [origin[i] for i in covered]
        assert ids == list(range(ids[0], ids[0] + len(ids))) if ids else True, f"seed {seed}: span crosses an edit"
        if op == "insert":
            assert not touched[s] and origin[s] is not None
            if s > 0:
                assert not touched[s - 1] and origin[s - 1] is not None and origin[s - 1] + 1 == origin[s], (
                    f"seed {seed}: insert at {s} abuts an earlier edit"
                )
            else:
                assert origin[0] == 0
        new = int(rng.integers(0, 4)) if op in ("insert", "replace") else 0
        if op == "insert":
            new = max(new, 1)
        table = table.apply(op, s, length, new)
        if op == "swap":
            touched[s] = touched[s + length] = True
            origin[s], origin[s + length] = origin[s + length], origin[s]
        else:
            end = s + (length if op in ("replace", "delete") else 0)
            origin = origin[:s] + [None] * new + origin[end:]
            touched = touched[:s] + [True] * new + touched[end:]
        assert len(table.touched) == len(origin) == len(touched)
        assert list(table.touched) == [t or o is None for t, o in zip(touched, origin)]
        log.append((op, list(origin)))
    return log


def test_no_two_edits_overlap_over_many_seeds() -> None:
    applied = Counter()
    for seed in range(600):
        for op, _ in _simulate(seed, 1 + seed % 30):
            applied[op] += 1
    assert set(applied) == {"insert", "replace", "delete", "swap"}, applied


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60))
@settings(max_examples=300, deadline=None)
def test_no_two_edits_overlap_property(seed: int, n: int) -> None:
    _simulate(seed, n)


def test_budget_matches_paper_table_and_clips() -> None:
    table = BudgetTable.fresh(6)
    assert table.budget().tolist() == [6, 5, 4, 3, 2, 1]
    after_delete = table.apply("delete", 2, 2)  # a b [c d] e f -> a b | e f
    assert after_delete.budget().tolist() == [2, 1, 2, 1]
    assert not after_delete.accepts("delete", 1, 2) and after_delete.accepts("delete", 2, 2)
    assert not after_delete.accepts("insert", 2, 0)  # at the deletion point
    after_replace = table.apply("replace", 1, 1, new_tokens=2)  # a [X Y] c d e f
    assert after_replace.budget().tolist() == [1, 0, 0, 4, 3, 2, 1]
    assert not table.accepts("delete", 0, 6)  # never delete a whole sentence
    with pytest.raises(ValueError, match="not allowed"):
        after_replace.apply("replace", 1, 1, 1)


# ------------------------------------------------------------------ planning


def test_truncated_poisson_weights() -> None:
    w = truncated_poisson_weights(1, 5, 1.5)
    raw = np.array([math.exp(-1.5) * 1.5**j / math.factorial(j) for j in range(5)])
    np.testing.assert_allclose(w, raw / raw.sum())
    np.testing.assert_allclose(truncated_poisson_weights(1, 4, None), [0.25] * 4)
    np.testing.assert_allclose(truncated_poisson_weights(1, 3, 0), [1, 0, 0])


def test_num_edits_follow_shifted_truncated_poisson() -> None:
    config = SynthesisConfig(num_edits_lambda=0.5)
    rng = np.random.default_rng(0)
    counts = Counter(draw_num_edits(rng, config) for _ in range(20000))
    expected = truncated_poisson_weights(1, 5, 0.5)
    for k in range(1, 6):
        assert abs(counts[k] / 20000 - expected[k - 1]) < 0.01


def test_seq2seq_edits_only_at_step_one_and_mix_choice() -> None:
    config = SynthesisConfig(mix_multi_edit={"seq2seq_insert": 2, "mlm_insert": 1})
    assert step_mix(config, 1, 1)["seq2seq_insert"] == 4 and "swap" not in step_mix(config, 1, 1)
    assert step_mix(config, 1, 3) == {"mlm_insert": 1.0, "seq2seq_insert": 2.0}
    assert step_mix(config, 2, 3) == {"mlm_insert": 1.0}


def test_variant_generators_are_keyed_not_ordered() -> None:
    a = variant_rng(7, 3, 1).random(4)
    variant_rng(7, 0, 0).random(100)  # drawing from another variant changes nothing
    assert np.array_equal(a, variant_rng(7, 3, 1).random(4))
    assert not np.array_equal(a, variant_rng(7, 3, 2).random(4))
    assert not np.array_equal(a, variant_rng(8, 3, 1).random(4))


def test_rejected_draw_makes_no_edit_unless_retry() -> None:
    table = BudgetTable.fresh(1)  # one token: deletion always rejected
    only_delete = SynthesisConfig(mix_single_edit={"delete": 1}, mix_multi_edit={"delete": 1})
    kind, edit = draw_edit(np.random.default_rng(0), table, 1, 1, only_delete)
    assert kind == "delete" and edit is None
    retry = with_overrides(SynthesisConfig(mix_single_edit={"delete": 1, "mlm_insert": 1}), retry_rejected=20)
    _, edit = draw_edit(np.random.default_rng(0), table, 1, 1, retry)
    assert edit is not None and edit.kind == "mlm_insert" and edit.attempts >= 1


# ------------------------------------------------------------------ edits


@pytest.mark.parametrize(
    "op,start,length,fill,expected",
    [
        ("insert", 2, 0, ["big"], "The cat big sat, then left."),
        ("insert", 2, 0, [","], "The cat, sat, then left."),
        ("replace", 1, 1, ["dog"], "The dog sat, then left."),
        ("delete", 2, 2, None, "The cat then left."),
        ("swap", 1, 1, None, "The sat cat, then left."),
        ("insert", 0, 0, ["Yesterday"], "Yesterday The cat sat, then left."),
        ("delete", 0, 1, None, "cat sat, then left."),
    ],
)
def test_apply_edit_spacing(op: str, start: int, length: int, fill: list | None, expected: str) -> None:
    tokens = split_tokens("The cat sat, then left.")
    from sescore.synthesis.tokens import words_of

    new = apply_edit(tokens, op, start, length, words_of(" ".join(fill)) if fill else None)
    assert join_tokens(new) == expected


# ------------------------------------------------------------------ filler helpers


def test_pick_token_uses_set_not_order() -> None:
    ids, logits = np.array([9, 3, 5, 1]), np.array([4.0, 3.0, 2.0, 1.0])
    assert pick_token(ids, logits, 0.0, "uniform") == 1
    assert pick_token(ids, logits, 0.99, "uniform") == 9
    assert pick_token(ids[::-1].copy(), logits[::-1].copy(), 0.3, "uniform") == pick_token(ids, logits, 0.3, "uniform")
    picks = Counter(pick_token(ids, logits, u, "proportional") for u in np.linspace(0, 0.999, 1000))
    assert picks[9] > picks[3] > picks[5] > picks[1]


def test_extract_infill_keeps_context_untouched() -> None:
    assert extract_infill("the big red cat sat .", "the", "cat sat .", 10) == "big red"
    assert extract_infill("the cat sat .", "the", "cat sat .", 10) == ""
    assert extract_infill("completely different words here", "the", "cat", 2) == "completely different"
    assert first_words("Monday, and more", 1) == ("Monday", True)


# ------------------------------------------------------------------ severity


def test_severity_needs_entailment_both_ways() -> None:
    cfg = SeverityConfig(threshold=0.9)
    fwd, bwd = np.array([0.95, 0.95, 0.5, 0.91]), np.array([0.95, 0.5, 0.95, 0.9])
    assert severities(fwd, bwd, cfg).tolist() == [-1, -5, -5, -5]
    ratio = SeverityConfig(mode="ratio", threshold=0.9)
    assert severities(np.array([0.7]), np.array([0.72]), ratio, np.array([0.75])).tolist() == [-1]
    assert severities(np.array([0.7]), np.array([0.72]), cfg).tolist() == [-5]
    assert agreement(np.array([0.5]), np.array([0.4]), None, "absolute").tolist() == [0.4]
    with pytest.raises(ValueError, match="self-entailment"):
        agreement(np.array([0.5]), np.array([0.4]), None, "ratio")
    assert rescale(-25) == 0.0 and rescale(0) == 1.0


# ------------------------------------------------------------------ calibration


def test_shipped_calibration_pairs_cover_every_kind() -> None:
    pairs = load_pairs(CONFIGS / "severity_pairs_en.yaml")
    assert len(pairs) >= 20
    assert {p.kind for p in pairs} == set(MINOR_KINDS + MAJOR_KINDS)


def test_choose_threshold_separates_groups() -> None:
    scores = [0.97, 0.95, 0.93, 0.6, 0.4, 0.2]
    threshold, balanced = choose_threshold(scores, [True, True, True, False, False, False])
    assert 0.6 < threshold < 0.93 and balanced == 1.0
    threshold, balanced = choose_threshold([0.9, 0.8, 0.85, 0.1], [True, False, True, False])
    assert balanced == 1.0 and 0.8 < threshold < 0.85


def test_write_threshold_keeps_comments(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    shutil.copy(CONFIGS / "offline_en.yaml", path)
    assert "# paper 0.9" in path.read_text()
    report = {
        "nli": "x",
        "nli_hash": "abc",
        "mode": "ratio",
        "threshold": 0.8123,
        "balanced_accuracy": 0.9,
        "minor_hit_rate": 0.8,
        "major_hit_rate": 1.0,
        "pairs": 24,
    }
    write_threshold(path, report)
    text = path.read_text()
    assert "# stand-in for XLM-R" in text and "# paper 0.9" in text  # block and inline comments survive
    config = load_config(path)
    assert config.severity.threshold == 0.8123 and config.severity.mode == "ratio"
    assert config.severity.calibration["nli_hash"] == "abc"
    write_threshold(path, {**report, "threshold": 0.7})  # again: replaced, not duplicated
    assert load_config(path).severity.threshold == 0.7 and path.read_text().count("calibration:") == 1


# ------------------------------------------------------------------ config


@pytest.mark.parametrize("name", ["paper_en", "paper_de", "offline_en"])
def test_shipped_configs_load(name: str) -> None:
    config = load_config(CONFIGS / f"{name}.yaml")
    assert config.name == name and config.variants == 10 and config.max_edits == 5
    assert config.mix_single_edit["seq2seq_insert"] == 4 and config.mlm.top_k == 4
    assert len(config.hash()) == 12


def test_offline_config_uses_packaged_models_only() -> None:
    config = load_config(CONFIGS / "offline_en.yaml")
    assert config.mlm.model == config.seq2seq.model == "packaged:smollm2" and config.mlm.role == "causal_lm"
    assert config.severity.nli == "packaged:nli-minilm"


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("variants: 3\nmix_single_edit: {teleport: 1}\n")
    with pytest.raises(ConfigError, match="teleport"):
        load_config(path)
    path.write_text("severity: {nli: x, treshold: 0.9}\n")
    with pytest.raises(ConfigError, match="treshold"):
        load_config(path)
    path.write_text("block_size: 10\nsentences_per_call: 4\n")
    with pytest.raises(ConfigError, match="multiple of sentences_per_call"):
        load_config(path)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_config_hash_ignores_runtime_keys_only() -> None:
    base = SynthesisConfig()
    assert replace(base, block_size=512, device="cpu").hash() == base.hash()
    assert replace(base, seed=13).hash() != base.hash()
    assert replace(base, delete_span=SpanLength(1, 3, None)).hash() != base.hash()


# ------------------------------------------------------------------ inputs


def test_read_sentences_counts_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xef\xbb\xbfFirst  sentence.\n\n   \nSecond\tone.\nbad \xff byte\nlast")
    with pytest.raises(InputError, match=r"in.txt:5: not valid UTF-8 \(byte 0xff"):
        read_sentences(path)
    sentences, report = read_sentences(path, bad_utf8="skip")
    assert [(s.index, s.text) for s in sentences] == [(0, "First sentence."), (3, "Second one."), (5, "last")]
    assert (report.empty_skipped, report.bad_utf8_skipped, report.lines, report.used) == (2, 1, 6, 3)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read_sentences(empty)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n")
    with pytest.raises(InputError, match="empty"):
        read_sentences(blank)
    with pytest.raises(InputError, match="nope.txt: no such file"):
        read_sentences(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="is a directory; give a text file with one sentence per line"):
        read_sentences(tmp_path)


def test_long_lines_truncate_or_skip() -> None:
    from sescore.synthesis.pipeline import Sentence

    def count(texts):  # one model token per character: easy to reason about
        return [len(t) for t in texts]

    sentences = [Sentence(0, "short one"), Sentence(1, "a much longer sentence that goes on"), Sentence(2, "x" * 50)]
    report = InputReport()
    kept = cap_lengths(sentences, [(count, 12)], "truncate", report)
    assert [s.text for s in kept] == ["short one", "a much"] and report.long_truncated == 1 and report.long_skipped == 1
    report = InputReport()
    kept = cap_lengths(sentences, [(count, 12)], "skip", report)
    assert [s.index for s in kept] == [0] and report.long_skipped == 2
    with pytest.raises(InputError, match="fits"):
        cap_lengths([Sentence(0, "x" * 50)], [(count, 12)], "skip", InputReport())


# ------------------------------------------------------------------ summary


def test_summary_counts() -> None:
    def step(kind, status, severity):
        return {"kind": kind, "status": status, "severity": severity}

    rows = [
        {
            "sentence_index": 0,
            "score": -6,
            "num_planned": 3,
            "num_applied": 2,
            "history": [step("delete", "applied", -1), step("mlm_insert", "applied", -5), step("swap", "rejected", 0)],
        },
        {
            "sentence_index": 0,
            "score": 0,
            "num_planned": 1,
            "num_applied": 0,
            "history": [step("mlm_replace", "unchanged", 0)],
        },
    ]
    summary = summarize_rows(rows)
    assert summary["edits"] == {"planned": 4, "applied": 2, "unchanged": 1, "rejected": 1, "applied_share": 0.5}
    assert summary["severity"]["minor_share"] == 0.5
    assert summary["score_histogram"]["-6"] == 1 and summary["score_histogram"]["0"] == 1
    assert summary["per_kind"]["swap"]["rejected"] == 1


# ------------------------------------------------------------------ run plan and kept work


def test_plan_blocks_never_splits_or_regroups_a_group() -> None:
    from sescore.synthesis.pipeline import Sentence
    from sescore.synthesis.run import plan_blocks

    sentences = [Sentence(i * 3, f"s{i}") for i in range(11)]
    for block_size in (4, 8, 12):
        blocks = plan_blocks(sentences, 11, block_size, 4)
        groups = [g for block in blocks for g in block]
        assert [g.index for g in groups] == [0, 1, 2]  # the same groups whatever the block size
        assert [[s.index for s in g.sentences] for g in groups][2] == [24, 27, 30]
        assert [len(block) for block in blocks] == [block_size // 4] * (len(blocks) - 1) + [len(blocks[-1])]
    limited = plan_blocks(sentences, 5, 4, 4)
    assert [(g.index, len(g.sentences), g.keep) for block in limited for g in block] == [(0, 4, 4), (1, 4, 1)]
    with pytest.raises(ValueError, match="multiple"):
        plan_blocks(sentences, 11, 6, 4)
    with pytest.raises(ValueError, match="cannot keep"):
        plan_blocks(sentences, 12, 4, 4)


def test_count_kept_adds_groups_of_unwritten_blocks_only() -> None:
    from sescore.synthesis.store import count_kept

    # 10 sentences, blocks of 4 (groups of 2): block 2 holds 2 sentences, group 4 holds sentences 8-9
    assert count_kept(10, 4, 2, [], []) == 0
    assert count_kept(10, 4, 2, [0, 2], []) == 6
    assert count_kept(10, 4, 2, [0], [0, 1, 2]) == 6  # groups 0 and 1 are stale copies inside block 0
    assert count_kept(9, 4, 2, [], [4]) == 1  # the last group is cut by the end of the input
