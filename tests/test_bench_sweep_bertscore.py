"""bench/sweep_bertscore.py on a tiny encoder: each grid point's tau-like is the scorer's own at that setting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import sweep_bertscore as sweep  # noqa: E402


def _rows() -> list[dict]:
    hyps = {
        "i1": ["the cat sat on the mat", "a cat is on a mat", "dogs bark loudly"],
        "i2": ["rain falls in spain", "it rains in spain", "the plain is dry"],
    }
    refs = {"i1": ["the cat sat on the mat"], "i2": ["rain falls mainly on the plain in spain", "spain gets rain"]}
    return [
        {"item_id": item, "system": f"s{k}", "hyp": hyp, "refs": refs[item], "scores": {"h": float(3 - k)}}
        for item, texts in hyps.items()
        for k, hyp in enumerate(texts)
    ]


def test_each_grid_point_equals_bertscore_at_that_layer_and_prompt(tiny):
    from nlgmetrics.baselines import BERTScorer
    from nlgmetrics.metaeval.correlation import tau_like
    from nlgmetrics.modelroles import load_encoder

    rows = _rows()
    rows_b = [{**r, "scores": {"h": -r["scores"]["h"]}} for r in rows]  # a second set that disagrees
    sets = [({"name": "a", "human": "h"}, rows), ({"name": "b", "human": "h"}, rows_b)]
    prompts = {"none": "", "q": "query: "}
    grid = sweep.sweep(load_encoder(str(tiny["encoder"])), sets, [1, None], prompts, batch_size=2)
    assert [(g["prompt"], g["layer"]) for g in grid] == [("none", 1), ("none", "last"), ("q", 1), ("q", "last")]
    for point in grid:
        layer = None if point["layer"] == "last" else point["layer"]
        scorer = BERTScorer(str(tiny["encoder"]), layer=layer, prompt=prompts[point["prompt"]])
        scores = scorer.score([r["hyp"] for r in rows], [r["refs"] for r in rows])
        items = [r["item_id"] for r in rows]
        expected = tau_like(scores, [r["scores"]["h"] for r in rows], items)
        assert point["tau_a"] == pytest.approx(expected)
        assert point["tau_b"] == pytest.approx(tau_like(scores, [r["scores"]["h"] for r in rows_b], items))
        assert point["mean_of_sets"] == pytest.approx((point["tau_a"] + point["tau_b"]) / 2)


def test_layer_names():
    assert sweep.layer_value("last") is None
    assert sweep.layer_value("12") == 12
    with pytest.raises(ValueError):
        sweep.layer_value("top")
