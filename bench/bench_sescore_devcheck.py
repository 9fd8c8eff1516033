"""SEScore's dev-mix check during training: its cost, against the pair-at-a-time check it replaced.

``train.py fit`` with ``data.dev_mix`` scores the dev mix's select half at every validation (the v2 recipe: 4,360
candidate-reference pairs, 40 items per set, at most 2 references each) to pick the checkpoint. The peer is
that check as it ran before: pairs longest first, batches of ``eval_batch_size`` pairs, both texts of every pair
through the encoder (``SEScoreRegressor.forward``). The toolkit's check (``SEScoreModule.validation_step``) keeps
each item's pairs together (``grouped_longest_first``) and encodes each distinct text of a batch once
(``SEScoreRegressor.forward`` with ``distinct``). Both run the same weights, as a fit validates them (LoRA
unmerged, eval mode, float32), one after the other in this process; the table gives their tau-like, the largest
difference of any pair's score, and the CPU-time ratio.

    python bench/bench_sescore_devcheck.py [--checkpoint sescore/checkpoints/mpnet-v2] [--name sescore_devcheck]
        # ~45 min on 2 cores (the peer is most of it: 2,231 s wall in the published run)

Writes bench/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import timed, write_results  # noqa: E402


def pairs_longest_first(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The peer's order, the check as it ran before: every (candidate, reference) pair by length, longest first
    (ties keep input order), so an item's pairs are spread over many batches."""
    return sorted(records, key=lambda r: len(r["candidate"]) + len(r["reference"]), reverse=True)


def run_check(regressor, records: list[dict], batch_size: int, distinct: bool) -> tuple[dict[int, float], dict]:
    """Every record's score (keyed by ``id`` of the record) and the check's tau-like, seconds and texts encoded."""
    import torch
    from tqdm.auto import tqdm

    from sescore.regressor import DevTauLike
    from sescore.regressor.datamodule import collate_pairs

    metric, scores, counted = DevTauLike(), {}, {"texts": 0}

    def check() -> None:
        with torch.inference_mode():
            starts = range(0, len(records), batch_size)
            for start in tqdm(starts, desc="distinct texts" if distinct else "pair texts", unit="batch"):
                chunk = records[start : start + batch_size]
                batch = collate_pairs(chunk)
                if distinct:
                    preds = regressor(batch["candidate"], batch["reference"], encoder_grad=False, distinct=True)
                    counted["texts"] += len(set(batch["candidate"]) | set(batch["reference"]))
                else:
                    preds = regressor(batch["candidate"], batch["reference"], encoder_grad=False)
                    counted["texts"] += 2 * len(chunk)
                metric.update(preds, batch["row"], batch["human"], batch["item"], batch["set"])
                scores.update({id(r): float(p) for r, p in zip(chunk, preds)})

    _, took = timed(check)
    return scores, {
        "tau_like": float(metric.compute()),
        "wall_s": round(took.wall, 1),
        "cpu_s": round(took.cpu, 1),
        "texts_encoded": counted["texts"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="sescore/checkpoints/mpnet-v2")
    parser.add_argument("--dev-mix", default="devmix/default.yaml")
    parser.add_argument("--items-per-set", type=int, default=40, help="data.dev_items_per_set of the v2 recipe")
    parser.add_argument("--max-refs", type=int, default=2, help="data.dev_max_refs of the v2 recipe")
    parser.add_argument("--batch-size", type=int, default=64, help="data.eval_batch_size of the v2 recipe")
    parser.add_argument("--name", default="sescore_devcheck")
    args = parser.parse_args()

    import torch

    from sescore.regressor.checkpoint import load_trainable
    from sescore.regressor.datamodule import grouped_longest_first
    from sescore.regressor.sources import load_dev_mix

    records = load_dev_mix(args.dev_mix, "select", args.items_per_set, max_refs=args.max_refs)
    regressor = load_trainable(args.checkpoint).float().eval()
    distinct_texts = len({t for r in records for t in (r["candidate"], r["reference"])})
    # the toolkit's check first: any warm-up advantage goes to the peer
    new_scores, new = run_check(regressor, grouped_longest_first(records), args.batch_size, distinct=True)
    old_scores, old = run_check(regressor, pairs_longest_first(records), args.batch_size, distinct=False)
    largest = max(abs(new_scores[k] - old_scores[k]) for k in old_scores)
    rows = [
        {"check": "pair texts, longest first (before)", **old, "ratio_cpu": 1.0},
        {
            "check": "distinct texts per batch, items together (now)",
            **new,
            "ratio_cpu": round(new["cpu_s"] / old["cpu_s"], 3),
        },
    ]
    notes = [
        f"{args.checkpoint}, dev mix {args.dev_mix} select half: {len(records)} pairs, {args.items_per_set} items "
        f"per set, at most {args.max_refs} references; {distinct_texts} distinct texts in all; batches of "
        f"{args.batch_size} pairs; torch threads {torch.get_num_threads()}",
        f"largest difference of a pair's score between the two checks: {largest:.2e}; tau-like "
        f"{new['tau_like']:.6f} (now) against {old['tau_like']:.6f} (before)",
        "one run of each in this process (toolkit first); ratio_cpu = CPU seconds / the peer's",
        "a fit's validation also scores its held-out synthetic pairs (val_loss; 10 variants per reference): "
        "not measured here (the synthesis dataset is a training run's output)",
    ]
    write_results(
        args.name,
        {
            "checkpoint": args.checkpoint,
            "pairs": len(records),
            "distinct_texts": distinct_texts,
            "largest_score_difference": largest,
        },
        rows,
        ["check", "tau_like", "texts_encoded", "cpu_s", "wall_s", "ratio_cpu"],
        "SEScore dev-mix check during training: distinct texts against pair texts",
        notes,
    )


if __name__ == "__main__":
    main()
