"""Why a dev-mix tau-like can move between runs of the same code: exact metric ties and last-bit rounding.

The WMT20 tau-like counts a metric tie on a judged pair as discordant. Judged sets where several systems give
the same output (WebNLG: identical verbalisations of one triple set) have many exact ties, so the tau-like
depends on whether two equal texts get bit-identical scores. ``import nlgmetrics`` sets ``MKL_CBWR=AUTO,STRICT``
(since commit 9a35539) so that they do; before that, MKL's default mode rounded a product differently by batch
shape on more than one thread, and ties broke at random. This scores one dev-mix set with BERTScore in a fresh
process per MKL mode (strict, MKL default) at ``--threads`` and reports, per mode: tau-like, system Pearson, how
many scores differ from strict mode, and the judged pairs that are metric ties (identical outputs, and different
texts that score alike, e.g. ones that tokenise alike). ``coin-flip tau-like`` is the tau-like if every tie were
broken at random: the average that rounding noise breaking all of them would give.

    python bench/tau_ties.py [--set webnlg] [--half select] [--encoder packaged:minilm] [--threads 2]
        # ~10 min on 2 cores (BERTScore-MiniLM on WebNLG's select half, once per mode)

Writes bench/results/tau_ties_<set>_<half>.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import add_worker_options, run_worker, write_results, write_worker_result  # noqa: E402

MODES = {"mkl-strict": "AUTO,STRICT", "mkl-default": "OFF"}
MIX = "configs/devmix/default.yaml"


def dev_rows(name: str, half: str) -> tuple[dict, list[dict]]:
    """One set's rows of the mix's half (only that set's file is read)."""
    from nlgmetrics.metaeval.devmix import load_mix, set_rows
    from nlgmetrics.resources import config_path, data_root

    mix = load_mix(config_path(MIX))
    for entry in mix["sets"]:
        if entry["name"] == name:
            return entry, set_rows(entry, data_root(None), half, int(mix["split_seed"]), None)
    raise SystemExit(f"no set '{name}' in {MIX}")


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: the mode is set before torch (and MKL) load, then BERTScore scores the set."""
    os.environ["MKL_CBWR"] = MODES[args.worker]
    import torch

    from nlgmetrics.baselines import BERTScorer

    torch.set_num_threads(args.threads)
    _, rows = dev_rows(args.set, args.half)
    scores = BERTScorer(encoder=args.encoder).score([r["hyp"] for r in rows], [r["refs"] for r in rows])
    write_worker_result(args.out, {"mkl_cbwr": os.environ["MKL_CBWR"], "scores": [float(s) for s in scores]})


def tie_counts(scores: list[float], human: list[float], items: list, hyps: list[str]) -> dict:
    """Judged pairs and metric ties (``tau_like_ties``), the ties split into identical outputs and different texts.

    Pairs of identical outputs are the judged pairs of the groups (item, output), so the same count gives them.
    """
    from nlgmetrics.metaeval import tau_like_ties

    counts = tau_like_ties(scores, human, items)
    identical = tau_like_ties(scores, human, list(zip(items, hyps)))["metric_ties"]
    return {**counts, "tied_identical_outputs": identical, "tied_different_texts": counts["metric_ties"] - identical}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="webnlg", help="a set name of the default dev mix")
    parser.add_argument("--half", choices=["select", "report"], default="select")
    parser.add_argument("--encoder", default="packaged:minilm")
    parser.add_argument("--threads", type=int, default=2)
    add_worker_options(parser, MODES)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    from nlgmetrics.metaeval import system_pearson, tau_like

    entry, rows = dev_rows(args.set, args.half)
    human = [r["scores"][entry["human"]] for r in rows]
    items, systems, hyps = [r["item_id"] for r in rows], [r["system"] for r in rows], [r["hyp"] for r in rows]
    extra = ["--set", args.set, "--half", args.half, "--encoder", args.encoder, "--threads", str(args.threads)]
    scored = {}
    for mode in MODES:
        result, run = run_worker(Path(__file__), ["--worker", mode, *extra])
        if result is None:
            raise SystemExit(f"the {mode} worker failed (exit {run.returncode}); see its output above")
        scored[mode] = result["scores"]
    strict = scored["mkl-strict"]
    table, details = [], {}
    for mode, scores in scored.items():
        counts = tie_counts(scores, human, items, hyps)
        tau = tau_like(scores, human, items)
        changed = [abs(a - b) for a, b in zip(scores, strict) if a != b]
        details[mode] = {
            **counts,
            "tau_like": tau,
            "system_pearson": system_pearson(scores, human, systems),
            "scores_differing_from_strict": len(changed),
            "max_abs_difference": max(changed, default=0.0),
        }
        table.append(
            {
                "MKL mode": f"{mode} (MKL_CBWR={MODES[mode]})",
                "tau-like": f"{tau:.4f}",
                "coin-flip tau-like": f"{tau + counts['metric_ties'] / counts['judged_pairs']:.4f}",
                "system Pearson": f"{details[mode]['system_pearson']:.9f}",
                "scores differing from strict": len(changed),
                "max abs difference": f"{details[mode]['max_abs_difference']:.2e}",
                "judged pairs": counts["judged_pairs"],
                "metric ties": counts["metric_ties"],
                "of them identical outputs": counts["tied_identical_outputs"],
                "of them different texts": counts["tied_different_texts"],
            }
        )
    columns = list(table[0])
    notes = [
        f"set {args.set} ({entry['path']}, human '{entry['human']}'), {args.half} half of {MIX}: {len(rows)} "
        f"rows; BERTScore with {args.encoder}, {args.threads} threads, one fresh process per mode",
        "judged pairs: two systems' outputs for one item with different human scores; a metric tie counts as "
        "discordant in the WMT20 tau-like, so each tie broken the right way by rounding noise adds "
        "2 / judged pairs to it",
    ]
    write_results(
        f"tau_ties_{args.set}_{args.half}",
        {"set": args.set, "half": args.half, "encoder": args.encoder, "threads": args.threads, "details": details},
        table,
        columns,
        f"Metric ties and MKL rounding in the tau-like ({args.set}, {args.half} half)",
        notes,
    )


if __name__ == "__main__":
    main()
