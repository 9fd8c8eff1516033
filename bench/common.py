"""Shared benchmark plumbing: data paths, timing, and the JSON + Markdown result files."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
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


def cpu_model() -> str:
    """The processor's model name (Linux ``/proc/cpuinfo``), else the architecture: timings and, with MKL, the last
    bits of results differ by CPU (bench_mkl_mode: an AMD EPYC rounds few-row products unlike the earlier CPU)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(), "processor": cpu_model()}


def write_results(name: str, result: dict, rows: list[dict], columns: list[str], title: str,
                  notes: list[str] | None = None) -> None:
    """``bench/results/<name>.json`` and ``<name>.md`` (a table a person can read, then ``notes`` as a list)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {**result, "machine": machine(), "rows": rows, "notes": notes or []}
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in columns) + " |")
    lines += [""] + [f"- {note}" for note in notes or []] + ([""] if notes else [])
    lines += [f"Machine: {result['machine']}"]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def tree_mb(path: Path) -> float:
    """Size of a file, or of every file under a folder, in MiB."""
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if 0 < abs(value) < 1e-3:  # a difference of 1e-7 and one of 4e-4 must not both print as 0.000
            return f"{value:.1e}"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


@dataclass
class ChildRun:
    """How one isolated measurement process ended: its own peak RSS (not the parent's, not a sibling's)."""

    returncode: int
    peak_rss_mb: float
    wall_seconds: float
    killed_over_mb: float | None  # the RSS limit it crossed, when the watchdog ended it


def run_child(cmd: list[str], rss_limit_mb: float | None = None, poll_seconds: float = 0.5,
              log_path: Path | None = None, cwd: Path | None = None, env: dict | None = None) -> ChildRun:
    """Run ``cmd`` in a fresh process and report its own peak memory from ``os.wait4`` (ru_maxrss of that child).

    A fresh process per measurement is the only way to get a per-peer peak: ru_maxrss never goes down, so two
    peers in one process would report the larger of the two. ``rss_limit_mb`` ends the child (by its pid) when
    its resident memory crosses the limit, so a benchmark on a shared machine cannot take everyone's memory.
    The child's output goes to ``log_path`` (appended) or to this process's own output; ``cwd``/``env`` as for
    ``subprocess.Popen``.
    """
    import psutil

    started = time.perf_counter()
    log = open(log_path, "a", encoding="utf-8") if log_path is not None else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT if log is not None else None, cwd=cwd, env=env)
    killed: float | None = None
    watched = psutil.Process(proc.pid)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if rss_limit_mb is not None and killed is None:
            try:
                if watched.memory_info().rss / 2**20 > rss_limit_mb:
                    killed = rss_limit_mb
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        time.sleep(poll_seconds)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if log is not None:
        log.close()
    # ru_maxrss is in kilobytes on Linux
    return ChildRun(proc.returncode, usage.ru_maxrss / 1024, time.perf_counter() - started, killed)


def run_worker(script: Path, worker_args: list[str], rss_limit_mb: float | None = None,
               log_path: Path | None = None) -> tuple[dict | None, ChildRun]:
    """Run ``script --out FILE *worker_args`` with this interpreter in a fresh process; its JSON and how it ended.

    The JSON is None when the worker failed or was stopped by the memory watchdog.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        run = run_child([sys.executable, str(script), "--out", str(out), *worker_args], rss_limit_mb,
                        log_path=log_path)
        result = json.loads(out.read_text()) if run.returncode == 0 and out.exists() else None
    return result, run


def runs_in_turns(script: Path, names: list[str], extra: list[str], repeats: int) -> dict[str, list[dict]]:
    """``script --worker NAME *extra`` for every name, ``repeats`` rounds in turns, each in a fresh process.

    Taking turns (a, b, a, b) rather than blocks (a, a, b, b) makes a load change on a shared machine hit every
    model alike. Each successful run's JSON gets the process's ``peak_rss_mb``; failed runs are left out.
    """
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            result, run = run_worker(script, ["--worker", name, *extra])
            print(f"{name}: exit {run.returncode}, peak {run.peak_rss_mb:.0f} MB", flush=True)
            if result is not None:
                runs[name].append({**result, "peak_rss_mb": run.peak_rss_mb})
    return runs


def best_of_turns(runs: dict[str, list[dict]], reference: str, label: str) -> dict[str, dict | None]:
    """Per name of ``runs_in_turns``: None if every run failed, else the best ``score_s``, its ratio to the
    reference's best, the fastest ``load_s``, the highest ``peak_rss_mb`` and the first run (for the facts every run
    shares). Exits naming ``label`` when the reference itself never finished: no ratio means anything then."""
    if not runs[reference]:
        raise SystemExit(f"the {label} runs failed; see the output above")
    best_base = min(r["score_s"] for r in runs[reference])
    out: dict[str, dict | None] = {}
    for name, done in runs.items():
        best = min((r["score_s"] for r in done), default=None)
        out[name] = None if best is None else {
            "best": best, "ratio": best / best_base, "load_s": min(r["load_s"] for r in done),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in done), "first": done[0]}
    return out


def write_worker_result(path: str, result: dict) -> None:
    """A worker's answer to its parent, written at the very end so a half-finished run leaves no file."""
    Path(path).write_text(json.dumps(result))


def load_average() -> float:
    """One-minute load average: other work on a shared machine slows every timing, so results record it."""
    return round(os.getloadavg()[0], 2)
