"""BERTScore-F1 speed of the offline encoders: MiniLM against mpnet and multilingual-e5-small, one run.

Every encoder scores the same WMT21 de-en pairs (one seeded-random system output per item against reference A,
as ``bench_peers.py``'s wmt-1sys) with ``load_metric("bertscore", encoder=...)``: last layer, no idf, the
scorer's own batching and truncation. Each (encoder, round) runs in a fresh process with ``--threads`` torch
threads; encoders take turns over ``--repeats`` rounds and the best scoring time counts. Conversion on first use
(unzipping mpnet, dequantising e5) and model loading are timed apart (``prepare_s``, ``load_s``).

    python -m bench.bench_encoders [--n 1000] [--repeats 2] [--threads 2] [--name encoders]   # ~30 min
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import (
    WMT_FILE,
    agreement,
    measure_scoring,
    metric,
    model_turns,
    read_data,
    rows_of_turns,
    wmt_one_system,
    write_results,
    write_worker_result,
)

ENCODERS = ["packaged:minilm", "packaged:mpnet", "packaged:me5-small"]


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: resolve (convert if first use), load, warm up, time one scoring of the pairs."""
    import torch

    from nlgmetrics.modelroles import load_model, resolve

    torch.set_num_threads(args.threads)
    hyps, refs = wmt_one_system(read_data(WMT_FILE), args.n, args.seed)
    scorer = metric("bertscore", encoder=args.worker, progress=False)
    models = []  # the scorer finds this model (models are cached per process), so loading is timed apart
    result = measure_scoring(
        lambda: models.append(load_model("encoder", args.worker)),
        lambda: scorer.score(hyps, refs),
        prepare=lambda: resolve("encoder", args.worker),
        warm_up=lambda: scorer.score(hyps[:4], refs[:4]),
    )
    config = models[0].model.config
    write_worker_result(
        args.out,
        {
            **result,
            "layers": config.num_hidden_layers,
            "hidden": config.hidden_size,
            "params_m": sum(p.numel() for p in models[0].model.parameters()) / 1e6,
            "hash": models[0].hash,
        },
    )


def summarise(runs: dict[str, list[dict]], segments: int, reference: str = ENCODERS[0]) -> list[dict]:
    """One row per encoder: best time, its ratio to MiniLM's, peak memory, and agreement of its F1 with MiniLM's."""

    def row(b: dict, first: dict) -> dict:
        return {
            "layers": first["layers"],
            "hidden": first["hidden"],
            "params_m": first["params_m"],
            "segments": segments,
            "seconds": b["best"],
            "segments_per_s": segments / b["best"],
            "time_ratio_to_minilm": b["ratio"],
            "prepare_s_first": first["prepare_s"],
            "load_s": b["load_s"],
            "peak_rss_mb": b["peak_rss_mb"],
            "mean_f1": sum(first["scores"]) / len(first["scores"]),
            "pearson_with_minilm": agreement(runs[reference][0]["scores"], first["scores"])["pearson"],
            "hash": first["hash"],
        }

    return rows_of_turns(runs, reference, "MiniLM", "encoder", {"segments": segments}, row)


def main() -> None:
    args, runs = model_turns(Path(__file__), __doc__.split("\n\n")[0], ENCODERS, "encoders", 1000, "encoders")
    if runs is None:
        return worker(args)
    hyps, refs = wmt_one_system(read_data(WMT_FILE), args.n, args.seed)
    rows = summarise(runs, len(hyps))
    columns = [
        "encoder",
        "layers",
        "hidden",
        "params_m",
        "segments",
        "seconds",
        "segments_per_s",
        "time_ratio_to_minilm",
        "prepare_s_first",
        "load_s",
        "peak_rss_mb",
        "mean_f1",
        "pearson_with_minilm",
        "status",
    ]
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
    write_results(
        args.name,
        {
            "encoders": args.names,
            "n": args.n,
            "seed": args.seed,
            "repeats": args.repeats,
            "threads": args.threads,
            "distinct_texts": distinct,
            "load_average": args.load.span(),
        },
        rows,
        columns,
        f"BERTScore-F1 by encoder (CPU, torch threads: {args.threads}, best of {args.repeats})",
        notes,
    )


if __name__ == "__main__":
    main()
