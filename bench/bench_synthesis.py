"""SEScore error-synthesis throughput with the offline models, and how much of it is model forward passes.

The paper reports "0.5 hours to generate 10K sentences" on one A6000 (5.6 synthesised sentences/s). A
synthesised sentence there is one candidate, so the comparable unit here is a *row* (one reference x one
variant); references/s is printed as well (a reference yields ``variants`` rows, 10 in the paper's set-up).

The peer, measured in the same run, is the time spent inside model calls (causal-LM fills and NLI severity
passes): that is the floor no amount of Python-side work can remove. The ratio wall / floor says how much
the pipeline adds on top of it (edit planning, budget tables, dataset writing).

    python -m bench.bench_synthesis [--config configs/sescore/offline_en.yaml] [--sentences 64]   # ~3 min
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.harness import REPO, data_dir, write_results

PAPER_ROWS_PER_SECOND = 10_000 / 1800  # SEScore paper: 0.5 h per 10K sentences on an RTX A6000
TARGET_PER_SECOND = 5.0  # issue target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "sescore" / "offline_en.yaml"))
    parser.add_argument("--sentences", type=int, default=64, help="first N sentences of news_en.txt")
    parser.add_argument("--corpus", default=None, help="default: <shared data>/corpus/news_en.txt")
    args = parser.parse_args()

    from sescore.synthesis.config import load_config
    from sescore.synthesis.run import load_models, run_synthesis

    config = load_config(args.config)
    corpus = Path(args.corpus) if args.corpus else data_dir() / "corpus" / "news_en.txt"
    started = time.perf_counter()
    models = load_models(config)
    load_seconds = time.perf_counter() - started
    # warm-up outside the timed run: first calls build token masks and allocator pools
    with tempfile.TemporaryDirectory() as warm:
        run_synthesis(
            config, corpus, Path(warm) / "out", limit=config.sentences_per_call, models=models, progress=False
        )
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        result = run_synthesis(config, corpus, Path(tmp) / "out", limit=args.sentences, models=models, progress=True)
    summary = result.summary or {}
    rate = summary["rate"]
    model_seconds = dict(rate["model_seconds"])
    floor = sum(model_seconds.values())
    wall = rate["wall_seconds"]
    rows_per_s, refs_per_s = rate["rows_per_second"], rate["sentences_per_second"]  # summarize_sessions
    edits = summary["edits"]["applied"]
    rows = [
        {
            "what": "synthesis (toolkit)",
            "seconds": wall,
            "references/s": refs_per_s,
            "rows/s": rows_per_s,
            "ratio to floor": wall / floor,
        },
        {
            "what": "model calls only (floor)",
            "seconds": floor,
            "references/s": rate["sentences"] / floor,
            "rows/s": rate["rows"] / floor,
            "ratio to floor": 1.0,
        },
    ] + [
        {
            "what": f"  of which {label}",
            "seconds": seconds,
            "references/s": "-",
            "rows/s": "-",
            "ratio to floor": seconds / floor,
        }
        for label, seconds in sorted(model_seconds.items())
    ]
    result_json = {
        "config": str(args.config),
        "config_hash": summary.get("config_hash"),
        "models": summary.get("models"),
        "references": rate["sentences"],
        "rows": rate["rows"],
        "applied_edits": edits,
        "wall_seconds": wall,
        "cpu_seconds": rate["cpu_seconds"],
        "load_seconds": round(load_seconds, 2),
        "model_seconds": model_seconds,
        "model_share": floor / wall,
        "rows_per_second": rows_per_s,
        "references_per_second": refs_per_s,
        "paper_rows_per_second_a6000": round(PAPER_ROWS_PER_SECOND, 3),
        "target_per_second": TARGET_PER_SECOND,
        "meets_target_rows": rows_per_s >= TARGET_PER_SECOND,
        "meets_target_references": refs_per_s >= TARGET_PER_SECOND,
        "loadavg_1min_before": round(load_before, 2),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
    }
    title = (
        f"SEScore synthesis, {rate['sentences']} news_en references x {config.variants} variants "
        f"({rate['rows']} rows, {edits} applied edits); paper: {PAPER_ROWS_PER_SECOND:.1f} rows/s on an A6000; "
        f"model share {floor / wall:.0%}"
    )
    write_results(
        "synthesis", result_json, rows, ["what", "seconds", "references/s", "rows/s", "ratio to floor"], title
    )


if __name__ == "__main__":
    main()
