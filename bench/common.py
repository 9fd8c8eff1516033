"""Shared benchmark plumbing: data paths, timing, and the JSON + Markdown result files."""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def data_dir() -> Path:
    path = Path(os.environ.get("NLGMETRICS_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        raise SystemExit(f"shared data not found at {path}; set NLGMETRICS_DATA")
    return path


def interleaved_best_times(fns: dict[str, Callable[[], Any]], repeats: int = 3) -> dict[str, float]:
    """Best time of each function, measured in turns (a, b, c, a, b, c, ...) so load changes hit all alike."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def machine() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}


def write_results(name: str, result: dict, rows: list[dict], columns: list[str], title: str) -> None:
    """``bench/results/<name>.json`` and ``<name>.md`` (a table a person can read)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {**result, "machine": machine(), "rows": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in columns) + " |")
    lines += ["", f"Machine: {result['machine']}"]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)
