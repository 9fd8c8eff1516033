"""NLI throughput: toolkit pairs/second and MENLI segments/second against the bare model forward pass.

The peer is the same model's forward pass on the same, already tokenised, length-sorted batches; the ratio
says how much the toolkit adds (tokenisation, sorting, softmax, pooling) on top of the unavoidable floor.

    python -m bench.bench_nli [--model packaged:nli-minilm] [--pairs 2000] [--batch-size 64]   # ~3 min

With ``--compare packaged:nli-minilm,packaged:nli-me5`` it instead measures every listed NLI role's
``predict_proba`` on the same pairs, in turns, with the time ratio to the first model (``nli_models.{json,md}``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.harness import interleaved_best_times, read_data, write_results


def snli_pairs(n: int) -> tuple[list[str], list[str]]:
    """Premises and hypotheses of the first ``n`` SNLI test pairs."""
    rows = read_data("nli/test_snli.jsonl")[:n]
    return [r["premise"] for r in rows], [r["hypothesis"] for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="packaged:nli-minilm")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare", help="comma-separated NLI role values: side-by-side pairs/s, ratio to the first")
    parser.add_argument("--name", default="nli_models", help="result file stem of --compare under bench/results")
    args = parser.parse_args()
    if args.compare:
        compare_models(
            [m.strip() for m in args.compare.split(",") if m.strip()],
            args.pairs,
            args.batch_size,
            args.repeats,
            args.name,
        )
        return

    import torch

    from menli import menli_scores
    from nlgmetrics.modelroles.batching import length_sorted_batches
    from nlgmetrics.nli import load_nli

    premises, hypotheses = snli_pairs(args.pairs)
    nli = load_nli(args.model, "cpu")
    lengths = [len(p) + len(h) for p, h in zip(premises, hypotheses)]
    batches = length_sorted_batches(lengths, args.batch_size)
    encoded = [
        nli.tokenizer(
            [premises[i] for i in b],
            [hypotheses[i] for i in b],
            truncation="longest_first",
            max_length=nli.max_length,
            padding=True,
            return_tensors="pt",
        )
        for b in batches
    ]

    def bare_forward() -> None:
        with torch.inference_mode():
            for enc in encoded:
                nli.model(**enc)

    def toolkit_pairs() -> None:
        nli.predict_proba(premises, hypotheses, batch_size=args.batch_size)

    half = len(premises) // 2
    hyps, refs = hypotheses[:half], premises[:half]  # <-> scores each segment with two NLI passes

    def toolkit_menli() -> None:
        menli_scores(nli, hyps, refs, "e", "<->", batch_size=args.batch_size)

    bare_forward()  # warm-up
    times = interleaved_best_times(
        {"bare": bare_forward, "pairs": toolkit_pairs, "menli": toolkit_menli}, repeats=args.repeats
    )
    t_bare, t_pairs, t_menli = times["bare"].wall, times["pairs"].wall, times["menli"].wall
    rows_out = [
        {
            "what": "bare model forward (pre-tokenised)",
            "items": len(premises),
            "unit": "pairs",
            "seconds": t_bare,
            "per_second": len(premises) / t_bare,
            "ratio_to_bare": 1.0,
        },
        {
            "what": "nli.predict_proba",
            "items": len(premises),
            "unit": "pairs",
            "seconds": t_pairs,
            "per_second": len(premises) / t_pairs,
            "ratio_to_bare": t_pairs / t_bare,
        },
        {
            "what": "MENLI e <-> (2 pairs/segment)",
            "items": half,
            "unit": "segments",
            "seconds": t_menli,
            "per_second": half / t_menli,
            "ratio_to_bare": t_menli / t_bare,
        },
    ]
    write_results(
        "nli",
        {"model": args.model, "hash": nli.hash, "batch_size": args.batch_size},
        rows_out,
        ["what", "items", "unit", "seconds", "per_second", "ratio_to_bare"],
        f"NLI throughput ({args.model}, CPU, batch {args.batch_size})",
    )


def rss_mb() -> float:
    """This process's resident memory now (Linux ``/proc``; 0 where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def compare_models(models: list[str], n_pairs: int, batch_size: int, repeats: int, name: str = "nli_models") -> None:
    """``predict_proba`` pairs/s of each NLI role on the same SNLI pairs, measured in turns; ratio to ``models[0]``.

    Memory per model: its weights' bytes and how much the process grew when it was loaded (models load one
    after the other, so each growth is that model's own).
    """
    import time

    from nlgmetrics.nli import load_nli

    premises, hypotheses = snli_pairs(n_pairs)
    loaded, load_seconds = {}, {}
    growth = {}
    for model in models:
        started, before = time.perf_counter(), rss_mb()
        loaded[model] = load_nli(model, "cpu")
        load_seconds[model], growth[model] = time.perf_counter() - started, rss_mb() - before
    calls = {
        m: (lambda nli=nli: nli.predict_proba(premises, hypotheses, batch_size=batch_size)) for m, nli in loaded.items()
    }
    for call in calls.values():  # warm-up
        call()
    times = {m: t.wall for m, t in interleaved_best_times(calls, repeats=repeats).items()}
    first = times[models[0]]
    rows_out = [
        {
            "model": m,
            "params_m": round(sum(p.numel() for p in loaded[m].model.parameters()) / 1e6, 1),
            "weights_mb": sum(p.numel() * p.element_size() for p in loaded[m].model.parameters()) / 2**20,
            "load_rss_growth_mb": growth[m],
            "pairs": len(premises),
            "seconds": times[m],
            "pairs_per_s": len(premises) / times[m],
            "time_ratio_to_first": times[m] / first,
            "load_s": load_seconds[m],
        }
        for m in models
    ]
    write_results(
        name,
        {"models": models, "batch_size": batch_size, "repeats": repeats},
        rows_out,
        [
            "model",
            "params_m",
            "weights_mb",
            "load_rss_growth_mb",
            "pairs",
            "seconds",
            "pairs_per_s",
            "time_ratio_to_first",
            "load_s",
        ],
        f"NLI roles side by side (predict_proba on {len(premises)} SNLI test pairs, CPU, batch {batch_size},"
        f" best of {repeats} in turns)",
        [
            f"time_ratio_to_first > 1 means slower than {models[0]}; load_s includes the first-use"
            " conversion of a packaged base if it was not cached yet.",
            "weights_mb: the loaded model's parameters (float32); load_rss_growth_mb: how much the process grew "
            "while it loaded (tokenizer included).",
        ],
    )


if __name__ == "__main__":
    main()
