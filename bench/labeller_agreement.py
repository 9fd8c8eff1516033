"""Two SEScore severity labellers side by side: on the visible NLI test sets and on the edits they both graded.

Why: the severity lever (``configs/sescore/offline_en_v2_nli_mpnet.yaml``) swaps the NLI model that calls each
synthetic edit minor or major. Whether a changed dev-mix number comes from better labels or from other labels is
easier to judge with the labellers' own record beside it: how often each gets the gold NLI label on seeded pairs of
the shared NLI test sets (SNLI, SICK, Breaking NLI), how well its severity decision (P(entailment) above its
calibrated threshold) finds gold entailment, how often the two agree, and, on the edits both synthesis runs
applied to the same text, how often they give the same severity, by edit kind.

    python bench/labeller_agreement.py                   # the two recipes' labellers, 1,000 pairs per set
    python bench/labeller_agreement.py --synthesis runs/sescore/mpnet-v2/synthesis \\
        runs/sescore/synthesis_v2_nli_mpnet_1536         # plus the edits both runs graded (data under runs/)

Writes ``bench/results/severity_labellers.{json,md}``. Cost: each model's NLI seconds are in the table
(nli-mpnet ~45 pairs/s on 2 cores, ``bench/results/nli_models.md``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO, read_data, write_results  # noqa: E402

RECIPES = ("configs/sescore/offline_en_v2.yaml", "configs/sescore/offline_en_v2_nli_mpnet.yaml")
SETS = {"SNLI": "nli/test_snli.jsonl", "SICK": "nli/test_sick.jsonl", "Breaking NLI": "nli/test_breaking_nli.jsonl"}
ENTAILMENT = 0  # gold label ids of the shared NLI files: 0 entailment, 1 neutral, 2 contradiction


def seeded_rows(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """``n`` rows drawn without replacement by a seeded generator, in file order (all rows when there are fewer)."""
    if n >= len(rows):
        return list(rows)
    pick = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    return [rows[i] for i in pick]


def binary_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two yes/no raters (torchmetrics'); NaN when one rater never varies and they agree fully."""
    import torch
    from torchmetrics.functional.classification import binary_cohen_kappa

    return float(binary_cohen_kappa(torch.as_tensor(a, dtype=torch.long), torch.as_tensor(b, dtype=torch.long)))


def balanced_accuracy(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Mean of the hit rates on gold-yes and gold-no rows (NaN for a side with no rows)."""
    predicted, gold = np.asarray(predicted, bool), np.asarray(gold, bool)
    rates = [
        float((predicted[gold == side] == side).mean()) if (gold == side).any() else float("nan")
        for side in (True, False)
    ]
    return float(np.mean(rates))


def matched_steps(first: Sequence[dict], second: Sequence[dict]) -> list[tuple[str, int, int]]:
    """(edit kind, severity by the first run, severity by the second) of every step both runs applied to the same
    text: rows are matched by (sentence_index, variant_index) and steps by position, and a trajectory is followed
    only while both runs produced the same texts (after a step graded apart, the runs may draw differently)."""
    by_key = {(r["sentence_index"], r["variant_index"]): r for r in second}
    out = []
    for row in first:
        other = by_key.get((row["sentence_index"], row["variant_index"]))
        if other is None or other["reference"] != row["reference"]:
            continue
        for step, twin in zip(row["history"], other["history"]):
            if step["text"] != twin["text"] or step["kind"] != twin["kind"] or step["status"] != twin["status"]:
                break
            if step["status"] == "applied":
                out.append((step["kind"], int(step["severity"]), int(twin["severity"])))
    return out


def edit_agreement(steps: Sequence[tuple[str, int, int]], major: int) -> tuple[dict, list[dict]]:
    """Overall agreement of the two runs' severities on matched steps, and the major shares per edit kind."""
    kinds = np.asarray([k for k, _, _ in steps])
    first = np.asarray([a == major for _, a, _ in steps])
    second = np.asarray([b == major for _, _, b in steps])
    overall = {
        "steps": len(steps),
        "major_share": [float(first.mean()), float(second.mean())],
        "same_severity": float((first == second).mean()),
        "kappa": binary_kappa(first, second),
        "minor_to_major": int((~first & second).sum()),
        "major_to_minor": int((first & ~second).sum()),
    }
    per_kind = []
    for kind, count in sorted(Counter(kinds.tolist()).items(), key=lambda item: -item[1]):
        rows = kinds == kind
        per_kind.append(
            {
                "kind": kind,
                "steps": int(count),
                "major_share": [float(first[rows].mean()), float(second[rows].mean())],
                "same_severity": float((first[rows] == second[rows]).mean()),
            }
        )
    return overall, per_kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipes", nargs=2, default=list(RECIPES), help="two synthesis recipes; their severity.nli")
    parser.add_argument("--per-set", type=int, default=1000, help="seeded pairs per NLI test set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--synthesis", nargs=2, default=None, metavar=("FIRST", "SECOND"), help="datasets of the recipes"
    )
    parser.add_argument("--name", default="severity_labellers")
    args = parser.parse_args()

    from nlgmetrics.nli.model import load_nli
    from sescore.synthesis.config import load_config

    configs = [load_config(REPO / path).severity for path in args.recipes]
    names = [config.nli for config in configs]
    rows, details = [], {"labellers": [], "sets": {}, "edits": None}
    samples = {name: seeded_rows(read_data(path), args.per_set, args.seed) for name, path in SETS.items()}
    probs: dict[tuple[str, str], np.ndarray] = {}
    for config in configs:
        nli = load_nli(config.nli, "cpu")
        started = time.perf_counter()
        for set_name, sample in samples.items():
            probs[config.nli, set_name] = nli.predict_proba(
                [r["premise"] for r in sample], [r["hypothesis"] for r in sample]
            )
        details["labellers"].append(
            {
                "nli": config.nli,
                "threshold": config.threshold,
                "mode": config.mode,
                "seconds": time.perf_counter() - started,
            }
        )
    for set_name, sample in samples.items():
        gold = np.asarray([int(r["label"]) for r in sample])
        entry, decisions, labels = {"n": len(sample)}, [], []
        for config in configs:
            p = probs[config.nli, set_name]
            decisions.append(p[:, 0] > config.threshold)
            labels.append(p.argmax(1))
            entry[config.nli] = {
                "accuracy": float((labels[-1] == gold).mean()),
                "entailment_at_threshold_balanced_accuracy": balanced_accuracy(decisions[-1], gold == ENTAILMENT),
            }
        entry["same_label"] = float((labels[0] == labels[1]).mean())
        entry["kappa_at_thresholds"] = binary_kappa(decisions[0], decisions[1])
        details["sets"][set_name] = entry
        rows.append(
            {
                "data": f"{set_name} ({len(sample)} seeded pairs)",
                **{f"{n} accuracy": f"{entry[n]['accuracy']:.3f}" for n in names},
                **{
                    f"{n} entailment, balanced accuracy": f"{entry[n]['entailment_at_threshold_balanced_accuracy']:.3f}"
                    for n in names
                },
                "same label": f"{entry['same_label']:.3f}",
                "kappa of the severity decisions": f"{entry['kappa_at_thresholds']:.3f}",
            }
        )
    notes = [
        f"pairs: {args.per_set} per set drawn with seed {args.seed} from the shared NLI test files; accuracy: the "
        "argmax label against gold (3-way)",
        "entailment, balanced accuracy: the labeller's severity decision (P(entailment) above its calibrated "
        "threshold: "
        + ", ".join(f"{c.nli} {c.threshold:g}" for c in configs)
        + ") as a finder of gold entailment, one direction (premise -> hypothesis)",
        "same label: both models' argmax labels agree; kappa: Cohen's kappa of the two severity decisions",
        "NLI seconds (all sets, 2 threads): "
        + ", ".join(f"{entry['nli']} {entry['seconds']:.0f} s" for entry in details["labellers"]),
    ]
    if args.synthesis:
        from datasets import load_from_disk

        first, second = (load_from_disk(str(REPO / path)) for path in args.synthesis)
        steps = matched_steps(first, second)
        if not steps:
            raise SystemExit(f"--synthesis: no step applied to the same text in both {args.synthesis}")
        overall, per_kind = edit_agreement(steps, configs[0].major)
        details["edits"] = {"datasets": args.synthesis, **overall, "per_kind": per_kind}
        rows.append(
            {
                "data": f"synthetic edits both runs applied to the same text ({overall['steps']} steps)",
                **{f"{n} accuracy": "-" for n in names},
                **{f"{n} entailment, balanced accuracy": "-" for n in names},
                "same label": f"{overall['same_severity']:.3f}",
                "kappa of the severity decisions": f"{overall['kappa']:.3f}",
            }
        )
        notes.append(
            f"synthetic edits: major share {overall['major_share'][0]:.3f} ({names[0]}) and "
            f"{overall['major_share'][1]:.3f} ({names[1]}); minor by the first but major by the second "
            f"{overall['minor_to_major']}, the other way {overall['major_to_minor']}"
        )
        notes.append(
            "major share by edit kind (first / second labeller, steps): "
            + "; ".join(
                f"{k['kind']} {k['major_share'][0]:.2f} / {k['major_share'][1]:.2f} ({k['steps']})" for k in per_kind
            )
        )
    columns = [
        "data",
        *[f"{n} accuracy" for n in names],
        *[f"{n} entailment, balanced accuracy" for n in names],
        "same label",
        "kappa of the severity decisions",
    ]
    write_results(args.name, {"recipes": args.recipes, **details}, rows, columns, "SEScore severity labellers", notes)


if __name__ == "__main__":
    main()
