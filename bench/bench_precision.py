"""bfloat16 against float32 forward passes (``--precision``): scoring time, training step time, and how far the
scores move, for the metrics that offer it, on one machine in one run.

The peer of each bfloat16 row is the same metric in float32, timed in turns with it on the same rows (the first
TED zh-en MQM segments, as ``bench_sescore.py``); the ratio is bfloat16's CPU time over float32's. The score columns
compare the two precisions' scores on those rows: largest and mean absolute difference, Kendall tau-b between
them, distinct score values (rounding that created ties would lower it) and each precision's WMT tau-like against
the MQM judgments of those rows (for reading, not for choosing: the dev mix's select half is the place for that,
``evaluate.py devmix --precision bfloat16 --versus-precision float32``).
Training: median optimizer step of the default SEScore architecture in a Lightning fit with ``precision`` 32-true
and bf16-mixed (``train.py fit --trainer.precision bf16-mixed``).

    python -m bench.bench_precision [--segments 1000] [--repeats 2] [--train-steps 12] [--name precision]
    python -m bench.bench_precision --metrics "" --train-steps 20 --name precision_train   # training rows only

The first command takes about 25 min on 2 cores (MENLI's two passes dominate).

On judged data (the dev mix's select half; each run's JSON line saved as the .json beside its table):

    python evaluate.py devmix --half select --quiet --metric sescore --precision bfloat16 --versus sescore \
        --versus-precision float32 --markdown bench/results/precision_devmix_sescore_select.md
    python evaluate.py devmix --half select --quiet --metric bertscore --encoder packaged:mpnet \
        --precision bfloat16 --versus bertscore --versus-precision float32 \
        --markdown bench/results/precision_devmix_bertscore_mpnet_select.md
    python evaluate.py devmix --half select --quiet --metric sescore --encoder packaged:mpnet --versus bertscore \
        [--precision bfloat16] --markdown bench/results/precision_devmix_sescore_vs_bertscore_{bf16,fp32}_select.md

bfloat16 pays off only where the processor multiplies it natively (AVX-512 BF16 or AMX on x86 CPUs, Ampere and
newer GPUs); elsewhere it is emulated and slower. The machine's processor is written with the results.
"""

from __future__ import annotations

import argparse

from bench.harness import TED_MQM_FILE, read_data, sescore_step_times, timed, write_results

PRECISIONS = ("float32", "bfloat16")


def _scorer(metric: str, precision: str):
    """A fresh scorer (MENLI without its pair cache, so a repeat is not a cache lookup)."""
    if metric == "sescore":
        from sescore import DEFAULT_CHECKPOINT, SEScoreScorer

        return SEScoreScorer(DEFAULT_CHECKPOINT, precision=precision)
    if metric == "bertscore-mpnet":
        from nlgmetrics.baselines import BERTScorer

        return BERTScorer("packaged:mpnet", precision=precision)
    if metric == "menli":
        from menli import MENLIScorer, task_strategy

        formula, direction = task_strategy("mt", False)
        return MENLIScorer(formula=formula, direction=direction, pair_cache=0, precision=precision)
    raise SystemExit(f"unknown metric {metric}")


def _train_step_seconds(
    precision: str, hyps: list[str], refs: list[str], human: list[float], steps: int, batch_size: int
) -> tuple[float, float]:
    """Median wall and CPU seconds of an optimizer step of the shipped default's architecture, after 3 warm-ups,
    in 32-true or bf16-mixed."""
    from sescore import DEFAULT_CHECKPOINT
    from sescore.regressor import read_hparams

    config = read_hparams(DEFAULT_CHECKPOINT)["regressor"]
    lora = config.get("lora") or {}
    architecture = {
        "encoder": config["encoder"],
        "layer_mix": config["layer_mix"],
        "alignment": config["alignment"],
        "hidden_sizes": config["hidden_sizes"],
        "lora_r": lora.get("r"),
        "lora_alpha": lora.get("alpha", 16),
    }
    timing = sescore_step_times(
        architecture, hyps, refs, human, steps, batch_size, "bf16-mixed" if precision == "bfloat16" else "32-true"
    )
    return timing["median_wall_seconds"], timing["median_cpu_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", default="sescore,bertscore-mpnet,menli")
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--train-steps", type=int, default=12, help="timed steps per precision (0: no training rows)")
    parser.add_argument("--train-batch-size", type=int, default=16)
    parser.add_argument("--name", default="precision", help="result file stem under bench/results")
    args = parser.parse_args()

    import numpy as np
    import torch
    from scipy.stats import kendalltau

    from nlgmetrics.metaeval import tau_like
    from nlgmetrics.modelroles.precision import forward_precision

    rows = read_data(TED_MQM_FILE)[: args.segments]
    hyps, refs = [r["hyp"] for r in rows], [r["refs"][0] for r in rows]
    human = [float(r["scores"]["mqm"]) for r in rows]
    items = [(r.get("lp"), r["item_id"]) for r in rows]
    out, notes = [], []
    for metric in [m for m in args.metrics.split(",") if m]:  # --metrics "": the training rows alone
        scorers = {p: _scorer(metric, p) for p in PRECISIONS}
        for scorer in scorers.values():  # warm-up: loads the model, first-call allocations
            scorer.score(hyps[:64], refs[:64])
        best = {p: (float("inf"), float("inf")) for p in PRECISIONS}
        scores: dict[str, list[float]] = {}
        for _ in range(args.repeats):  # in turns, so a change of load hits both alike
            for precision, scorer in scorers.items():
                scores[precision], took = timed(lambda: scorer.score(hyps, refs))
                best[precision] = (min(best[precision][0], took.wall), min(best[precision][1], took.cpu))
        a, b = np.asarray(scores["float32"]), np.asarray(scores["bfloat16"])
        for precision in PRECISIONS:
            wall, cpu = best[precision]
            s = a if precision == "float32" else b
            out.append(
                {
                    "metric": metric,
                    "precision": precision,
                    "what": f"score {len(rows)} segments",
                    "cpu_seconds": cpu,
                    "wall_seconds": wall,
                    "per_cpu_second": len(rows) / cpu,
                    "cpu_ratio_to_float32": cpu / best["float32"][1],
                    "max_abs_diff": float(np.abs(a - s).max()),
                    "mean_abs_diff": float(np.abs(a - s).mean()),
                    "kendall_vs_float32": float(kendalltau(a, s).statistic),
                    "distinct_scores": len(set(s.tolist())),
                    "tau_like_mqm": tau_like(s, human, items),
                }
            )
    if args.train_steps > 0:
        base = None
        for precision in PRECISIONS:
            wall, cpu = _train_step_seconds(precision, hyps, refs, human, args.train_steps, args.train_batch_size)
            base = base or cpu
            out.append(
                {
                    "metric": "sescore training step",
                    "precision": precision,
                    "what": f"median of {args.train_steps} optimizer steps, batch {args.train_batch_size}",
                    "cpu_seconds": cpu,
                    "wall_seconds": wall,
                    "cpu_ratio_to_float32": cpu / base,
                }
            )
    with forward_precision("cpu", "bfloat16"):
        probe = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    notes.append(
        f"inside forward_precision('cpu', 'bfloat16') a float32 product comes out as {probe}; metric "
        "arithmetic after the model runs in float32"
    )
    notes.append(
        "cpu_ratio_to_float32 below 1: bfloat16 is faster; scores of the bfloat16 rows are compared with "
        "float32's of the same run"
    )
    write_results(
        args.name,
        {"segments": len(rows), "repeats": args.repeats, "timing": "best process CPU time of the repeats"},
        out,
        [
            "metric",
            "precision",
            "what",
            "cpu_seconds",
            "wall_seconds",
            "per_cpu_second",
            "cpu_ratio_to_float32",
            "max_abs_diff",
            "mean_abs_diff",
            "kendall_vs_float32",
            "distinct_scores",
            "tau_like_mqm",
        ],
        f"float32 vs bfloat16 forward passes ({len(rows)} TED zh-en segments; ratios from CPU time)",
        notes,
    )


if __name__ == "__main__":
    main()
