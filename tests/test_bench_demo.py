"""bench/bench_demo.py's step runner, and the demo's --nli-model switch it times the peer with."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_timed_step_keeps_the_exit_code_and_the_output_in_its_log(tmp_path):
    sys.path.insert(0, str(REPO))
    from bench.bench_demo import timed

    log = tmp_path / "step.log"
    row = timed([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], tmp_path, dict(os.environ), log)
    assert row["exit_code"] == 3 and row["seconds"] > 0 and row["load_1m"] >= 0
    assert log.read_text().strip() == "hello"


def test_demo_passes_its_nli_model_to_the_menli_rows_only(tiny):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "demo.py"),
            "--nli-model",
            str(tiny["nli"]),
            "--metrics",
            "menli,menli+chrf,chrf",
        ],  # chrf: no real encoder to load (~13 s each)
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "NLGMETRICS_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = {line.split(":")[0].strip(): line for line in done.stdout.splitlines() if ": system " in line}
    assert f"nli:{tiny['nli']}@" in lines["menli"] and f"nli:{tiny['nli']}@" in lines["menli+chrf"]
    assert "nli:" not in lines["chrf"] and len(done.stdout.strip().splitlines()) == 3 + 1 + 1 + 8
    header = done.stdout.strip().splitlines()[4]
    assert [c.strip() for c in header.split("|")][:3] == ["menli", "menli+chrf", "chrf"]


def test_demo_runs_every_metric_family_and_names_a_metric_it_cannot_run():
    """The main job shows SEScore, MENLI and MARS beside the peers; a bad --metrics entry stops it by name after the
    rows before it were printed."""
    spec = importlib.util.spec_from_file_location("examples_demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)

    assert {"sescore", "menli", "mars"} <= set(demo.METRICS)
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), "--metrics", "chrf,nonsense"],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode != 0
    assert done.stdout.lstrip().startswith("chrf: system ")
    assert "nonsense: error: unknown metric 'nonsense'" in done.stderr
