"""How our BERTScore and MENLI scale: time and peak memory for 1k to 50k segments, sentences vs paragraphs.

Segments are drawn with replacement (seeded) from WMT21 de-en system outputs against reference A (short) and
TED-MT zh-en paragraphs, second translation against the first (paragraph). Every drawn segment gets a numeric
tag (" [k]") on both sides: both scorers encode each distinct text once, so without the tag a 50k sample of 100
paragraphs would measure 100 paragraphs. Each (metric, texts, size) runs in a fresh process: the peak RSS is its
own, and a watchdog stops it at ``--rss-limit-mb`` (the machine is shared). A size whose time or memory,
projected linearly from the last measured size, would pass ``--time-budget`` or the memory limit is not run; its
row says so. MENLI: formula e, direction <->, whole texts (granularity ``text``; ``auto`` would score paragraphs
sentence by sentence, ~30x the NLI pairs, see menli_granularity.md).

    python -m bench.bench_scaling --max 5000                      # the small sizes, minutes
    nohup python -m bench.bench_scaling --resume > bench/results/scaling.log 2>&1 &   # the rest, in the background

Writes bench/results/scaling.json, .md and .png (log-log time and peak memory against segments) after every row.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from bench.harness import (
    RESULTS,
    TED_FILE,
    WMT_FILE,
    LoadSpan,
    Pairs,
    add_worker_options,
    load_average,
    read_data,
    run_worker,
    ted_paragraphs,
    wmt_all_systems,
    write_results,
    write_worker_result,
)

SIZES = (1000, 2000, 5000, 10000, 20000, 50000)
METRICS = ("bertscore", "menli")
KINDS = ("short", "paragraph")
NAME = "scaling"
COLUMNS = [
    "metric",
    "texts",
    "segments",
    "distinct_texts",
    "seconds",
    "segments_per_s",
    "peak_rss_mb",
    "rss_after_load_mb",
    "mb_per_1k_segments",
    "load_1m",
    "status",
]


def pool(kind: str) -> Pairs:
    """The (hyps, refs) a sample is drawn from."""
    if kind == "short":
        return wmt_all_systems(read_data(WMT_FILE), items=10**9)
    if kind == "paragraph":
        return ted_paragraphs(read_data(TED_FILE))
    raise ValueError(f"unknown texts '{kind}'; choose from {', '.join(KINDS)}")


def sample_segments(source: Pairs, n: int, seed: int) -> Pairs:
    """``n`` segments drawn with replacement (seeded), each tagged " [k]" on both sides so that no two are equal."""
    hyps, refs = source
    if not hyps or len(hyps) != len(refs):
        raise ValueError(f"need a non-empty pool of equally many hyps and refs, got {len(hyps)} and {len(refs)}")
    if n < 1:
        raise ValueError(f"sample size must be >= 1, got {n}")
    picks = np.random.default_rng(seed).integers(0, len(hyps), n)
    return [f"{hyps[i]} [{k}]" for k, i in enumerate(picks)], [f"{refs[i]} [{k}]" for k, i in enumerate(picks)]


def project(measured: dict, size: int) -> tuple[float, float]:
    """(seconds, peak MB) at ``size`` from one measured row, both linear in segments above the loaded model's
    memory (work per segment is constant, and both scorers keep per-segment results until the end)."""
    scale = size / measured["segments"]
    base = measured["rss_after_load_mb"]
    return measured["seconds"] * scale, base + (measured["peak_rss_mb"] - base) * scale


def skip_reason(projected_seconds: float, projected_mb: float, time_budget: float, rss_limit_mb: float) -> str | None:
    """Why a size is not run, or None to run it."""
    if projected_seconds > time_budget:
        return f"capped: projected {projected_seconds / 60:.0f} min > {time_budget / 60:.0f} min budget"
    if projected_mb > rss_limit_mb:
        return f"capped: projected peak {projected_mb / 1024:.1f} GB > {rss_limit_mb / 1024:.1f} GB limit"
    return None


def row_from_run(
    metric: str, kind: str, size: int, result: dict | None, peak_mb: float, killed_mb: float | None, returncode: int
) -> dict:
    """One table row from a worker's answer and how its process ended."""
    row = {"metric": metric, "texts": kind, "segments": size}
    if killed_mb is not None:
        return {**row, "peak_rss_mb": peak_mb, "status": f"stopped at the {killed_mb / 1024:.1f} GB RSS limit"}
    if result is None:
        return {**row, "status": f"failed (exit {returncode})"}
    base = result["rss_after_load_mb"]
    return {
        **row,
        "distinct_texts": result["distinct_texts"],
        "seconds": result["seconds"],
        "segments_per_s": size / result["seconds"],
        "peak_rss_mb": peak_mb,
        "rss_after_load_mb": base,
        "mb_per_1k_segments": (peak_mb - base) / size * 1000,
        "status": "ok",
    }


def plot(rows: Sequence[dict], path: Path) -> None:
    """Log-log time and peak memory against segments, one line per (metric, texts); rows not run are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(11, 4.2))
    for metric in METRICS:
        for kind, style in zip(KINDS, ("-o", "--s")):
            done = sorted(
                (r for r in rows if r["metric"] == metric and r["texts"] == kind and r["status"] == "ok"),
                key=lambda r: r["segments"],
            )
            if not done:
                continue
            x = [r["segments"] for r in done]
            ax_time.plot(x, [r["seconds"] for r in done], style, label=f"{metric}, {kind}")
            ax_mem.plot(x, [r["peak_rss_mb"] for r in done], style, label=f"{metric}, {kind}")
    for ax, label in ((ax_time, "scoring time (s)"), (ax_mem, "peak RSS (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("segments")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("nlgmetrics BERTScore-F1 (MiniLM) and MENLI e <-> (packaged NLI), CPU, 2 threads")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: draw the sample, load the scorer, warm it up, time one scoring."""
    import psutil

    hyps, refs = sample_segments(pool(args.texts), args.size, args.seed)
    if args.worker == "bertscore":
        from nlgmetrics.baselines import BERTScorer

        scorer = BERTScorer(encoder="packaged:minilm")  # what the published scaling rows measured
    else:
        from menli import MENLIScorer

        scorer = MENLIScorer(model="packaged:nli-minilm", granularity="text")  # the published rows' model
    scorer.score(["warm up"], ["warm up"])
    rss_after_load = psutil.Process().memory_info().rss / 2**20
    started = time.perf_counter()
    scorer.score(hyps, refs)
    seconds = time.perf_counter() - started
    write_worker_result(
        args.out,
        {"seconds": seconds, "rss_after_load_mb": rss_after_load, "distinct_texts": len(set(hyps) | set(refs))},
    )


def notes(args: argparse.Namespace) -> list[str]:
    return [
        "Short texts: WMT21 de-en system outputs vs reference A; paragraph texts: TED-MT zh-en paragraphs, second "
        "translation vs the first; drawn with replacement (seed "
        f"{args.seed}), each segment tagged so that every text is distinct.",
        "BERTScore: nlgmetrics.baselines.BERTScorer on packaged:minilm (256-token truncation). MENLI: MENLIScorer, "
        "packaged:nli-minilm, e <->, granularity text (2 NLI pairs per segment, truncated at the model's window).",
        "peak_rss_mb: ru_maxrss of the measuring process (model, data and scoring); rss_after_load_mb: its RSS "
        "after loading and a warm-up; mb_per_1k_segments: the growth between the two per 1000 segments.",
        f"A size is not run when its time or memory, projected linearly from the last measured size, passes "
        f"{args.time_budget / 60:.0f} min or {args.rss_limit_mb / 1024:.1f} GB; the row says which.",
        "load_1m: the machine's 1-minute load average (the larger of before and after the row); with 2 cores, a "
        "load well above 2 means other jobs shared the CPU and that row's seconds are inflated (memory is not).",
        "Token lengths for the length-sorted batches are computed 256 texts at a time (before, all texts at once "
        "held every encoding: +360 MB per 1,000 paragraph pairs; bench/results/scaling_before_chunking.md has the "
        "rows before BERTScore's item chunking).",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=max(SIZES), help="largest size to run")
    parser.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--time-budget", type=float, default=1800.0, help="seconds one size may take")
    parser.add_argument("--rss-limit-mb", type=float, default=8192.0, help="memory one size may take")
    parser.add_argument("--resume", action="store_true", help="keep the rows of an earlier run with this seed")
    parser.add_argument("--texts", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    add_worker_options(parser, METRICS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    previous = RESULTS / f"{NAME}.json"
    rows: list[dict] = []
    if args.resume and previous.exists():
        earlier = json.loads(previous.read_text())
        if earlier.get("seed") == args.seed:
            rows = [r for r in earlier["rows"] if r["status"] == "ok"]
    load = LoadSpan()
    for metric in args.metrics:
        for kind in args.kinds:
            last, blocked = None, None
            for size in (s for s in SIZES if s <= args.max):
                done = next((r for r in rows if (r["metric"], r["texts"], r["segments"]) == (metric, kind, size)), None)
                if done is not None:
                    last = done
                    continue
                reason = blocked or (
                    skip_reason(*project(last, size), args.time_budget, args.rss_limit_mb) if last else None
                )
                if reason:
                    rows.append({"metric": metric, "texts": kind, "segments": size, "status": reason})
                else:
                    print(f"{time.strftime('%H:%M:%S')} {metric} {kind} {size}: running", flush=True)
                    load_before = load_average()
                    result, run = run_worker(
                        Path(__file__),
                        ["--worker", metric, "--texts", kind, "--size", str(size), "--seed", str(args.seed)],
                        args.rss_limit_mb,
                    )
                    row = row_from_run(metric, kind, size, result, run.peak_rss_mb, run.killed_over_mb, run.returncode)
                    # the larger of the machine's 1-minute load before and after: above ~2 (the cores) other work
                    # shared the CPU and the row's time is inflated; its memory is not
                    row["load_1m"] = max(load_before, load_average())
                    rows.append(row)
                    print(f"{time.strftime('%H:%M:%S')} {metric} {kind} {size}: {row}", flush=True)
                    if row["status"] == "ok":
                        last = row
                    else:  # a larger size would fail or be stopped as well
                        blocked = f"not run: {size} segments {row['status'].split(' (')[0]}"
                rows.sort(key=lambda r: (METRICS.index(r["metric"]), KINDS.index(r["texts"]), r["segments"]))
                write_results(
                    NAME,
                    {
                        "seed": args.seed,
                        "sizes": list(SIZES),
                        "time_budget_s": args.time_budget,
                        "rss_limit_mb": args.rss_limit_mb,
                        "load_average": load.span(),
                    },
                    rows,
                    COLUMNS,
                    "Scaling of our BERTScore and MENLI (CPU, fresh process per size)",
                    notes(args),
                )
                plot(rows, RESULTS / f"{NAME}.png")


if __name__ == "__main__":
    main()
