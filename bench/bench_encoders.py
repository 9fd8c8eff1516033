"""BERTScore-F1 speed of the offline encoders: MiniLM against mpnet and multilingual-e5-small, one run.

Every encoder scores the same WMT21 de-en pairs (one seeded-random system output per item against reference A,
as ``bench_peers.py``'s wmt-1sys) with ``nlgmetrics.baselines.BERTScorer(encoder=...)``: last layer, no idf, the
scorer's own batching and truncation. Each (encoder, round) runs in a fresh process with ``--threads`` torch
threads; encoders take turns over ``--repeats`` rounds and the best scoring time counts. Conversion on first use
(unzipping mpnet, dequantising e5) and model loading are timed apart (``prepare_s``, ``load_s``).

    python bench/bench_encoders.py [--n 1000] [--repeats 2] [--threads 2] [--name encoders]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_peers import WMT_FILE, agreement, read_jsonl, wmt_one_system  # noqa: E402
from bench.common import (  # noqa: E402
    best_of_turns, data_dir, load_average, runs_in_turns, write_results, write_worker_result,
)

ENCODERS = ["packaged:minilm", "packaged:mpnet", "packaged:me5-small"]


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: resolve (convert if first use), load, warm up, time one scoring of the pairs."""
    import psutil
    import torch

    from nlgmetrics.baselines import BERTScorer
    from nlgmetrics.modelroles import resolve

    torch.set_num_threads(args.threads)
    hyps, refs = wmt_one_system(read_jsonl(data_dir() / WMT_FILE), args.n, args.seed)
    started = time.perf_counter()
    resolve("encoder", args.worker)
    prepare_s = time.perf_counter() - started
    scorer = BERTScorer(encoder=args.worker)
    started = time.perf_counter()
    loaded = scorer._model()
    load_s = time.perf_counter() - started
    scorer.score(hyps[:4], refs[:4])
    rss_after_load = psutil.Process().memory_info().rss / 2**20
    started = time.perf_counter()
    scores = scorer.score(hyps, refs)
    score_s = time.perf_counter() - started
    config = loaded.model.config
    write_worker_result(args.out, {
        "prepare_s": prepare_s, "load_s": load_s, "score_s": score_s, "scores": scores,
        "rss_after_load_mb": rss_after_load, "layers": config.num_hidden_layers, "hidden": config.hidden_size,
        "params_m": sum(p.numel() for p in loaded.model.parameters()) / 1e6, "hash": loaded.hash,
    })


def summarise(runs: dict[str, list[dict]], segments: int, reference: str = ENCODERS[0]) -> list[dict]:
    """One row per encoder: best time, its ratio to MiniLM's, peak memory, and agreement of its F1 with MiniLM's."""
    rows = []
    for encoder, b in best_of_turns(runs, reference, "MiniLM").items():
        if b is None:
            rows.append({"encoder": encoder, "segments": segments, "status": "failed"})
            continue
        first = b["first"]
        rows.append({
            "encoder": encoder, "layers": first["layers"], "hidden": first["hidden"],
            "params_m": first["params_m"], "segments": segments, "seconds": b["best"],
            "segments_per_s": segments / b["best"], "time_ratio_to_minilm": b["ratio"],
            "prepare_s_first": first["prepare_s"], "load_s": b["load_s"], "peak_rss_mb": b["peak_rss_mb"],
            "mean_f1": sum(first["scores"]) / len(first["scores"]),
            "pearson_with_minilm": agreement(runs[reference][0]["scores"], first["scores"])["pearson"],
            "hash": first["hash"], "status": "ok",
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000, help="WMT21 de-en items, one system output each")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--encoders", nargs="+", default=ENCODERS)
    parser.add_argument("--name", default="encoders", help="result file stem under bench/results")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.encoders[0] != ENCODERS[0]:
        raise SystemExit(f"the first encoder is the reference of the ratios and must be {ENCODERS[0]}")
    hyps, refs = wmt_one_system(read_jsonl(data_dir() / WMT_FILE), args.n, args.seed)
    load_start = load_average()
    extra = ["--n", str(args.n), "--seed", str(args.seed), "--threads", str(args.threads)]
    runs = runs_in_turns(Path(__file__), args.encoders, extra, args.repeats)
    rows = summarise(runs, len(hyps))
    columns = ["encoder", "layers", "hidden", "params_m", "segments", "seconds", "segments_per_s",
               "time_ratio_to_minilm", "prepare_s_first", "load_s", "peak_rss_mb", "mean_f1", "pearson_with_minilm",
               "status"]
    distinct = len(set(hyps) | set(refs))
    notes = [
        f"{len(hyps)} WMT21 de-en segments (one seeded-random system per item, seed {args.seed}) against reference A, "
        f"{distinct} distinct texts; BERTScore-F1 on each encoder's last layer, no idf, no rescaling; "
        f"{args.threads} torch threads; best of {args.repeats} fresh-process runs taken in turns.",
        "seconds exclude loading; time_ratio_to_minilm > 1 means slower than MiniLM. prepare_s_first is the first "
        "run's resolve (conversion into the cache if it was not there yet; a hash check of the weights otherwise).",
        "mean_f1 and pearson_with_minilm only show that the encoders score differently (F1 scales differ per "
        "model); they are not a quality comparison.",
    ]
    write_results(args.name, {"encoders": args.encoders, "n": args.n, "seed": args.seed, "repeats": args.repeats,
                               "threads": args.threads, "distinct_texts": distinct,
                               "load_average": {"start": load_start, "end": load_average()}},
                  rows, columns,
                  f"BERTScore-F1 by encoder (CPU, torch threads: {args.threads}, best of {args.repeats})", notes)


if __name__ == "__main__":
    main()
