"""Does a fluency term let MENLI's combiner keep both ranking and adversarial robustness? NLI + a similarity
partner + the causal-LM likelihood ratio, chosen on the dev mix's select half under the adversarial goal.

The two-way combiner (``ablate_menli_combiner.py``, nli-minilm) shows a trade: the partner that ranks MT
candidates best (chrF) costs the adversarial suite most (0.300 combined), and MENLI alone stays below the suite's
goal (0.621 < 0.70). ``lm-ratio`` alone scores 0.739 on the suite (it sees broken fluency) but ranks poorly. This
ablation asks whether a third term buys the goal back at a price the ranking can pay:

    w_nli * MinMax(menli) + w_p * MinMax(partner) + w_lm * MinMax(lm-ratio),   weights on the simplex, step 0.1

with every range fitted once on the pooled select half (as in the two-way table). Every grid point gets its select
mean tau-like and its adversarial accuracy (both dev data, the choosing side). The rule, fixed before the run: the
point with the best select mean tau among those with adversarial accuracy >= ``--adversarial-goal``; it is
carried to the report half only if that select tau is at least BERTScore alone's (otherwise nothing the rule
could pick ranks like the baseline on the data it is chosen on, and the held-out half is left unread). The frontier
of (select tau, adversarial accuracy) is written as a plot.

    python bench/ablate_menli_fluency.py [--partners bertscore,chrf,sescore] [--nli-model packaged:nli-minilm]

Scores come from the dev-mix cache the combiner ablation fills (``load_scores``), so after it this costs seconds
(25 s; the nli-mpnet run, ``--nli-model packaged:nli-mpnet --mix devmix/short_text.yaml --name
menli_fluency_nli-mpnet``, 11 s from its cache). Writes bench/results/<name>.{json,md,png} (default menli_fluency);
``export_menli_mix.py`` packages a carried point of such a file as the ``menli+<partner>+lm-ratio`` recipe.

The veto ablation that shared this rule (``menli_veto*.{json,md,png}``: NLI as a hinge penalty, no point carried
with nli-minilm, a point level with BERTScore with nli-mpnet) was a one-off whose script is gone; its result files
and the README's account of them stay.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import (  # noqa: E402
    adversarial_accuracy,
    all_items,
    bootstrap_of,
    fit_ranges,
    load_checked,
    mean_tau_of,
    meets_goal,
)
from bench.harness import REPO, RESULTS, write_document  # noqa: E402

FLUENCY = "lm-ratio"


def simplex(step: float = 0.1) -> list[tuple[float, float, float]]:
    """(w_nli, w_partner, w_fluency) on the simplex grid: non-negative, summing to 1, in steps of ``step``."""
    n = round(1 / step)
    if abs(n * step - 1) > 1e-9:
        raise ValueError(f"step {step} does not divide 1")
    return [
        (round(a / n, 10), round(b / n, 10), round((n - a - b) / n, 10)) for a in range(n + 1) for b in range(n + 1 - a)
    ]


def mixed(scores: dict, ranges: dict, partner: str, weights: Sequence[float]):
    """The three-way combination of stored scores with the fixed ranges (``MinMax.apply``, no clipping)."""
    return sum(w * ranges[name].apply(scores[name]) for name, w in zip(("menli", partner, FLUENCY), weights))


def pareto(points: Sequence[dict]) -> list[dict]:
    """The points no other point beats on both select tau and adversarial accuracy (ties kept), by select tau."""
    front = [
        p
        for p in points
        if not any(
            q["select_tau"] >= p["select_tau"]
            and q["adversarial"] >= p["adversarial"]
            and (q["select_tau"], q["adversarial"]) != (p["select_tau"], p["adversarial"])
            for q in points
        )
    ]
    return sorted(front, key=lambda p: -p["select_tau"])


def rule_choice(
    points: Sequence[dict], goal: float, bar: float, tie: Callable[[dict], tuple]
) -> tuple[dict | None, bool, str]:
    """The rule written down before the run: best select tau among points with adversarial >= ``goal``, ties
    broken by ``tie(point)`` (larger wins); (that point, whether it is carried to the report half -- only if its
    select tau >= ``bar``, BERTScore alone's -- and why)."""
    eligible = [p for p in points if meets_goal(p["adversarial"], goal)]
    if not eligible:
        return None, False, f"no grid point reaches adversarial accuracy {goal}"
    best = max(eligible, key=lambda p: (p["select_tau"], *tie(p)))
    if best["select_tau"] < bar:
        return (
            best,
            False,
            (
                f"the best point with adversarial >= {goal} ranks below BERTScore alone on the select "
                f"half ({best['select_tau']:.4f} < {bar:.4f}); the report half is not read"
            ),
        )
    return best, True, "carried to the report half"


def choose(points: Sequence[dict], goal: float, bar: float) -> tuple[dict | None, bool, str]:
    """``rule_choice`` with ties going to the weight vector nearer the centre (a tie is no evidence for an
    extreme)."""
    return rule_choice(points, goal, bar, lambda p: (-sum((w - 1 / 3) ** 2 for w in p["weights"]),))


def add_rule_arguments(parser: argparse.ArgumentParser, partners_help: str, name: str) -> None:
    """The options of a rule-based ablation (the dev mix and its cache, the adversarial suite and goal, the
    models, the bootstrap, the result name)."""
    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--cache", default=str(REPO / "runs" / "devmix_cache"))
    parser.add_argument("--adversarial", default="adversarial/adv_menli_wmt20_de.jsonl")
    parser.add_argument("--adversarial-goal", type=float, default=0.70, help="the MENLI issue's goal")
    parser.add_argument("--partners", default="bertscore,chrf,sescore", help=partners_help)
    parser.add_argument("--checkpoint", nargs="+", help="SEScore checkpoint folder(s) of the sescore partner")
    parser.add_argument("--nli-model", default="packaged:nli-minilm")
    parser.add_argument("--all-items-set", default="ted_zhen")
    parser.add_argument("--limit-items", type=int, help="at most N items per set and half (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--name", default=name, help="result file stem under bench/results")


def carried_report(
    halves: dict, combination: Callable[[dict], Sequence[float]], all_items_set: str, resamples: int
) -> dict:
    """The report half of a carried point: per-set tau-like, the paired bootstrap against BERTScore, and the
    all-items set's bootstrap (both halves joined) when one is named."""
    from nlgmetrics.metaeval import tau_like

    report = {
        "tau": {s["set"]: tau_like(combination(s["scores"]), s["human"], s["items"]) for s in halves["report"]},
        "vs_bertscore": bootstrap_of(halves["report"], combination, resamples),
    }
    if all_items_set:
        report["all_items_vs_bertscore"] = bootstrap_of([all_items(halves, all_items_set)], combination, resamples)
    return report


def write_result(
    result: dict, name: str, markdown: Callable[[dict, str], str], plot: Callable[[dict, Path], None]
) -> None:
    """bench/results/<name>.{json,md,png}, and the Markdown on stdout."""
    written = write_document(name, result, lambda document: markdown(document, f"{name}.png"))
    plot(written, RESULTS / f"{name}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_rule_arguments(parser, "similarity partners beside NLI and lm-ratio (evaluate.py names)", "menli_fluency")
    args = parser.parse_args()

    if not args.adversarial:
        parser.error("--adversarial: the rule is conditioned on the adversarial suite; it cannot be skipped here")
    partners = tuple(p for p in args.partners.split(",") if p)
    names = tuple(dict.fromkeys(("menli", "bertscore", *partners, FLUENCY)))
    started = time.perf_counter()
    scored = load_checked(parser, args, names)
    halves = scored["halves"]
    adv_scores, n_good, types = scored["adversarial"]
    ranges = fit_ranges(halves["select"], names)

    def select_tau(partner: str, weights) -> float:
        return mean_tau_of(halves["select"], lambda scores: mixed(scores, ranges, partner, weights))

    points = [
        {
            "partner": p,
            "weights": list(w),
            "select_tau": select_tau(p, w),
            "adversarial": adversarial_accuracy(mixed(adv_scores, ranges, p, w), n_good, types),
        }
        for p in partners
        for w in simplex()
    ]
    bar = select_tau("bertscore", (0.0, 1.0, 0.0))
    chosen, carried, verdict = choose(points, args.adversarial_goal, bar)
    best_overall = max(points, key=lambda p: p["select_tau"])
    two_way = max(
        (p for p in points if p["weights"][2] == 0.0 and 0 < p["weights"][0] < 1), key=lambda p: p["select_tau"]
    )

    report = None
    if carried:

        def chosen_mix(scores: dict):
            return mixed(scores, ranges, chosen["partner"], chosen["weights"])

        report = carried_report(halves, chosen_mix, args.all_items_set, args.bootstrap)

    result = {
        "mix": args.mix,
        "split_seed": scored["mix"]["split_seed"],
        "limit_items": args.limit_items,
        "nli_model": scored["nli_model"],
        "adversarial_goal": args.adversarial_goal,
        "signatures": {n: scored["scorers"][n].signature() for n in names},
        "ranges": {n: {"low": r.low, "high": r.high} for n, r in ranges.items()},
        "bertscore_select_tau": bar,
        "chosen": chosen,
        "verdict": verdict,
        "best_overall": best_overall,
        "best_two_way": two_way,
        "frontier": pareto(points),
        "points": points,
        "report": report,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_result(result, args.name, markdown, plot)


def _label(point: dict) -> str:
    a, b, c = point["weights"]
    return f"{a:.1f} menli + {b:.1f} {point['partner']} + {c:.1f} {FLUENCY}"


def markdown(result: dict, png: str) -> str:
    goal = result["adversarial_goal"]
    lines = [
        f"# MENLI + similarity + fluency ({FLUENCY}): chosen on the select half under adversarial >= {goal} "
        f"(split seed {result['split_seed']}, NLI model {result['nli_model']})",
        "",
        f"Rule: the best select-half mean tau-like among grid points with adversarial accuracy >= {goal}, "
        f"carried to the report half only if it is at least BERTScore alone's select tau "
        f"({result['bertscore_select_tau']:.4f}). **Verdict: {result['verdict']}.**",
        "",
        "| point | weights (menli, partner, lm-ratio) | select mean tau | adversarial acc. |",
        "|---|---|---|---|",
    ]
    shown = [
        ("chosen by the rule" if result["report"] else "best meeting the adversarial goal", result["chosen"]),
        ("best on the select half, any adversarial", result["best_overall"]),
        ("best two-way (no fluency term)", result["best_two_way"]),
    ]
    lines += rule_tables(result, png, shown, _label, "weights")
    return "\n".join(lines) + "\n"


def rule_tables(
    result: dict,
    png: str,
    shown: Sequence[tuple[str, dict | None]],
    label: Callable[[dict], str],
    frontier_column: str,
    notes: Sequence[str] = (),
) -> list[str]:
    """The Markdown after a rule-based ablation's header: the shown points and BERTScore alone (rows of a table
    whose header the caller wrote), the frontier, the report half when a point was carried, then ``notes`` and the
    metrics, ranges and run notes."""
    lines = [
        f"| {name} | {label(point)} | {point['select_tau']:.4f} | {point['adversarial']:.3f} |"
        for name, point in shown
        if point is not None
    ]
    lines.append(f"| BERTScore alone | - | {result['bertscore_select_tau']:.4f} | - |")
    lines += [
        "",
        f"Frontier (no grid point is better on both; `{png}` plots every point):",
        "",
        f"| {frontier_column} | select mean tau | adversarial acc. |",
        "|---|---|---|",
    ]
    lines += [f"| {label(p)} | {p['select_tau']:.4f} | {p['adversarial']:.3f} |" for p in result["frontier"]]
    if result["report"]:
        boot = result["report"]["vs_bertscore"]
        lines += [
            "",
            "Report half: "
            + ", ".join(f"{s} {t:.4f}" for s, t in result["report"]["tau"].items())
            + f"; mean vs BERTScore {boot['difference']:+.4f} [{boot['ci95'][0]:+.4f}, {boot['ci95'][1]:+.4f}]"
            f", not better in {boot['share_a_not_better']:.1%} of resamples.",
        ]
        whole = result["report"].get("all_items_vs_bertscore")
        if whole:
            lines.append(
                f"All items of the all-items set (includes the select half): vs BERTScore "
                f"{whole['difference']:+.4f} [{whole['ci95'][0]:+.4f}, {whole['ci95'][1]:+.4f}], not better "
                f"in {whole['share_a_not_better']:.1%}."
            )
    lines.append("")
    lines += notes
    lines += [
        "- Metrics: " + "; ".join(f"`{s}`" for s in result["signatures"].values()),
        "- Ranges (min-max, pooled select half, then fixed): "
        + ", ".join(f"{n} [{r['low']:.4g}, {r['high']:.4g}]" for n, r in result["ranges"].items()),
        "- Adversarial: mean preference accuracy over error types, reference-based, with the same ranges.",
        f"- {result['seconds']:.0f} s; machine {result['machine']}",
    ]
    return lines


def plot(result: dict, path: Path) -> None:
    """Every grid point's (select tau, adversarial accuracy), one colour per partner, the goal and the bar drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for partner in dict.fromkeys(p["partner"] for p in result["points"]):
        mine = [p for p in result["points"] if p["partner"] == partner]
        ax.scatter(
            [p["select_tau"] for p in mine],
            [p["adversarial"] for p in mine],
            s=14,
            alpha=0.7,
            label=f"menli + {partner} + {FLUENCY}",
        )
    front = result["frontier"]
    ax.plot([p["select_tau"] for p in front], [p["adversarial"] for p in front], "k-", lw=1, label="frontier")
    ax.axhline(result["adversarial_goal"], color="grey", ls="--", lw=1, label="adversarial goal")
    ax.axvline(result["bertscore_select_tau"], color="grey", ls=":", lw=1, label="BERTScore alone (select tau)")
    ax.set_xlabel("select-half mean tau-like (dev mix)")
    ax.set_ylabel("adversarial preference accuracy")
    ax.set_title(f"MENLI ({result['nli_model']}) + partner + {FLUENCY}, simplex step 0.1")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
