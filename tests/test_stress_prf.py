"""BERTScore P/R/F stress metrics and the paper's CNN/DM set-up on the command line (gold system, all refs)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nlgmetrics.cli import evaluate
from nlgmetrics.stress.bertscore_prf import BERTScorePRF, aggregate, precision_recall_f1

VOCAB = {w: i for i, w in enumerate("a b c d e f g h".split())}


def one_hot_embed(calls):
    """Token vectors = one-hot word ids: BERTScore reduces to exact word matching, computable by hand."""

    def embed(texts):
        calls.append(list(texts))
        return [np.eye(len(VOCAB), dtype=np.float32)[[VOCAB[w] for w in t.split()]] for t in texts]

    return embed


def test_precision_rises_and_recall_falls_when_a_text_is_truncated():
    eye = np.eye(4, dtype=np.float32)
    ref = eye[[0, 1, 2, 3]]
    assert precision_recall_f1(eye[[0, 1, 2, 3]], ref) == pytest.approx((1.0, 1.0, 1.0))
    p, r, f = precision_recall_f1(eye[[0, 1, 3, 3]][:2], ref)  # "cut" to two matching tokens
    assert (p, r) == pytest.approx((1.0, 0.5)) and f == pytest.approx(2 / 3)


def test_aggregation_is_per_variant():
    triples = [(1.0, 0.2, 0.3), (0.5, 0.6, 0.55)]
    assert aggregate(triples, "mean") == pytest.approx((0.75, 0.4, 0.425))
    assert aggregate(triples, "max") == pytest.approx((1.0, 0.6, 0.55))
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(triples, "median")


def test_three_variants_share_one_embedding_pass_and_average_over_references():
    calls = []
    prf = BERTScorePRF(one_hot_embed(calls), aggregation="mean", chunk=1)
    hyps, refs = ["a b", "a b c d"], [["a b c d", "a b"], "a b c d"]
    p = prf.metric("bertscore-p")(hyps, refs, None)
    r = prf.metric("bertscore-r")(hyps, refs, None)
    f = prf.metric("bertscore-f")(hyps, refs, None)
    assert p == pytest.approx([1.0, 1.0]) and r == pytest.approx([0.75, 1.0])  # recall (0.5 + 1) / 2
    assert f == pytest.approx([(2 / 3 + 1) / 2, 1.0])
    assert sorted(t for call in calls for t in call) == ["a b", "a b", "a b c d", "a b c d"]  # refs + hyps, once
    with pytest.raises(ValueError, match="variant"):
        prf.metric("bertscore-x")


def _summaries(tmp_path):
    """A THumB-like file: several systems per item, the original summary as system 'H', three extra refs."""
    items = [
        (
            "The council approved the budget. Teachers welcomed it. Parents were glad.",
            ["The budget was approved by the council.", "Teachers welcomed the new budget.", "A budget passed."],
        ),
        (
            "A storm hit the coast. Trees fell on roads. Two bridges were closed.",
            ["A storm hit the coast and trees fell.", "Bridges closed after a storm.", "The coast was hit."],
        ),
    ]
    rows = [
        {
            "item_id": f"i{k}",
            "system": system,
            "src": None,
            "refs": refs,
            "hyp": summary if system == "H" else "Lead sentence.",
        }
        for k, (summary, refs) in enumerate(items)
        for system in ("Lead", "H")
    ]
    path = tmp_path / "summ.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_paper_setup_gold_system_against_all_references(capsys, tmp_path, tiny):
    out = tmp_path / "paper"
    code = evaluate.main(
        [
            "stress",
            "--metric",
            "chrf,bertscore-p,bertscore-r,bertscore-f",
            "--data",
            str(_summaries(tmp_path)),
            "--gold-system",
            "H",
            "--ref-index",
            "all",
            "--aggregation",
            "mean",
            "--encoder",
            str(tiny["encoder"]),
            "--tests",
            "truncation,sentence_switching",
            "--seeds",
            "1,2",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out.strip().splitlines()[-1])
    assert report["setup"]["gold"] == "hyp of system 'H'"
    assert report["setup"]["references"] == "all refs (3 per item)" and report["setup"]["items"] == 2
    assert report["tests"]["sentence_switching"]["n_applied"] == 2  # three-sentence gold summaries
    assert set(report["tests"]["truncation"]["metrics"]) == {"chrf", "bertscore-p", "bertscore-r", "bertscore-f"}
    assert (out / "report.md").read_text().startswith("Set-up: gold = hyp of system 'H'")


def test_cli_stress_errors(capsys, tmp_path):
    data = str(_summaries(tmp_path))
    for argv, message in (
        (["--gold-system", "nobody"], "no row of system 'nobody'"),
        (["--ref-index", "two"], "--ref-index must be a reference number or 'all'"),
        (["--tests", "self_evaluation_bias"], "not part of the perturbation suite"),
    ):
        code = evaluate.main(["stress", "--metric", "chrf", "--data", data, "--out", str(tmp_path / "x"), *argv])
        assert code == 1 and message in capsys.readouterr().err
