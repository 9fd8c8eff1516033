"""Throughput of the offline causal LMs: SmolLM2-135M against Gemma-3-270M, one run.

Both score the same texts the way the toolkit uses a causal LM most (``lm-likelihood``: the mean token
log-probability of each English WMT21 de-en system output, batched and length-sorted). Each (model, round) runs in
a fresh process with ``--threads`` torch threads; models take turns over ``--repeats`` rounds and the best scoring
time counts. First-use conversion (GGUF to fp16 safetensors) and loading are timed apart. MARS's cloze filling is
generation rather than scoring, so its cost per reference is in ``bench/results/mars_length*.md``; this is the
per-token price of each model.

    python -m bench.bench_causal_lm [--n 400] [--repeats 2] [--threads 2]    # ~10 min; -> causal_lm.{json,md}
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

MODELS = ["packaged:smollm2", "packaged:gemma3-270m"]


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: resolve (convert if first use), load, warm up, time one scoring of the texts."""
    import torch

    from nlgmetrics.modelroles import load_model, resolve

    torch.set_num_threads(args.threads)
    hyps, _ = wmt_one_system(read_data(WMT_FILE), args.n, args.seed)
    scorer = metric("lm-likelihood", causal_lm=args.worker, progress=False)
    models = []  # the scorer finds this model (models are cached per process), so loading is timed apart
    result = measure_scoring(
        lambda: models.append(load_model("causal_lm", args.worker)),
        lambda: scorer.score(hyps),
        prepare=lambda: resolve("causal_lm", args.worker),
        warm_up=lambda: scorer.score(hyps[:4]),
    )
    lm = models[0]
    tokens = sum(len(lm.tokenizer(h, add_special_tokens=False)["input_ids"]) for h in hyps)
    write_worker_result(
        args.out,
        {
            **result,
            "tokens": tokens,
            "layers": lm.model.config.num_hidden_layers,
            "params_m": sum(p.numel() for p in lm.model.parameters()) / 1e6,
            "hash": lm.hash,
        },
    )


def summarise(runs: dict[str, list[dict]], texts: int, reference: str = MODELS[0]) -> list[dict]:
    """One row per model: best time, its ratio to SmolLM2's, tokens/s, memory, and agreement of the scores."""

    def row(b: dict, first: dict) -> dict:
        return {
            "layers": first["layers"],
            "params_m": first["params_m"],
            "texts": texts,
            "tokens": first["tokens"],
            "seconds": b["best"],
            "texts_per_s": texts / b["best"],
            "tokens_per_s": first["tokens"] / b["best"],
            "time_ratio_to_smollm2": b["ratio"],
            "prepare_s_first": first["prepare_s"],
            "load_s": b["load_s"],
            "peak_rss_mb": b["peak_rss_mb"],
            "pearson_with_smollm2": agreement(runs[reference][0]["scores"], first["scores"])["pearson"],
            "hash": first["hash"],
        }

    return rows_of_turns(runs, reference, reference, "model", {"texts": texts}, row)


def main() -> None:
    args, runs = model_turns(Path(__file__), __doc__.split("\n\n")[0], MODELS, "models", 400, "causal_lm")
    if runs is None:
        return worker(args)
    hyps, _ = wmt_one_system(read_data(WMT_FILE), args.n, args.seed)
    rows = summarise(runs, len(hyps))
    columns = [
        "model",
        "layers",
        "params_m",
        "texts",
        "tokens",
        "seconds",
        "texts_per_s",
        "tokens_per_s",
        "time_ratio_to_smollm2",
        "prepare_s_first",
        "load_s",
        "peak_rss_mb",
        "pearson_with_smollm2",
        "status",
    ]
    notes = [
        f"{len(hyps)} WMT21 de-en system outputs (one seeded-random system per item, seed {args.seed}), scored as "
        f"lm-likelihood (mean token log-probability from BOS); {args.threads} torch threads; best of "
        f"{args.repeats} fresh-process runs taken in turns; fp32 on CPU.",
        "seconds exclude loading; time_ratio_to_smollm2 > 1 means slower than SmolLM2. tokens counts each model's "
        "own tokenizer (Gemma's vocabulary is larger, so it needs fewer tokens for the same text).",
        "packaged:gemma3-270m is under the Gemma Terms of Use (not an OSI licence): opt-in only.",
    ]
    write_results(
        args.name,
        {
            "models": args.names,
            "n": args.n,
            "seed": args.seed,
            "repeats": args.repeats,
            "threads": args.threads,
            "load_average": args.load.span(),
        },
        rows,
        columns,
        f"Causal LMs: lm-likelihood throughput (CPU, torch threads: {args.threads}, best of {args.repeats})",
        notes,
    )


if __name__ == "__main__":
    main()
