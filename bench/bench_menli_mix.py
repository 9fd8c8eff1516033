"""What MENLI's three-way mix costs: `menli+sescore+lm-ratio` against its parts and BERTScore, one run.

The packaged mix (0.1 MENLI + 0.6 SEScore + 0.3 lm-ratio, ``menli/mix/``) runs three models where BERTScore runs
one, and MENLI's default granularity scores every sentence pair of a paragraph. A user choosing it should know the
price, and the blind-spot suites' cost follows from it. Each (metric, dataset) is scored in a fresh process with
``--threads`` torch threads (peak RSS its own), metrics take turns over ``--repeats`` rounds, the best scoring time
counts and loading is timed apart. Ratios are to BERTScore-MiniLM (the encoder SEScore's default uses) measured in
the same run. The mix's scores are checked against the packaged recipe applied to its parts' scores from their own
processes (``max_abs_diff_to_parts``).

    python -m bench.bench_menli_mix [--wmt 200] [--ted 10] [--repeats 2] [--threads 2]   # ~40 min on 2 cores

Datasets: WMT21 de-en sentences (one seeded-random system output per item against reference A) and TED-MT zh-en
paragraphs (the second human translation against the first). Writes bench/results/menli_mix_cost.{json,md}.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench.harness import (
    TED_FILE,
    WMT_FILE,
    LoadSpan,
    add_worker_options,
    best_of_turns,
    measure_scoring,
    metric,
    read_data,
    runs_in_turns,
    ted_paragraphs,
    wmt_one_system,
    write_results,
    write_worker_result,
)

MIX = "menli+sescore+lm-ratio"
METRICS = ["bertscore", "menli", "sescore", "lm-ratio", MIX]
DATASETS = ("wmt", "ted")


def pairs(dataset: str, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(hyps, refs) of ``wmt`` (sentences) or ``ted`` (paragraphs)."""
    if dataset == "wmt":
        return wmt_one_system(read_data(WMT_FILE), args.wmt, args.seed)
    return ted_paragraphs(read_data(TED_FILE)[: args.ted])


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: build the scorer by name, load it on one warm-up pair, time the data."""
    import torch

    from sescore.regressor import MINILM_V2_CHECKPOINT

    torch.set_num_threads(args.threads)
    name, dataset = args.worker.rsplit("@", 1)
    hyps, refs = pairs(dataset, args)
    scorer = metric(
        name, progress=False, encoder="packaged:minilm", checkpoint=[MINILM_V2_CHECKPOINT]
    )  # the mix's SEScore part, alone too
    # loading: every model, on a pair outside the data, so no cache (MENLI keeps NLI pairs) holds a timed row
    result = measure_scoring(
        lambda: scorer.score(["The weather was fine that morning."], ["It was a sunny morning."]),
        lambda: scorer.score(hyps, refs),
    )
    recipe_file = getattr(scorer, "recipe_file", None)  # the mix's: the recipe it found for its parts' models
    write_worker_result(
        args.out,
        {
            **result,
            "signature": scorer.signature(),
            "recipe_file": str(recipe_file) if recipe_file is not None else None,
        },
    )


def mix_of_parts(runs: dict, dataset: str) -> np.ndarray | None:
    """The recipe the mix's own run used (its ``recipe_file``) applied to the parts' scores from their own
    processes; None if the mix or a part failed. A mix that found no recipe has no stored weights to check: an
    error, since every figure of this benchmark is for the packaged recipe."""
    from menli import MixRecipe, mix

    runs_of_mix = runs.get(f"{MIX}@{dataset}")
    parts = [runs.get(f"{name}@{dataset}") for name in ("menli", "sescore", "lm-ratio")]
    if not runs_of_mix or not all(parts):
        return None
    recipe_file = runs_of_mix[0].get("recipe_file")
    if recipe_file is None:
        raise SystemExit(f"{MIX} on {dataset} found no packaged recipe for its parts' models: see its signature")
    recipe = MixRecipe.load(recipe_file)
    return mix([p[0]["scores"] for p in parts], recipe.weights, [p.range for p in recipe.parts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wmt", type=int, default=200, help="WMT21 de-en items (sentences)")
    parser.add_argument("--ted", type=int, default=10, help="TED-MT zh-en paragraphs")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="menli_mix_cost", help="result file stem under bench/results")
    add_worker_options(parser)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    load = LoadSpan()
    extra = ["--wmt", str(args.wmt), "--ted", str(args.ted), "--seed", str(args.seed), "--threads", str(args.threads)]
    names = [f"{m}@{d}" for d in DATASETS for m in METRICS]
    runs = runs_in_turns(Path(__file__), names, extra, args.repeats)
    rows = []
    for dataset in DATASETS:
        hyps, refs = pairs(dataset, args)
        words = sum(len(h.split()) for h in hyps) / len(hyps)
        best = best_of_turns({m: runs[f"{m}@{dataset}"] for m in METRICS}, "bertscore", f"bertscore on {dataset}")
        from_parts = mix_of_parts(runs, dataset)
        base_rss = best["bertscore"]["peak_rss_mb"]
        for name, b in best.items():
            if b is None:
                rows.append({"dataset": dataset, "metric": name, "status": "failed"})
                continue
            check = None
            if name == MIX and from_parts is not None:
                check = float(np.abs(np.asarray(b["first"]["scores"]) - from_parts).max())
            rows.append(
                {
                    "dataset": dataset,
                    "metric": name,
                    "segments": len(hyps),
                    "mean_words": words,
                    "seconds": b["best"],
                    "segments_per_s": len(hyps) / b["best"],
                    "time_ratio_to_bertscore": b["ratio"],
                    "load_s": b["load_s"],
                    "peak_rss_mb": b["peak_rss_mb"],
                    "rss_ratio_to_bertscore": b["peak_rss_mb"] / base_rss,
                    "max_abs_diff_to_parts": check,
                    "status": "ok",
                }
            )
    columns = [
        "dataset",
        "metric",
        "segments",
        "mean_words",
        "seconds",
        "segments_per_s",
        "time_ratio_to_bertscore",
        "load_s",
        "peak_rss_mb",
        "rss_ratio_to_bertscore",
        "max_abs_diff_to_parts",
        "status",
    ]
    signatures = {m: runs[f"{m}@wmt"][0]["signature"] for m in METRICS if runs[f"{m}@wmt"]}
    recipe_files = sorted({Path(r["recipe_file"]).name for d in DATASETS for r in runs[f"{MIX}@{d}"]})
    notes = [
        f"wmt: the first {args.wmt} WMT21 de-en items, one seeded-random system output each (seed {args.seed}), "
        f"against reference A; ted: the first {args.ted} TED-MT zh-en paragraphs, second translation against the "
        f"first. {args.threads} torch threads; best of {args.repeats} fresh-process runs taken in turns.",
        "seconds exclude loading (load_s: building the scorer and scoring one warm-up pair not in the data); "
        "time_ratio_to_bertscore > 1 means slower than BERTScore-MiniLM in this run. The mix runs its three parts in "
        "one process, so its time is about their sum and its peak memory holds three models.",
        "max_abs_diff_to_parts: the mix's scores against the recipe it found (recipe_file) applied to the parts' "
        "own scores.",
        "MENLI is the default (nli-mpnet, e <->, auto granularity: every sentence pair of a pair longer than the "
        "NLI window), as in the mix.",
        "Signatures: " + "; ".join(f"`{s}`" for s in signatures.values()),
    ]
    write_results(
        args.name,
        {
            "wmt": args.wmt,
            "ted": args.ted,
            "seed": args.seed,
            "repeats": args.repeats,
            "threads": args.threads,
            "signatures": signatures,
            "recipe_files": recipe_files,
            "load_average": load.span(),
        },
        rows,
        columns,
        f"MENLI's three-way mix: cost against its parts and BERTScore (CPU, threads: {args.threads}, "
        f"best of {args.repeats})",
        notes,
    )


if __name__ == "__main__":
    main()
