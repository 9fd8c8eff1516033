"""MARS augmentation speed: seconds per reference for the four nonzero ratios, against the no-planning ablation.

The peer is the same references augmented in the same run by the ``no_planning`` ablation (plain sampling,
same judge, same batching), so the ratio says what self-planning costs on top of the cloze decoding itself.
Both run with the augmentation cache disabled (a fresh in-memory cache per repeat), models loaded and warmed
up before timing, and in turns (full, peer, full, peer, ...) so load changes hit both alike. Wall and CPU
seconds are both recorded: on a shared machine the wall time is mostly other processes' load, which the load
average before and after is recorded for. Target: <= 2 s per reference; the paper reports 0.8 s on an
RTX-2080 with GPT-2 large (ROC endings of ~8 tokens, ours are whole five-sentence stories).

    python -m bench.bench_mars [--n 20] [--config configs/mars/offline.yaml] [--repeats 1] [--threads 2]
        [--override KEY=VALUE ...] [--show N]     # ~2 min per 20 references and repeat; -> mars.{json,md}

``--override`` sets MARS config values on top of ``--config`` for both variants (e.g. ``masking.window_words=0``);
``--show N`` prints the augmented references of the first N rows. (This replaces ``python -m mars.benchmark speed``;
the planning-scope measurement of that module, ``bench/bench_mars_planning.py``, was removed after its run; in git
history at commit 6c42b7a.)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from bench.harness import MARS_TARGET_S_PER_REFERENCE, REPO, repo_path, roc_references, timed, write_results

TARGET_S_PER_REFERENCE = MARS_TARGET_S_PER_REFERENCE
PAPER = {"s_per_reference": 0.8, "hardware": "RTX-2080 GPU", "lm": "gpt2-large", "references": "ROC endings"}


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` config values (VALUE is YAML) through ``mars.config.parse_overrides``; a bad one stops the
    bench by name."""
    from mars.config import parse_overrides as parse

    try:
        return parse(items)
    except ValueError as error:
        raise SystemExit(f"--override: {error}") from None


def timed_augment(scorer: Any, refs: list[str], srcs: list[str]) -> tuple[float, float, list[list[str]]]:
    """(wall s, CPU s, outputs) of augmenting from scratch: the in-memory cache is dropped first."""
    scorer._cache = None  # cache_dir is None, so the next access builds an empty in-memory cache
    out, took = timed(lambda: scorer.augment(refs, srcs))
    return took.wall, took.cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="ROC references")
    parser.add_argument("--config", default=str(REPO / "configs" / "mars" / "offline.yaml"))
    parser.add_argument("--repeats", type=int, default=1, help="turns per variant; the best is reported")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is for 2 CPU cores)")
    parser.add_argument("--data", type=Path, default=None, help="ROC JSONL (default: shared data)")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="MARS config value on top of --config for both variants (repeatable; VALUE is YAML)",
    )
    parser.add_argument("--show", type=int, default=0, help="print the augmented references of the first N rows")
    parser.add_argument("--name", default="mars", help="result file stem under bench/results")
    args = parser.parse_args()
    if args.n < 1 or args.repeats < 1 or args.threads < 1:
        raise SystemExit("--n, --repeats and --threads must be >= 1")

    import torch

    import mars

    torch.set_num_threads(args.threads)
    refs, srcs = roc_references(args.n, args.data)
    settings = {**parse_overrides(args.override), "cache_dir": None, "progress": False}
    variants = {
        "self_planning": mars.build(args.config, overrides=settings),
        "no_planning": mars.build(args.config, ablation="no_planning", overrides=settings),
    }
    full = variants["self_planning"]  # both load the same LM and spaCy pipeline (models are cached per process)
    for scorer in variants.values():  # warm-up: spaCy pipeline, vocabulary masks, one tiny forward
        scorer.templates(refs[:1], srcs[:1])
        scorer._get("augmenter")._vocab_masks()
    load_before = os.getloadavg()
    best: dict[str, dict[str, float]] = {k: {"wall": float("inf"), "cpu": float("inf")} for k in variants}
    outputs: dict[str, list] = {}
    deterministic = True
    for _ in range(args.repeats):
        for name, scorer in variants.items():
            wall, cpu, out = timed_augment(scorer, refs, srcs)
            best[name]["wall"] = min(best[name]["wall"], wall)
            best[name]["cpu"] = min(best[name]["cpu"], cpu)
            deterministic &= outputs.setdefault(name, out) == out
    load_after = os.getloadavg()

    n = len(refs)
    peer = best["no_planning"]
    rows = []
    for name, label in (("self_planning", "MARS self-planning"), ("no_planning", "no_planning ablation (peer)")):
        t = best[name]
        rows.append(
            {
                "what": label,
                "references": n,
                "wall_s_per_reference": t["wall"] / n,
                "cpu_s_per_reference": t["cpu"] / n,
                "wall_ratio_to_peer": t["wall"] / peer["wall"],
                "cpu_ratio_to_peer": t["cpu"] / peer["cpu"],
                "meets_target": t["wall"] / n <= TARGET_S_PER_REFERENCE,
            }
        )
    # the run itself keeps ``threads`` cores busy; more runnable work than that means other jobs shared the CPU
    contended = max(load_before[0], load_after[0]) > torch.get_num_threads() + 0.5
    result = {
        "config": repo_path(args.config),
        "overrides": args.override,
        "n": n,
        "repeats": args.repeats,
        "ratios": [r for r in full.config.masking.ratios if r > 0],
        "mean_reference_words": sum(len(r.split()) for r in refs) / n,
        "target_s_per_reference": TARGET_S_PER_REFERENCE,
        "paper": PAPER,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "contended": contended,
        "deterministic_across_repeats": deterministic if args.repeats > 1 else None,  # one repeat: not checked
        "signature": full.signature(),
    }
    title = (
        f"MARS augmentation speed ({n} ROC references, 4 ratios, {torch.get_num_threads()} torch thread(s), "
        f"load {load_before[0]:.2f} -> {load_after[0]:.2f}{', CONTENDED' if contended else ''})"
    )
    write_results(
        args.name,
        result,
        rows,
        [
            "what",
            "references",
            "wall_s_per_reference",
            "cpu_s_per_reference",
            "wall_ratio_to_peer",
            "cpu_ratio_to_peer",
            "meets_target",
        ],
        title,
    )
    for refs_of in outputs["self_planning"][: args.show]:
        print("\n".join(f"    {text}" for text in refs_of))


if __name__ == "__main__":
    main()
