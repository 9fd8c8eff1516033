"""The summary of bench/bench_encoders.py on made-up runs (no models, no timings)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_encoders as encoders  # noqa: E402


def _run(seconds: float, scores: list[float], peak: float) -> dict:
    return {
        "score_s": seconds,
        "scores": scores,
        "peak_rss_mb": peak,
        "prepare_s": 0.1,
        "load_s": 1.0,
        "layers": 6,
        "hidden": 384,
        "params_m": 22.7,
        "hash": "abc",
    }


def test_summary_gives_best_times_ratios_to_minilm_and_marks_failed_encoders():
    runs = {
        "packaged:minilm": [_run(12.0, [0.1, 0.5, 0.9], 600), _run(10.0, [0.1, 0.5, 0.9], 650)],
        "packaged:mpnet": [_run(80.0, [0.2, 0.6, 0.7], 1200)],
        "packaged:me5-small": [],
    }
    rows = {r["encoder"]: r for r in encoders.summarise(runs, segments=3)}
    assert rows["packaged:minilm"]["time_ratio_to_minilm"] == 1.0 and rows["packaged:minilm"]["peak_rss_mb"] == 650
    assert rows["packaged:mpnet"]["time_ratio_to_minilm"] == pytest.approx(8.0)
    assert rows["packaged:mpnet"]["segments_per_s"] == pytest.approx(3 / 80)
    expected = np.corrcoef([0.1, 0.5, 0.9], [0.2, 0.6, 0.7])[0, 1]
    assert rows["packaged:mpnet"]["pearson_with_minilm"] == pytest.approx(expected)
    assert rows["packaged:me5-small"]["status"] == "failed"
    with pytest.raises(SystemExit, match="MiniLM runs failed"):
        encoders.summarise({"packaged:minilm": [], "packaged:mpnet": runs["packaged:mpnet"]}, segments=3)
