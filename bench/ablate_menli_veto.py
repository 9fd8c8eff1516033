"""Does NLI work better as a veto than as a linear term? MENLI's combiner with a hinge penalty, chosen on the dev
mix's select half under the adversarial goal.

The linear combiner (``ablate_menli_combiner.py``, nli-minilm) trades ranking for robustness: the weight that ranks
MT candidates best leaves the adversarial suite at 0.300, and every grid point that reaches the goal (0.70) ranks
below BERTScore alone. One reading is that NLI's probability is noise near the top of its range (most candidates
are "entailed", and which is entailed more says little) and informative near the bottom (a meaning error). A hinge
uses it only there:

    score = (1 - w) * P + w * N - lam * max(0, tau - N)

with N = MinMax(menli), P = MinMax(partner), both ranges fitted once on the pooled select half (as in the other
ablations). ``lam = 0`` is the linear combiner; ``w = 0`` is a pure veto. Every grid point gets its select-half
mean tau-like and its adversarial accuracy (dev data, the choosing side). The rule, fixed before the run (as in
``ablate_menli_fluency.py``): the best select tau among points with adversarial accuracy >= ``--adversarial-goal``;
carried to the report half only if that select tau is at least BERTScore alone's.

    python bench/ablate_menli_veto.py [--partners bertscore,chrf,sescore] [--nli-model packaged:nli-minilm]

Scores come from the dev-mix cache the combiner ablation fills (``load_scores``), so after it this costs seconds.
Writes bench/results/menli_veto.{json,md,png}.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import (  # noqa: E402
    adversarial_accuracy, all_items, bootstrap_of, fit_ranges, load_checked, mean_tau_of,
    meets_goal,
)
from bench.ablate_menli_fluency import pareto, plot as fluency_plot  # noqa: E402
from bench.common import RESULTS, REPO, machine  # noqa: E402

LINEAR_WEIGHTS = (0.0, 0.1, 0.2, 0.3)
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PENALTIES = (0.5, 1.0, 2.0, 4.0)


def vetoed(nli: np.ndarray, partner: np.ndarray, weight: float, threshold: float, penalty: float) -> np.ndarray:
    """(1 - weight) * partner + weight * nli - penalty * max(0, threshold - nli), on normalised scores."""
    nli, partner = np.asarray(nli, dtype=np.float64), np.asarray(partner, dtype=np.float64)
    return (1.0 - weight) * partner + weight * nli - penalty * np.maximum(0.0, threshold - nli)


def grid(partners: Sequence[str]) -> list[dict]:
    """Every (partner, w, tau, lam) of the pre-registered grid."""
    return [{"partner": p, "weight": w, "threshold": t, "penalty": lam}
            for p, w, t, lam in itertools.product(partners, LINEAR_WEIGHTS, THRESHOLDS, PENALTIES)]


def choose(points: Sequence[dict], goal: float, bar: float) -> tuple[dict | None, bool, str]:
    """The rule: best select tau among points with adversarial >= ``goal`` (ties: smaller penalty, then smaller
    linear weight, then larger threshold: the gentler veto); carried to the report half only if >= ``bar``."""
    eligible = [p for p in points if meets_goal(p["adversarial"], goal)]
    if not eligible:
        return None, False, f"no grid point reaches adversarial accuracy {goal}"
    best = max(eligible, key=lambda p: (p["select_tau"], -p["penalty"], -p["weight"], p["threshold"]))
    if best["select_tau"] < bar:
        return best, False, (f"the best point with adversarial >= {goal} ranks below BERTScore alone on the select half "
                             f"({best['select_tau']:.4f} < {bar:.4f}); the report half is not read")
    return best, True, "carried to the report half"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--cache", default=str(REPO / "runs" / "devmix_cache"))
    parser.add_argument("--adversarial", default="adversarial/adv_menli_wmt20_de.jsonl")
    parser.add_argument("--adversarial-goal", type=float, default=0.70, help="the MENLI issue's goal")
    parser.add_argument("--partners", default="bertscore,chrf,sescore", help="similarity partners (evaluate.py names)")
    parser.add_argument("--checkpoint", nargs="+", help="SEScore checkpoint folder(s) of the sescore partner")
    parser.add_argument("--nli-model", default="packaged:nli-minilm")
    parser.add_argument("--all-items-set", default="ted_zhen")
    parser.add_argument("--limit-items", type=int, help="at most N items per set and half (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--name", default="menli_veto", help="result file stem under bench/results")
    args = parser.parse_args()

    from nlgmetrics.metaeval import tau_like

    if not args.adversarial:
        parser.error("--adversarial: the rule is conditioned on the adversarial suite; it cannot be skipped here")
    partners = tuple(p for p in args.partners.split(",") if p)
    if not partners:
        parser.error("--partners: name at least one partner")
    names = tuple(dict.fromkeys(("menli", "bertscore", *partners)))
    started = time.perf_counter()
    scored = load_checked(parser, args, names)
    halves = scored["halves"]
    adv_scores, n_good, types = scored["adversarial"]
    ranges = fit_ranges(halves["select"], names)

    def combination(point: dict):
        def apply(scores: dict) -> np.ndarray:
            return vetoed(ranges["menli"].apply(scores["menli"]), ranges[point["partner"]].apply(scores[point["partner"]]),
                          point["weight"], point["threshold"], point["penalty"])
        return apply

    points = [{**p, "select_tau": mean_tau_of(halves["select"], combination(p)),
               "adversarial": adversarial_accuracy(combination(p)(adv_scores), n_good, types)}
              for p in grid(partners)]
    bar = mean_tau_of(halves["select"], lambda scores: ranges["bertscore"].apply(scores["bertscore"]))
    chosen, carried, verdict = choose(points, args.adversarial_goal, bar)
    best_overall = max(points, key=lambda p: p["select_tau"])
    most_robust = max(points, key=lambda p: (p["adversarial"], p["select_tau"]))

    report = None
    if carried:
        report = {"tau": {s["set"]: tau_like(combination(chosen)(s["scores"]), s["human"], s["items"])
                          for s in halves["report"]},
                  "vs_bertscore": bootstrap_of(halves["report"], combination(chosen), args.bootstrap)}
        if args.all_items_set:
            report["all_items_vs_bertscore"] = bootstrap_of([all_items(halves, args.all_items_set)],
                                                            combination(chosen), args.bootstrap)

    result = {"mix": args.mix, "split_seed": scored["mix"]["split_seed"], "limit_items": args.limit_items,
              "nli_model": scored["nli_model"], "adversarial_goal": args.adversarial_goal,
              "grid": {"weights": LINEAR_WEIGHTS, "thresholds": THRESHOLDS, "penalties": PENALTIES},
              "signatures": {n: scored["scorers"][n].signature() for n in names},
              "ranges": {n: {"low": r.low, "high": r.high} for n, r in ranges.items()},
              "bertscore_select_tau": bar, "chosen": chosen, "verdict": verdict, "best_overall": best_overall,
              "most_robust": most_robust, "frontier": pareto(points), "points": points, "report": report,
              "seconds": round(time.perf_counter() - started, 1), "machine": machine()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1, default=str))
    (RESULTS / f"{args.name}.md").write_text(markdown(result, f"{args.name}.png"))
    plot(result, RESULTS / f"{args.name}.png")
    print(markdown(result, f"{args.name}.png"))


def _label(point: dict) -> str:
    return (f"{1 - point['weight']:.1f} {point['partner']} + {point['weight']:.1f} menli "
            f"- {point['penalty']:g} * max(0, {point['threshold']:.1f} - menli)")


def markdown(result: dict, png: str) -> str:
    goal = result["adversarial_goal"]
    lines = [f"# MENLI as a veto: partner + hinge penalty on low NLI, chosen on the select half under adversarial >= "
             f"{goal} (split seed {result['split_seed']}, NLI model {result['nli_model']})", "",
             f"Rule: the best select-half mean tau-like among the {len(result['points'])} grid points with adversarial "
             f"accuracy >= {goal}, carried to the report half only if it is at least BERTScore alone's select tau "
             f"({result['bertscore_select_tau']:.4f}). **Verdict: {result['verdict']}.**", "",
             "| point | score | select mean tau | adversarial acc. |", "|---|---|---|---|"]
    shown = [("chosen by the rule" if result["report"] else "best meeting the adversarial goal", result["chosen"]),
             ("best on the select half, any adversarial", result["best_overall"]),
             ("most robust", result["most_robust"])]
    for name, point in shown:
        if point is not None:
            lines.append(f"| {name} | {_label(point)} | {point['select_tau']:.4f} | {point['adversarial']:.3f} |")
    lines.append(f"| BERTScore alone | - | {result['bertscore_select_tau']:.4f} | - |")
    lines += ["", f"Frontier (no grid point is better on both; `{png}` plots every point):", "",
              "| score | select mean tau | adversarial acc. |", "|---|---|---|"]
    lines += [f"| {_label(p)} | {p['select_tau']:.4f} | {p['adversarial']:.3f} |" for p in result["frontier"]]
    if result["report"]:
        boot = result["report"]["vs_bertscore"]
        lines += ["", "Report half: " + ", ".join(f"{s} {t:.4f}" for s, t in result["report"]["tau"].items())
                  + f"; mean vs BERTScore {boot['difference']:+.4f} [{boot['ci95'][0]:+.4f}, {boot['ci95'][1]:+.4f}]"
                  f", not better in {boot['share_a_not_better']:.1%} of resamples."]
        whole = result["report"].get("all_items_vs_bertscore")
        if whole:
            lines.append(f"All items of the all-items set (includes the select half): vs BERTScore "
                         f"{whole['difference']:+.4f} [{whole['ci95'][0]:+.4f}, {whole['ci95'][1]:+.4f}], not better in "
                         f"{whole['share_a_not_better']:.1%}.")
    grid_spec = result["grid"]
    lines += ["", f"- Grid: w in {list(grid_spec['weights'])}, tau in {list(grid_spec['thresholds'])}, "
                  f"lam in {list(grid_spec['penalties'])}, per partner.",
              "- Metrics: " + "; ".join(f"`{s}`" for s in result["signatures"].values()),
              "- Ranges (min-max, pooled select half, then fixed): "
              + ", ".join(f"{n} [{r['low']:.4g}, {r['high']:.4g}]" for n, r in result["ranges"].items()),
              "- Adversarial: mean preference accuracy over error types, reference-based, with the same ranges.",
              f"- {result['seconds']:.0f} s; machine {result['machine']}"]
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    """The fluency ablation's frontier plot, labelled for the veto."""
    fluency_plot(result, path, "{} + menli veto", "partner + MENLI ({}) as a hinge veto")

if __name__ == "__main__":
    main()
