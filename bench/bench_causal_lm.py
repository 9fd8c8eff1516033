"""Throughput of the offline causal LMs: SmolLM2-135M against Gemma-3-270M, one run.

Both score the same texts the way the toolkit uses a causal LM most (``lm-likelihood``: the mean token
log-probability of each English WMT21 de-en system output, batched and length-sorted by
``nlgmetrics.baselines.LMLikelihoodScorer``). Each (model, round) runs in a fresh process with ``--threads``
torch threads; models take turns over ``--repeats`` rounds and the best scoring time counts. First-use conversion
(GGUF to fp16 safetensors) and loading are timed apart. MARS's cloze filling is generation rather than scoring,
so its cost per reference is in ``bench_mars_length.py``; this is the per-token price of each model.

    python bench/bench_causal_lm.py [--n 400] [--repeats 2] [--threads 2]
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

MODELS = ["packaged:smollm2", "packaged:gemma3-270m"]


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: resolve (convert if first use), load, warm up, time one scoring of the texts."""
    import psutil
    import torch

    from nlgmetrics.baselines.lm_likelihood import LMLikelihoodScorer
    from nlgmetrics.modelroles import resolve

    torch.set_num_threads(args.threads)
    hyps, _ = wmt_one_system(read_jsonl(data_dir() / WMT_FILE), args.n, args.seed)
    started = time.perf_counter()
    resolve("causal_lm", args.worker)
    prepare_s = time.perf_counter() - started
    scorer = LMLikelihoodScorer(model=args.worker)
    started = time.perf_counter()
    loaded = scorer._lm()
    load_s = time.perf_counter() - started
    scorer.score(hyps[:4])
    rss_after_load = psutil.Process().memory_info().rss / 2**20
    started = time.perf_counter()
    scores = scorer.score(hyps)
    score_s = time.perf_counter() - started
    tokens = sum(len(loaded.tokenizer(h, add_special_tokens=False)["input_ids"]) for h in hyps)
    write_worker_result(args.out, {
        "prepare_s": prepare_s, "load_s": load_s, "score_s": score_s, "scores": scores, "tokens": tokens,
        "rss_after_load_mb": rss_after_load, "layers": loaded.model.config.num_hidden_layers,
        "params_m": sum(p.numel() for p in loaded.model.parameters()) / 1e6, "hash": loaded.hash,
    })


def summarise(runs: dict[str, list[dict]], texts: int, reference: str = MODELS[0]) -> list[dict]:
    """One row per model: best time, its ratio to SmolLM2's, tokens/s, memory, and agreement of the scores."""
    rows = []
    for model, b in best_of_turns(runs, reference, reference).items():
        if b is None:
            rows.append({"model": model, "texts": texts, "status": "failed"})
            continue
        first = b["first"]
        rows.append({
            "model": model, "layers": first["layers"], "params_m": first["params_m"], "texts": texts,
            "tokens": first["tokens"], "seconds": b["best"], "texts_per_s": texts / b["best"],
            "tokens_per_s": first["tokens"] / b["best"], "time_ratio_to_smollm2": b["ratio"],
            "prepare_s_first": first["prepare_s"], "load_s": b["load_s"], "peak_rss_mb": b["peak_rss_mb"],
            "pearson_with_smollm2": agreement(runs[reference][0]["scores"], first["scores"])["pearson"],
            "hash": first["hash"], "status": "ok",
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400, help="WMT21 de-en items, one system output each")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--name", default="causal_lm", help="result file stem under bench/results")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.models[0] != MODELS[0]:
        raise SystemExit(f"the first model is the reference of the ratios and must be {MODELS[0]}")
    hyps, _ = wmt_one_system(read_jsonl(data_dir() / WMT_FILE), args.n, args.seed)
    load_start = load_average()
    extra = ["--n", str(args.n), "--seed", str(args.seed), "--threads", str(args.threads)]
    runs = runs_in_turns(Path(__file__), args.models, extra, args.repeats)
    rows = summarise(runs, len(hyps))
    columns = ["model", "layers", "params_m", "texts", "tokens", "seconds", "texts_per_s", "tokens_per_s",
               "time_ratio_to_smollm2", "prepare_s_first", "load_s", "peak_rss_mb", "pearson_with_smollm2", "status"]
    notes = [
        f"{len(hyps)} WMT21 de-en system outputs (one seeded-random system per item, seed {args.seed}), scored as "
        f"lm-likelihood (mean token log-probability from BOS); {args.threads} torch threads; best of "
        f"{args.repeats} fresh-process runs taken in turns; fp32 on CPU.",
        "seconds exclude loading; time_ratio_to_smollm2 > 1 means slower than SmolLM2. tokens counts each model's "
        "own tokenizer (Gemma's vocabulary is larger, so it needs fewer tokens for the same text).",
        "packaged:gemma3-270m is under the Gemma Terms of Use (not an OSI licence): opt-in only.",
    ]
    write_results(args.name, {"models": args.models, "n": args.n, "seed": args.seed, "repeats": args.repeats,
                               "threads": args.threads, "load_average": {"start": load_start, "end": load_average()}},
                  rows, columns,
                  f"Causal LMs: lm-likelihood throughput (CPU, torch threads: {args.threads}, best of {args.repeats})",
                  notes)


if __name__ == "__main__":
    main()
