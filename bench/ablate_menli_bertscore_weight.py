"""Does MENLI with the default NLI model, combined with BERTScore, rank MT candidates better than BERTScore alone?

The pooling ablation (``ablate_menli_pooling.py``) showed that no pooling of nli-mpnet's entailment probabilities
alone comes near BERTScore on TED zh-en. MENLI's paper never uses NLI alone for MT ranking: it combines it with a
similarity metric, ``w * MinMax(NLI) + (1 - w) * MinMax(BERTScore)``. The combiner table
(``ablate_menli_combiner.py``) was fitted on nli-minilm; this redoes the BERTScore weight for the default model on
the same short-text sets and from the same caches (NLI pair probabilities, BERTScore row scores), so it costs no
model pass beyond the adversarial suite's BERTScore on first use. Ranges are fitted once on the pooled select
half and fixed; the weight is the best mean tau-like over the sets on the select half (ties to the weight nearer
0.5); the report half gets a paired item bootstrap against BERTScore with the same encoder. TED zh-en on all its
items (the MENLI issue's criterion) is shown too, marked as including the select half the weight was chosen on.

A second rule, fixed before its stress rows were read, picks the weight a user who wants MENLI's robustness would
take: the best select-half mean tau-like among the weights whose dev adversarial accuracy is at least
``--adversarial-goal`` (the MENLI issue's 0.70). Its fixed ranges are what ``bench/stress_menli.py --combine``
reads from the result file, so the blind-spot suite sees exactly this combination.

    python bench/ablate_menli_bertscore_weight.py [--nli-model packaged:nli-mpnet] [--sets ted_zhen,webnlg] \
        [--save-stats FILE.json]

Cost: seconds after ``ablate_menli_pooling.py`` filled the caches (an hour on 2 cores before). Writes
bench/results/menli_bertscore_weight_<model>.{json,md}; ``bench/stress_menli.py --combine`` and
``docs/reproduce_menli.sh`` read that file, and the packaged ``nli-mpnet+bertscore-minilm.json`` ranges must be
its ranges (``tests/test_bench_menli.py`` checks that they are).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import (  # noqa: E402
    WEIGHTS,
    adversarial_accuracy,
    adversarial_rows,
    all_items,
    choose,
    combined,
    fit_ranges,
    mean_tau,
    meets_goal,
    reference_scores,
    versus_bertscore,
)
from bench.ablate_menli_pooling import (  # noqa: E402
    add_set_options,
    check_sets,
    load_halves,
    pair_probabilities,
    strategy_scores,
)
from bench.harness import metric, read_data, write_document  # noqa: E402

NAMES = ("menli", "bertscore")


def combiner_sets(halves: dict[str, list[dict]], formula: str, direction: str) -> dict[str, list[dict]]:
    """The pooling ablation's halves in the combiner's shape: per set, the MENLI and BERTScore score arrays."""
    return {
        half: [
            {
                "set": s["set"],
                "human": s["human"],
                "items": s["items"],
                "scores": {
                    "menli": strategy_scores(s["forward"], s["backward"], formula, direction),
                    "bertscore": s["bertscore"],
                },
            }
            for s in sets
        ]
        for half, sets in halves.items()
    }


def variants(best_weight: float, robust_weight: float | None = None) -> dict[str, float]:
    """What the report shows: MENLI alone, BERTScore alone, the paper-style 0.2, the select-best weight and the
    robust weight (best select tau among weights meeting the adversarial goal), each weight once."""
    out = {"menli alone": 1.0, "bertscore alone": 0.0, "menli+bertscore@0.2 (paper-style)": 0.2}
    for weight, suffix in ((best_weight, ""), (robust_weight, " (robust)")):
        if weight is not None and weight not in out.values():
            out[f"menli+bertscore@{weight}{suffix}"] = weight
    return out


def robust_choice(
    select_sets: list[dict], ranges: dict, adversarial_grid: dict[float, float] | None, goal: float
) -> float | None:
    """The best select-half weight among those whose adversarial accuracy reaches ``goal``; None if none does or
    the suite was not run. Same tie rule as the unconstrained choice."""
    if not adversarial_grid:
        return None
    feasible = [w for w in WEIGHTS if meets_goal(adversarial_grid[w], goal)]
    if not feasible:
        return None
    _, best, _ = choose(select_sets, ranges, partners=("bertscore",), weights=feasible)
    return best["bertscore"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_set_options(parser)
    parser.add_argument("--all-items-set", default="ted_zhen", help="the set also reported on all its items")
    parser.add_argument("--formula", default="e")
    parser.add_argument("--direction", default="<->")
    parser.add_argument(
        "--adversarial-goal",
        type=float,
        default=0.70,
        help="the robust weight's floor on the dev adversarial suite's mean accuracy",
    )
    parser.add_argument("--name", help="result file stem (default menli_bertscore_weight_<model>)")
    parser.add_argument(
        "--save-stats",
        metavar="JSON",
        help="also write the fitted ranges as evaluate.py --normalization reads them, with what they "
        "were fitted on (configs/menli/ holds the shipped ones)",
    )
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("NLGMETRICS_THREADS", "2")))
    from menli.pooling import check_strategy
    from nlgmetrics.metaeval import tau_like
    from nlgmetrics.metaeval.devmix import load_mix
    from nlgmetrics.nli import load_nli

    formula, direction = check_strategy(args.formula, args.direction)
    mix = load_mix(args.mix)
    wanted = check_sets(parser, mix, args.sets)
    if args.all_items_set not in wanted:
        parser.error(f"--all-items-set {args.all_items_set} is not one of --sets ({', '.join(wanted)})")
    bertscore = metric("bertscore", encoder="packaged:minilm", progress=False)  # the published rows' encoder
    nli = load_nli(args.nli_model)
    started = time.perf_counter()
    halves = load_halves(mix, wanted, nli, bertscore, Path(args.cache), Path(args.score_cache), args.limit_items)
    sets = combiner_sets(halves, formula, direction)

    ranges = fit_ranges(sets["select"], NAMES)
    grid, best, _ = choose(sets["select"], ranges, partners=("bertscore",))
    whole = all_items(sets, args.all_items_set)

    adversarial = None
    if args.adversarial:
        import numpy as np

        rows = read_data(args.adversarial)
        pairs, n_good, types = adversarial_rows(rows)
        forward, backward = pair_probabilities(nli, pairs, Path(args.cache))
        adv_scores = {
            "menli": strategy_scores(forward, backward, formula, direction),
            "bertscore": np.asarray(
                reference_scores(bertscore, pairs, Path(args.score_cache), f"refonly-{Path(args.adversarial).stem}")
            ),
        }

        adversarial = {
            "data": args.adversarial,
            "rows": len(rows),
            "goal": args.adversarial_goal,
            "grid": {
                w: adversarial_accuracy(combined(adv_scores, ranges, "bertscore", w), n_good, types) for w in WEIGHTS
            },
        }  # float keys: JSON writes them as "0.1", like select_grid
    robust = robust_choice(sets["select"], ranges, adversarial["grid"] if adversarial else None, args.adversarial_goal)

    report = []
    for label, weight in variants(best["bertscore"], robust).items():
        report.append(
            {
                "variant": label,
                "weight": weight,
                "chosen": weight == best["bertscore"],
                "robust": weight == robust,
                "select_mean_tau": mean_tau(sets["select"], ranges, "bertscore", weight),
                "report_tau": {
                    s["set"]: tau_like(combined(s["scores"], ranges, "bertscore", weight), s["human"], s["items"])
                    for s in sets["report"]
                },
                "report_mean_tau": mean_tau(sets["report"], ranges, "bertscore", weight),
                "vs_bertscore": versus_bertscore(sets["report"], ranges, "bertscore", weight, args.bootstrap),
                "all_items_tau": tau_like(
                    combined(whole["scores"], ranges, "bertscore", weight), whole["human"], whole["items"]
                ),
                "all_items_vs_bertscore": versus_bertscore([whole], ranges, "bertscore", weight, args.bootstrap),
            }
        )

    if adversarial:
        adversarial["accuracy"] = {row["variant"]: adversarial["grid"][row["weight"]] for row in report}

    result = {
        "mix": args.mix,
        "sets": wanted,
        "split_seed": mix["split_seed"],
        "limit_items": args.limit_items,
        "nli_model": args.nli_model,
        "strategy": f"{formula} {direction}",
        "bertscore": bertscore.signature(),
        "ranges": {name: {"low": r.low, "high": r.high} for name, r in ranges.items()},
        "select_grid": {str(w): v for w, v in grid["bertscore"].items()},
        "weights": list(WEIGHTS),
        "chosen_weight": best["bertscore"],
        "robust_weight": robust,
        "all_items_set": args.all_items_set,
        "report": report,
        "adversarial": adversarial,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.save_stats:
        from menli import MENLIScorer, MixRecipe, fitted_with

        menli_signature = MENLIScorer(args.nli_model, formula, direction).signature()  # the loaded model's hash
        records = fitted_with(menli_signature, bertscore.signature())
        MixRecipe.from_ranges([ranges["menli"], ranges["bertscore"]], records).save(args.save_stats)
    write_document(
        args.name or "menli_bertscore_weight_" + args.nli_model.split(":")[-1].replace("/", "_"), result, markdown
    )


def _boot(b: dict) -> str:
    return f"{b['difference']:+.4f} [{b['ci95'][0]:+.4f}, {b['ci95'][1]:+.4f}] | {b['share_a_not_better']:.3f}"


def markdown(result: dict) -> str:
    sets, whole = result["sets"], result["all_items_set"]
    lines = [
        f"# MENLI ({result['nli_model']}, `{result['strategy']}`) + BERTScore-MiniLM: the weight chosen on the "
        f"select half, reported on the report half (split seed {result['split_seed']})",
        "",
        "| variant | select mean tau | "
        + " | ".join(f"report {s}" for s in sets)
        + " | report mean vs BERTScore [95% CI] | P(not better) | "
        + f"{whole} all items | vs BERTScore [95% CI] | P(not better) | adversarial acc. |",
        "|---|" + "---|" * (len(sets) + 7),  # select mean tau, the sets, two bootstrap pairs, adversarial
    ]
    for row in result["report"]:
        adv = (result["adversarial"] or {}).get("accuracy", {}).get(row["variant"])
        name = f"**{row['variant']}** (chosen)" if row["chosen"] else row["variant"]
        lines.append(
            f"| {name} | {row['select_mean_tau']:.4f} | "
            + " | ".join(f"{row['report_tau'][s]:.4f}" for s in sets)
            + f" | {_boot(row['vs_bertscore'])} | {row['all_items_tau']:.4f} | "
            + f"{_boot(row['all_items_vs_bertscore'])} | "
            + (f"{adv:.3f}" if adv is not None else "-")
            + " |"
        )
    grid = " ".join(f"{w}: {v:.4f}" for w, v in result["select_grid"].items())
    adversarial = result["adversarial"]
    robust = result.get("robust_weight")
    ranges = ", ".join(f"{k} [{v['low']:.4g}, {v['high']:.4g}]" for k, v in result["ranges"].items())
    lines += [
        "",
        f"- Select-half mean tau-like by MENLI weight w: {grid}.",
        f"- Ranges (min-max on the pooled select half, then fixed): {ranges}.",
        *(
            [
                "- Adversarial accuracy by MENLI weight w: "
                + " ".join(f"{w}: {a:.3f}" for w, a in adversarial["grid"].items())
                + ".",
                f"- Robust weight (best select mean tau among weights with adversarial accuracy >= "
                f"{adversarial['goal']:.2f}): " + (f"w = {robust}." if robust is not None else "none reaches it."),
            ]
            if adversarial and "grid" in adversarial
            else []
        ),
        "- vs BERTScore: tau-like(variant) - tau-like(BERTScore, same rows), mean over sets; items resampled "
        "within each set; P(not better) = share of resamples with difference <= 0.",
        f"- {whole} all items = its select and report halves together: the weight was chosen on the select "
        "half (with the other sets), so this column is not held out; the report columns are. Its rows are the "
        "dev mix's (the set's exclude_systems, e.g. TED's human reference ref-A, left out).",
        "- Scores: text-level NLI probabilities per (reference, candidate) pair from the pooling ablation's "
        "cache (pairs over the NLI window truncated), max over references; BERTScore rows from the dev-mix "
        "cache.",
        "- Adversarial: mean preference accuracy over error types, reference-based, with the same ranges."
        if result["adversarial"]
        else "- Adversarial suite not run.",
        f"- BERTScore: `{result['bertscore']}`",
        f"- {result['seconds']:.0f} s; machine {result['machine']}",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
