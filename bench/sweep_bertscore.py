"""BERTScore's layer and prompt for one encoder, chosen on the dev mix's select half: one forward pass per prompt.

Every (layer, prompt) point of the grid is scored on every set of the mix's half; each prompt's texts are encoded
once and all the grid's layers are read from that pass (``token_embeddings_by_layer``), so the grid costs one
encoding per prompt instead of one per point. The table is each point's tau-like per set and the mean of sets;
the rule that picks from it is in the experiments guide, and the pick is then compared on the other half through
``nlgmetrics-evaluate devmix`` (paired bootstrap).

    python -m bench.sweep_bertscore --encoder packaged:embeddinggemma --mix devmix/with_captions.yaml \\
        [--half select] [--layers 6 9 12 15 18 21 last] [--prompts none sts document] [--limit-items N]
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Sequence

import numpy as np

from bench.harness import LoadSpan, children_cpu_seconds, write_results

# EmbeddingGemma-300M's own prompts (its sentence-transformers configuration): "sts" for semantic similarity,
# "document" for retrieval documents. Any other text is taken as a prompt as it is.
PROMPTS = {"none": "", "sts": "task: sentence similarity | query: ", "document": "title: none | text: "}


def layer_value(text: str) -> int | None:
    """``last`` is the model's final output (None); anything else a ``hidden_states`` index."""
    return None if text == "last" else int(text)


def best_f1(vectors: dict[str, np.ndarray], hyp: str, refs: Sequence[str]) -> float:
    """BERTScore-F1 of one hypothesis against its best reference (the toolkit's multi-reference rule)."""
    from nlgmetrics.baselines.scorers import bertscore_f1

    return max(bertscore_f1(vectors[hyp], vectors[ref]) for ref in refs)


def sweep(
    loaded, sets: list[tuple[dict, list[dict]]], layers: list[int | None], prompts: dict[str, str], batch_size: int
) -> list[dict]:
    """One row per (prompt, layer): tau-like per set and the mean of sets."""
    from nlgmetrics.baselines.embedding import token_embeddings_by_layer
    from nlgmetrics.metaeval.correlation import tau_like

    taus: dict[tuple[str, int | None], dict[str, float]] = {}
    for prompt_name, prompt in prompts.items():
        for entry, rows in sets:
            texts = list(dict.fromkeys([r["hyp"] for r in rows] + [ref for r in rows for ref in r["refs"]]))
            by_layer = token_embeddings_by_layer(
                loaded, texts, layers, batch_size=batch_size, progress=True, prompt=prompt
            )
            human = [float(r["scores"][entry["human"]]) for r in rows]
            items = [r["item_id"] for r in rows]
            for layer, arrays in by_layer.items():
                vectors = {}
                for text, v in zip(texts, arrays):
                    v /= np.linalg.norm(v, axis=1, keepdims=True).clip(1e-12)
                    vectors[text] = v
                scores = [best_f1(vectors, r["hyp"], r["refs"]) for r in rows]
                taus.setdefault((prompt_name, layer), {})[entry["name"]] = tau_like(scores, human, items)
            del by_layer
            print(f"{prompt_name} {entry['name']}: {len(rows)} rows, {len(texts)} texts", flush=True)
    out = []
    for (prompt_name, layer), per_set in taus.items():
        out.append(
            {
                "prompt": prompt_name,
                "layer": "last" if layer is None else layer,
                **{f"tau_{name}": value for name, value in per_set.items()},
                "mean_of_sets": float(np.mean(list(per_set.values()))),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", default="packaged:embeddinggemma")
    parser.add_argument("--mix", default="devmix/with_captions.yaml")
    parser.add_argument("--half", default="select", choices=["select", "report"])
    parser.add_argument("--layers", nargs="+", default=["6", "9", "12", "15", "18", "21", "last"])
    parser.add_argument("--prompts", nargs="+", default=list(PROMPTS), help=f"names ({', '.join(PROMPTS)}) or text")
    parser.add_argument("--limit-items", type=int, default=None, help="the first N items of each set's half")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="bertscore_sweep")
    args = parser.parse_args()

    import torch

    from nlgmetrics.metaeval.devmix import mix_sets
    from nlgmetrics.modelroles import load_encoder

    torch.set_num_threads(args.threads)
    load = LoadSpan()
    start, cpu_start = time.perf_counter(), time.process_time()
    layers = [layer_value(text) for text in args.layers]
    prompts = {name: PROMPTS.get(name, name) for name in args.prompts}
    sets = mix_sets(args.mix, args.half, limit_items=args.limit_items)
    loaded = load_encoder(args.encoder)
    rows = sweep(loaded, sets, layers, prompts, args.batch_size)
    best = max(rows, key=lambda r: r["mean_of_sets"])
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start + children_cpu_seconds()
    names = [entry["name"] for entry, _ in sets]
    write_results(
        args.name,
        {
            "encoder": args.encoder,
            "hash": loaded.hash,
            "mix": args.mix,
            "half": args.half,
            "limit_items": args.limit_items,
            "prompts": prompts,
            "sets": {entry["name"]: len(set_rows) for entry, set_rows in sets},
            "best": best,
            "cost": {
                "wall_seconds": round(wall, 1),
                "cpu_seconds": round(cpu, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            },
            "load_average": load.span(),
        },
        rows,
        ["prompt", "layer", *[f"tau_{name}" for name in names], "mean_of_sets"],
        f"BERTScore layer and prompt grid: {args.encoder}, {args.mix} {args.half} half",
        [
            f"Tau-like (ties count as discordant) of BERTScore-F1 (no idf, best reference) per set of the {args.half} "
            f"half ({'all items' if args.limit_items is None else f'the first {args.limit_items} items per set'}); "
            "layer is the index into the model's hidden states (0 = embeddings), last = its final output.",
            "Prompts: " + "; ".join(f"{k} = {v!r}" for k, v in prompts.items()) + ". A prompt's tokens are context "
            "and are never matched.",
            f"Highest mean of sets: prompt {best['prompt']}, layer {best['layer']} ({best['mean_of_sets']:.4f}).",
            f"Cost: {wall:.0f} s wall, {cpu:.0f} CPU-s, {args.threads} threads, float32.",
        ],
    )


if __name__ == "__main__":
    main()
