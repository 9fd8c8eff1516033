"""What MKL's strict reproducible mode costs and buys: default MENLI and BERTScore, MKL default vs strict, one run.

``import nlgmetrics`` sets ``MKL_CBWR=AUTO,STRICT`` (unless the user set it) so that a matrix product rounds each
row the same way whatever the number of rows; without it a classifier head on a batch of 1 to 3 pooled vectors
rounded differently from one on 8, and ``--devices 2`` gave different last bits than one process. On some CPUs
(an AMD EPYC) strict mode alone does not do that for few-row products, so the heads' batches are also filled to a
multiple of 8 rows; both are reported. This measures,
for each mode in a fresh process: the scoring time of the default MENLI (NLI ``e <->``) and BERTScore on WMT21 de-en
system outputs, and how many of their scores change in any bit when the same items are scored one at a time
instead of in batches (the property ``--devices`` and chunked torchmetrics updates rely on). Modes take turns over
``--repeats`` rounds; the best time counts. ``MKL_CBWR=OFF`` stands for MKL's default (no reproducibility mode).

    python -m bench.bench_mkl_mode [--n 200] [--repeats 2] [--threads 2]   # ~10 min; -> mkl_mode.{json,md}
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

from bench.harness import (
    WMT_FILE,
    LoadSpan,
    add_worker_options,
    best_of_turns,
    read_data,
    runs_in_turns,
    wmt_one_system,
    write_results,
    write_worker_result,
)

MODES = {"mkl-strict": "AUTO,STRICT", "mkl-default": "OFF"}


def few_row_products_invariant(filled: bool = False) -> bool:
    """Does a 768x768 linear layer on 1..8 rows give each row exactly the bits it gets among 8 rows? ``filled``:
    with the rows filled up to 8 by ``filled_rows``, as the toolkit's NLI and SEScore heads are."""
    import numpy as np
    import torch

    from nlgmetrics.modelroles.batching import filled_rows

    generator = torch.Generator().manual_seed(0)
    rows, weight = torch.randn(8, 768, generator=generator), torch.randn(768, 768, generator=generator)
    full = torch.nn.functional.linear(rows, weight)
    picks = [filled_rows(np.arange(m)) if filled else np.arange(m) for m in range(1, 9)]
    return all(
        torch.equal(torch.nn.functional.linear(rows[torch.as_tensor(p)], weight)[:m], full[:m])
        for m, p in zip(range(1, 9), picks)
    )


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: set the mode before the first MKL call, then time and compare both metrics."""
    os.environ["MKL_CBWR"] = MODES[args.worker]
    import torch

    from menli import MENLIScorer
    from nlgmetrics.baselines import BERTScorer

    torch.set_num_threads(args.threads)
    invariant, filled = few_row_products_invariant(), few_row_products_invariant(filled=True)
    hyps, refs = wmt_one_system(read_data(WMT_FILE), args.n, args.seed)
    out: dict = {
        "mkl_cbwr": os.environ["MKL_CBWR"],
        "few_row_products_invariant": invariant,
        "filled_products_invariant": filled,
        "metrics": {},
    }
    load_s = score_s = 0.0
    # no pair cache: the one-at-a-time pass must compute every pair again, not look up the batched results
    for name, scorer in (
        ("menli", MENLIScorer(batch_size=args.batch_size, pair_cache=0)),
        ("bertscore", BERTScorer(batch_size=args.batch_size)),
    ):
        started = time.perf_counter()
        scorer.score(hyps[:2], refs[:2])  # loads the model (and converts it on first use)
        load_s += time.perf_counter() - started
        started = time.perf_counter()
        batched = scorer.score(hyps, refs)
        seconds = time.perf_counter() - started
        score_s += seconds
        one_by_one = dataclasses.replace(scorer, batch_size=1).score(hyps, refs)  # the loaded model goes along
        changed = [i for i, (a, b) in enumerate(zip(batched, one_by_one)) if a != b]
        out["metrics"][name] = {
            "seconds": seconds,
            "rows_changed_by_batch_size_1": len(changed),
            "max_abs_change": max((abs(batched[i] - one_by_one[i]) for i in changed), default=0.0),
        }
    write_worker_result(args.out, {**out, "load_s": load_s, "score_s": score_s})


def summarise(runs: dict[str, list[dict]], n: int) -> list[dict]:
    """One row per (mode, metric): best time, its ratio to the default mode's, and the bit-level changes."""
    best = best_of_turns(runs, "mkl-default", "MKL default")
    rows = []
    for mode, b in best.items():
        if b is None:
            rows.append({"mode": mode, "status": "failed"})
            continue
        for metric in b["first"]["metrics"]:
            fastest = min(r["metrics"][metric]["seconds"] for r in runs[mode])
            base = min(r["metrics"][metric]["seconds"] for r in runs["mkl-default"])
            first = b["first"]["metrics"][metric]
            rows.append(
                {
                    "mode": mode,
                    "MKL_CBWR": b["first"]["mkl_cbwr"],
                    "metric": metric,
                    "items": n,
                    "seconds": fastest,
                    "time_ratio_to_default": fastest / base,
                    "rows_changed_by_batch_size_1": first["rows_changed_by_batch_size_1"],
                    "max_abs_change": first["max_abs_change"],
                    "few_row_products_invariant": b["first"]["few_row_products_invariant"],
                    "filled_products_invariant": b["first"]["filled_products_invariant"],
                    "status": "ok",
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="WMT21 de-en items, one system output each")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--name", default="mkl_mode", help="result file stem under bench/results")
    add_worker_options(parser, MODES)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    load = LoadSpan()
    extra = [
        "--n",
        str(args.n),
        "--seed",
        str(args.seed),
        "--threads",
        str(args.threads),
        "--batch-size",
        str(args.batch_size),
    ]
    runs = runs_in_turns(Path(__file__), list(MODES), extra, args.repeats)
    rows = summarise(runs, args.n)
    from nlgmetrics.modelroles import DEFAULT_ENCODER
    from nlgmetrics.nli import DEFAULT_NLI

    columns = [
        "mode",
        "MKL_CBWR",
        "metric",
        "items",
        "seconds",
        "time_ratio_to_default",
        "rows_changed_by_batch_size_1",
        "max_abs_change",
        "few_row_products_invariant",
        "filled_products_invariant",
        "status",
    ]
    notes = [
        f"{args.n} WMT21 de-en system outputs against their first reference (one seeded-random system per item, "
        f"seed {args.seed}); default models (MENLI: {DEFAULT_NLI}, e <->; BERTScore: {DEFAULT_ENCODER}); batch size "
        f"{args.batch_size}, {args.threads} torch threads; best of {args.repeats} fresh-process runs in turns.",
        "rows_changed_by_batch_size_1: scores that differ in any bit when the same items are scored one at a time "
        "(0 is what --devices and chunked updates need). time_ratio_to_default > 1 means strict mode is slower.",
        "few_row_products_invariant: a 768x768 linear layer on 1..8 rows gives each row the bits it gets among 8; "
        "filled_products_invariant: the same with the rows filled up to 8 (nlgmetrics.modelroles.batching."
        "filled_rows), as the NLI classifier's and SEScore's head batches are. The CPU is the machine's processor.",
    ]
    write_results(
        args.name,
        {
            "n": args.n,
            "seed": args.seed,
            "repeats": args.repeats,
            "threads": args.threads,
            "batch_size": args.batch_size,
            "load_average": load.span(),
        },
        rows,
        columns,
        f"MKL strict vs default mode (CPU, torch threads: {args.threads})",
        notes,
    )


if __name__ == "__main__":
    main()
