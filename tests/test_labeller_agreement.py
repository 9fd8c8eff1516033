"""The severity-labeller comparison of bench/labeller_agreement.py on hand-made rows (no models)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.labeller_agreement import balanced_accuracy, binary_kappa, edit_agreement, matched_steps, seeded_rows


def _step(text: str, kind: str, severity: int, status: str = "applied") -> dict:
    return {"text": text, "kind": kind, "severity": severity, "status": status}


def _row(sentence: int, variant: int, history: list[dict], reference: str = "a b c") -> dict:
    return {"sentence_index": sentence, "variant_index": variant, "reference": reference, "history": history}


def test_matched_steps_follow_a_trajectory_only_while_both_runs_wrote_the_same_texts():
    first = [
        _row(0, 0, [_step("a c", "delete", -1), _step("a x c", "mlm_insert", -5), _step("a x", "delete", -1)]),
        _row(0, 1, [_step("a b", "delete", -1, "rejected"), _step("b c", "delete", -5)]),
        _row(1, 0, [_step("q", "delete", -1)], reference="other"),
    ]
    second = [
        _row(0, 0, [_step("a c", "delete", -5), _step("a y c", "mlm_insert", -5), _step("a y", "delete", -1)]),
        _row(0, 1, [_step("a b", "delete", -1, "rejected"), _step("b c", "delete", -1)]),
        _row(1, 0, [_step("q", "delete", -1)], reference="changed"),  # another reference: not the same row
    ]
    steps = matched_steps(first, second)
    # row (0, 0): the first step matches, the second wrote other text, so the third is not compared either;
    # row (0, 1): the rejected step is followed but not counted
    assert steps == [("delete", -1, -5), ("delete", -5, -1)]
    overall, per_kind = edit_agreement(steps + [("mlm_insert", -5, -5), ("mlm_insert", -1, -1)], major=-5)
    assert overall["steps"] == 4 and overall["same_severity"] == 0.5
    assert overall["minor_to_major"] == 1 and overall["major_to_minor"] == 1
    assert overall["major_share"] == [0.5, 0.5]
    assert [(k["kind"], k["steps"], k["same_severity"]) for k in per_kind] == [
        ("delete", 2, 0.0),
        ("mlm_insert", 2, 1.0),
    ]


def test_agreement_statistics_and_seeded_rows():
    yes = np.array([1, 1, 0, 0, 1, 0])
    assert binary_kappa(yes, yes) == pytest.approx(1.0)
    assert binary_kappa(yes, 1 - yes) == pytest.approx(-1.0)
    assert balanced_accuracy(np.array([1, 1, 1, 0]), np.array([1, 1, 0, 0])) == pytest.approx(0.75)
    rows = [{"i": i} for i in range(50)]
    picked = seeded_rows(rows, 10, seed=3)
    assert picked == seeded_rows(rows, 10, seed=3) and picked != seeded_rows(rows, 10, seed=4)
    assert [r["i"] for r in picked] == sorted(r["i"] for r in picked) and len({r["i"] for r in picked}) == 10
    assert seeded_rows(rows, 80, seed=0) == rows
