"""SEScore throughput: scoring segments/second against the bare encoder forward, and training steps/second.

The scoring peer is the encoder's forward pass on the same, already tokenised, length-sorted batches of the
texts the scorer encodes (each distinct hypothesis and reference once); the ratio is what the toolkit adds on
top (tokenisation, sorting, pooling, the head, order restoration). A second peer encodes hypothesis and
reference of every segment (2N texts), which is what a pair-at-a-time implementation pays.
Training: optimizer steps per second of ``SEScoreModule`` in a Lightning loop (forward, backward, AdamW).

    python -m bench.bench_sescore [--checkpoint sescore/checkpoints/minilm-news]   # v1, one model
    python -m bench.bench_sescore --checkpoint sescore/checkpoints/mpnet-v2 --train-steps 0 --name sescore_default
        # the default (one model on MPNet)
    python -m bench.bench_sescore --checkpoint sescore/checkpoints/minilm-v2 --train-steps 0 --name sescore_minilm_v2
        # an ensemble: the rows above for its first member, plus the whole ensemble's scoring
    python -m bench.bench_sescore --encoder packaged:minilm --untrained    # before the shipped model exists

Each run takes a few minutes on 2 cores (1,000 segments, three timed passes in turns, best of 3; the default's
MPNet about 7x MiniLM's time). Writes bench/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import (
    TED_MQM_FILE,
    interleaved_best_times,
    read_data,
    sescore_step_times,
    write_results,
)


def _regressor(args: argparse.Namespace):
    """(the model the single-model rows time, what it is, the checkpoint's model folders: one, or an ensemble's)."""
    from sescore import load_checkpoint
    from sescore.regressor import RegressorConfig, build_regressor
    from sescore.scorer import checkpoint_folders

    if args.untrained:
        regressor = build_regressor(RegressorConfig(encoder=args.encoder, layer_mix=args.layer_mix))
        return regressor.eval(), f"untrained head over {args.encoder}", []
    if not Path(args.checkpoint).is_dir():
        raise SystemExit(
            f"no checkpoint at {args.checkpoint}; train it or run with --encoder packaged:minilm --untrained"
        )
    members = checkpoint_folders(args.checkpoint)  # an ensemble folder: the single-model rows time its first member
    what = args.checkpoint if len(members) == 1 else f"{args.checkpoint}, first of {len(members)} members"
    return load_checkpoint(members[0], "cpu"), what, members


def training_row(config, hyps: list[str], refs: list[str], human: list[float], steps: int, batch_size: int) -> dict:
    """The training-step row: median CPU time of an optimizer step of ``config``'s architecture in a Lightning fit."""
    timing = sescore_step_times(architecture(config), hyps, refs, human, steps, batch_size)
    return {
        "what": f"training step (batch {batch_size}, fwd+bwd+AdamW)",
        "items": timing["steps"],
        "unit": "steps",
        "wall_seconds": timing["wall_seconds"],
        "cpu_seconds": timing["cpu_seconds"],
        "per_second": 1.0 / timing["median_cpu_seconds"],
        "ratio_to_bare": None,
        "median_wall_seconds": timing["median_wall_seconds"],
        "median_cpu_seconds": timing["median_cpu_seconds"],
    }


def architecture(config) -> dict:
    """``SEScoreModule`` keyword arguments of a regressor config (LoRA, alignment, head): what training times."""
    lora = config.lora
    return {
        "encoder": config.encoder,
        "layer_mix": config.layer_mix,
        "alignment": config.alignment,
        "hidden_sizes": config.hidden_sizes,
        "lora_r": lora.r if lora else None,
        "lora_alpha": lora.alpha if lora else 16,
    }


def main() -> None:
    from sescore import DEFAULT_CHECKPOINT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT)
    parser.add_argument("--encoder", default="packaged:minilm", help="with --untrained: the encoder to time")
    parser.add_argument("--untrained", action="store_true", help="random head over --encoder (no checkpoint needed)")
    parser.add_argument("--layer-mix", action="store_true", help="with --untrained: mix all layers (v1 architecture)")
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--train-batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default="sescore", help="result file stem under bench/results")
    args = parser.parse_args()

    import torch

    from nlgmetrics.modelroles.batching import length_sorted_batches
    from sescore import sescore_scores

    rows = read_data(TED_MQM_FILE)[: args.segments]
    hyps = [r["hyp"] for r in rows]
    refs = [r["refs"][0] for r in rows]
    regressor, what, members = _regressor(args)
    # the training timing uses the checkpoint's own architecture (LoRA, alignment, head), or the untrained one's
    config = regressor.config
    tokenizer, encoder, max_length = regressor.tokenizer, regressor.encoder, regressor.config.max_length
    hidden_states = regressor.layer_mix is not None

    def pre_tokenised(texts: list[str]) -> list[dict]:
        return [
            tokenizer([texts[i] for i in b], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            for b in length_sorted_batches([len(t) for t in texts], args.batch_size)
        ]

    unique = list(dict.fromkeys(hyps + refs))
    unique_batches = pre_tokenised(unique)
    pair_batches = pre_tokenised(hyps + refs)

    def bare(batches: list[dict]) -> None:
        with torch.inference_mode():
            for enc in batches:
                encoder(**enc, output_hidden_states=hidden_states)

    def toolkit() -> None:
        sescore_scores(regressor, hyps, refs, batch_size=args.batch_size)

    bare(unique_batches[:2])  # warm-up
    toolkit()
    # in turns, best of the repeats; ratios use CPU time: on a shared machine wall time includes waiting for
    # other jobs, while with one thread (OMP_NUM_THREADS=1) the process CPU time is the work itself
    times = interleaved_best_times(
        {"bare": lambda: bare(unique_batches), "pairs": lambda: bare(pair_batches), "toolkit": toolkit}, args.repeats
    )
    w_bare, t_bare = times["bare"].wall, times["bare"].cpu
    w_pairs, t_pairs = times["pairs"].wall, times["pairs"].cpu
    w_toolkit, t_toolkit = times["toolkit"].wall, times["toolkit"].cpu
    n = len(rows)
    out = [
        {
            "what": f"bare encoder forward, {len(unique)} distinct texts (pre-tokenised)",
            "items": n,
            "unit": "segments",
            "wall_seconds": w_bare,
            "cpu_seconds": t_bare,
            "per_second": n / t_bare,
            "ratio_to_bare": 1.0,
        },
        {
            "what": "sescore_scores (tokenise, encode distinct texts, pool, head)",
            "items": n,
            "unit": "segments",
            "wall_seconds": w_toolkit,
            "cpu_seconds": t_toolkit,
            "per_second": n / t_toolkit,
            "ratio_to_bare": t_toolkit / t_bare,
        },
        {
            "what": f"bare encoder forward, hyp+ref per segment ({2 * n} texts)",
            "items": n,
            "unit": "segments",
            "wall_seconds": w_pairs,
            "cpu_seconds": t_pairs,
            "per_second": n / t_pairs,
            "ratio_to_bare": t_pairs / t_bare,
        },
    ]
    if len(members) > 1:
        from sescore import ensemble_scores, load_checkpoint

        regressors = [regressor] + [load_checkpoint(m, "cpu") for m in members[1:]]
        ensemble_scores(regressors, hyps[:64], refs[:64], batch_size=args.batch_size)  # warm-up
        ensemble = interleaved_best_times(
            {"ensemble": lambda: ensemble_scores(regressors, hyps, refs, batch_size=args.batch_size)}, args.repeats
        )
        w_ens, t_ens = ensemble["ensemble"].wall, ensemble["ensemble"].cpu
        out.append(
            {
                "what": f"ensemble_scores, all {len(members)} members (the folder's score)",
                "items": n,
                "unit": "segments",
                "wall_seconds": w_ens,
                "cpu_seconds": t_ens,
                "per_second": n / t_ens,
                "ratio_to_bare": t_ens / t_bare,
            }
        )
    if args.train_steps > 0:
        out.append(
            training_row(
                config, hyps, refs, [float(r["scores"]["mqm"]) for r in rows], args.train_steps, args.train_batch_size
            )
        )
    write_results(
        args.name,
        {
            "model": what,
            "encoder": config.encoder,
            "encoder_hash": regressor.encoder_hash,
            "layer_mix": config.layer_mix,
            "batch_size": args.batch_size,
            "segments": n,
            "distinct_texts": len(unique),
            "overhead_vs_bare": t_toolkit / t_bare - 1.0,
            "overhead_target": 0.2,
            "timing": "process CPU time",
        },
        out,
        ["what", "items", "unit", "cpu_seconds", "wall_seconds", "per_second", "ratio_to_bare"],
        f"SEScore throughput ({what}, CPU, batch {args.batch_size}; per_second and ratios from CPU time)",
    )


if __name__ == "__main__":
    main()
