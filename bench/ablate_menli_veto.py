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
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import adversarial_accuracy, fit_ranges, load_checked, mean_tau_of  # noqa: E402
from bench.ablate_menli_fluency import (  # noqa: E402
    add_rule_arguments, carried_report, pareto, plot as fluency_plot, rule_choice, rule_tables, write_result,
)
from bench.common import machine  # noqa: E402

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
    """The fluency ablation's rule (``rule_choice``); ties go to the gentler veto: smaller penalty, then smaller
    linear weight, then larger threshold."""
    return rule_choice(points, goal, bar, lambda p: (-p["penalty"], -p["weight"], p["threshold"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_rule_arguments(parser, "similarity partners (evaluate.py names)", "menli_veto")
    args = parser.parse_args()

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

    report = carried_report(halves, combination(chosen), args.all_items_set, args.bootstrap) if carried else None

    result = {"mix": args.mix, "split_seed": scored["mix"]["split_seed"], "limit_items": args.limit_items,
              "nli_model": scored["nli_model"], "adversarial_goal": args.adversarial_goal,
              "grid": {"weights": LINEAR_WEIGHTS, "thresholds": THRESHOLDS, "penalties": PENALTIES},
              "signatures": {n: scored["scorers"][n].signature() for n in names},
              "ranges": {n: {"low": r.low, "high": r.high} for n, r in ranges.items()},
              "bertscore_select_tau": bar, "chosen": chosen, "verdict": verdict, "best_overall": best_overall,
              "most_robust": most_robust, "frontier": pareto(points), "points": points, "report": report,
              "seconds": round(time.perf_counter() - started, 1), "machine": machine()}
    write_result(result, args.name, markdown, plot)


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
    grid_spec = result["grid"]
    lines += rule_tables(result, png, shown, _label, "score",
                         [f"- Grid: w in {list(grid_spec['weights'])}, tau in {list(grid_spec['thresholds'])}, "
                          f"lam in {list(grid_spec['penalties'])}, per partner."])
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    """The fluency ablation's frontier plot, labelled for the veto."""
    fluency_plot(result, path, "{} + menli veto", "partner + MENLI ({}) as a hinge veto")


if __name__ == "__main__":
    main()
