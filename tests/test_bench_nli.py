"""bench/bench_nli.py --compare on tiny NLI models: one row per model, ratios to the first, memory columns."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_nli, harness  # noqa: E402


def test_compare_writes_speed_and_memory_per_model(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    pairs = (["a man sleeps", "the dog runs in the park"] * 3, ["a person rests", "a cat sits"] * 3)
    monkeypatch.setattr(bench_nli, "snli_pairs", lambda n: (pairs[0][:n], pairs[1][:n]))
    model = str(tiny["nli"])
    bench_nli.compare_models([model, model], 6, 2, 1, name="nli_tiny")
    result = json.loads((tmp_path / "nli_tiny.json").read_text())
    rows = result["rows"]
    assert [r["model"] for r in rows] == [model, model] and rows[0]["time_ratio_to_first"] == 1.0
    assert rows[1]["time_ratio_to_first"] == pytest.approx(rows[1]["seconds"] / rows[0]["seconds"])
    assert 0.0 < rows[0]["weights_mb"] < 5.0  # a tiny model's float32 parameters
    assert "load_rss_growth_mb" in rows[0] and (tmp_path / "nli_tiny.md").exists()


def test_rss_is_measured():
    assert bench_nli.rss_mb() > 1.0
