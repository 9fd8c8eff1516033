"""`make demo` on a fresh machine: the README's set-up time with the default models, and what the default NLI costs.

The model-zoo issue lets a stronger default in only while `make demo` stays under ~10 minutes on a fresh 2-core
machine with warm package caches. This measures exactly that: the committed HEAD is cloned into a temporary folder
(no `.venv`), and `make demo` runs there against an empty model cache (`$NLGMETRICS_CACHE` in the same temporary
folder): virtual environment, installs from the package caches, every first-use conversion, then the demo. Then the
same `make demo` again (warm: only the demo), and the demo with the earlier default NLI model
(`examples/demo.py --nli-model packaged:nli-minilm`), the peer of the same run; ratios are to that peer.

    python -m bench.bench_demo [--name demo]   # ~15 min (a fresh venv, installs, conversions, three demos)

Uncommitted changes are not measured (the clone is of HEAD); the script says so when the tree is dirty.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import REPO, load_average, run_child, write_results


def timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> dict:
    """Run ``cmd`` to completion with output to ``log``; seconds, exit code and the load around it."""
    load_before = load_average()
    run = run_child(cmd, log_path=log, cwd=cwd, env=env)
    return {"seconds": run.wall_seconds, "exit_code": run.returncode, "load_1m": max(load_before, load_average())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default="demo", help="result file stem under bench/results")
    args = parser.parse_args()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    if dirty:
        print("note: uncommitted changes are not measured; the clone is of HEAD", file=sys.stderr)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="nlgmetrics-demo-") as tmp:
        clone, logs = Path(tmp) / "repo", Path(tmp) / "logs"
        logs.mkdir()
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        # the children see an empty model cache of their own; the user's cache is never read or written
        env = {**os.environ, "NLGMETRICS_CACHE": str(Path(tmp) / "cache"), "HF_HUB_OFFLINE": "1"}
        steps = [
            ("fresh clone: make demo (venv, installs, conversions, demo)", ["make", "demo"]),
            ("warm: make demo", ["make", "demo"]),
            (
                "warm: demo with --nli-model packaged:nli-minilm (peer)",
                [str(clone / ".venv" / "bin" / "python"), "examples/demo.py", "--nli-model", "packaged:nli-minilm"],
            ),
        ]
        for i, (label, cmd) in enumerate(steps):
            row = {"step": label, **timed(cmd, clone, env, logs / f"step{i}.log")}
            if row["exit_code"] != 0:
                tail = (logs / f"step{i}.log").read_text(encoding="utf-8", errors="replace")[-2000:]
                raise SystemExit(f"{label} exited {row['exit_code']}:\n{tail}")
            rows.append(row)
            print(row, flush=True)
    peer = rows[-1]["seconds"]
    for row in rows:
        row["minutes"] = row["seconds"] / 60
        row["vs_peer"] = row["seconds"] / peer
    notes = [
        f"Commit {head}, cloned fresh; pip installs come from the benchmark machine's warm package caches, "
        "models convert into an empty cache.",
        "The peer is the same demo with the earlier default NLI model, run in the same session: the warm "
        "ratio is what the default packaged:nli-mpnet costs the demo.",
        "load_1m: the larger one-minute load average before and after the step; with 2 cores, above 2 means "
        "other work shared the CPU and the seconds are inflated.",
    ]
    write_results(
        args.name,
        {"commit": head},
        rows,
        ["step", "seconds", "minutes", "vs_peer", "exit_code", "load_1m"],
        "`make demo` from a fresh clone (default NLI: packaged:nli-mpnet)",
        notes,
    )


if __name__ == "__main__":
    main()
