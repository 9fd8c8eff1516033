"""The GPU path, checked on a machine with a CUDA device: scoring, fit steps and the command line on ``cuda``.

Runs ``tests/test_device_paths.py`` (tiny models built on the spot, nothing downloaded) with the device set, and
writes ``gpu.json`` and ``gpu.md``: each check's time, each metric's largest difference from the CPU's scores
against the stated tolerance, and whether every check passed. The same run with ``--device cpu`` is what CI
does in the normal suite, so the script is known to work before a GPU machine is at hand.

Usage (from the repository root): ``python -m bench.gpu_check --device cuda`` (``bench/gpu_check.sh`` installs
carried wheels first, for a machine without network).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import REPO, RESULTS, write_results

# what the check imports beyond the toolkit itself; a machine that lacks one gets its name, not a traceback
REQUIRED = ("torch", "pytorch_lightning", "transformers", "torchmetrics", "datasets", "peft", "safetensors", "pytest")
COLUMNS = ["check", "device", "seconds", "max_abs_difference", "tolerance", "changed_tensors", "loss", "accuracy"]


def device_name(device: str) -> str:
    """What the device is, in words: the GPU's name, or the CPU's model."""
    import torch

    from nlgmetrics.machine import cpu_model

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return cpu_model()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu for a dry run")
    parser.add_argument("--name", default=None, help="result file stem (default: gpu, or gpu_cpu for --device cpu)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the JSON and Markdown files")
    parser.add_argument("--timeout", type=int, default=540, help="seconds the checks may take in all")
    args = parser.parse_args(argv)
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(
            f"gpu check: not installed here: {', '.join(missing)}; carry their wheels in wheels/ and run "
            "bench/gpu_check.sh, or pip install them"
        )
    name = args.name or ("gpu" if args.device.startswith("cuda") else "gpu_cpu")
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "checks.jsonl"
        env = {**os.environ, "NLGMETRICS_TEST_DEVICE": args.device, "NLGMETRICS_DEVICE_REPORT": str(report)}
        env["HF_HUB_OFFLINE"] = "1"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_device_paths.py"]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
            code, tail = done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1:]
        except subprocess.TimeoutExpired:
            code, tail = 124, [f"timed out after {args.timeout} s"]
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in report.read_text().splitlines()] if report.is_file() else []
    result = {
        "device": args.device,
        "device_name": device_name(args.device),
        "command": "python -m bench.gpu_check " + " ".join(argv if argv is not None else sys.argv[1:]),
        "pytest_exit": code,
        "passed": code == 0,
        "pytest_summary": tail[0] if tail else "",
        "wall_seconds": round(wall, 1),
    }
    notes = [
        f"tests/test_device_paths.py on {result['device_name']}: {result['pytest_summary']} ({wall:.0f} s in all).",
        "Scores on the device against the CPU's: equal within the tolerance (float32); fit steps under bf16 "
        "autocast: finite loss and changed weights.",
    ]
    write_results(name, result, rows, COLUMNS, f"GPU check ({args.device})", notes, folder=args.results)
    return code


if __name__ == "__main__":
    sys.exit(main())
