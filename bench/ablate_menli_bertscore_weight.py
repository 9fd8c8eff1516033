"""Does MENLI with the default NLI model, combined with BERTScore, rank MT candidates better than BERTScore alone?

Kept as the recipe of a shipped file: its ``--save-stats`` wrote the packaged
``nlgmetrics/configs/menli/nli-mpnet+bertscore-minilm.json`` ranges (``tests/test_bench_menli.py`` checks that they
are the ranges of ``bench/results/menli_bertscore_weight_nli-mpnet.json``), and no other script rebuilds them.

The pooling ablation (``ablate_menli_pooling.py``, removed after its run, in git history at commit 6764470) showed
that no pooling of nli-mpnet's entailment probabilities alone comes near BERTScore on TED zh-en. MENLI's paper
never uses NLI alone for MT ranking: it combines it with a similarity metric, ``w * MinMax(NLI) + (1 - w) *
MinMax(BERTScore)``. The combiner table (``ablate_menli_combiner.py``, removed likewise) was fitted on nli-minilm;
this redoes the BERTScore weight for the default model on the same short-text sets and from the same caches (NLI
pair probabilities, BERTScore row scores), so a rerun costs no model pass beyond the adversarial suite's BERTScore.
Ranges are fitted once on the pooled select half and fixed; the weight is the best mean tau-like over the sets on
the select half (ties to the weight nearer 0.5); the report half gets a paired item bootstrap against BERTScore
with the same encoder. TED zh-en on all its items (the MENLI issue's criterion) is shown too, marked as including
the select half the weight was chosen on.

A second rule, fixed before its stress rows were read, picks the weight a user who wants MENLI's robustness would
take: the best select-half mean tau-like among the weights whose dev adversarial accuracy is at least
``--adversarial-goal`` (the MENLI issue's 0.70). The blind-spot reports of that combination read its fixed ranges
from the result file.

    python -m bench.ablate_menli_bertscore_weight [--nli-model packaged:nli-mpnet] [--sets ted_zhen,webnlg] \
        [--save-stats FILE.json]

Cost: about an hour on 2 cores with empty caches (the NLI passes over both halves and the adversarial suite),
seconds once they are filled. Writes bench/results/menli_bertscore_weight_<model>.{json,md};
``docs/reproduce_menli.sh`` reads that file.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Sequence

from bench.harness import REPO, data_dir, metric, read_data, write_document

NAMES = ("menli", "bertscore")
WEIGHTS = tuple(round(0.1 * k, 1) for k in range(11))


# --- scores: NLI pair probabilities and BERTScore rows, from their caches -------------------------------------


def reference_scores(scorer, rows: list[dict], cache: Path | None = None, tag: str = "") -> list[float]:
    """One score per judged row against its references only (sources never enter); each distinct (hypothesis,
    references) is scored once, and with ``cache`` read from or added to the score cache under ``tag`` (the file
    ``evaluate.py devmix --cache`` keeps for those rows)."""
    from nlgmetrics.scorecache import cached_row_scores

    return cached_row_scores(scorer, rows, cache, tag, sources=False)


def pair_probabilities(nli, rows: Sequence[dict], cache: Path) -> tuple[list, list]:
    """Per row, the [R, 3] forward (reference premise) and backward (candidate premise) probabilities, one per
    reference; each distinct pair is scored once and cached on disk under the model's hash."""
    from nlgmetrics.nli.distill import teacher_probabilities

    pairs = []
    for row in rows:
        for ref in row["refs"]:
            pairs.append({"premise": ref, "hypothesis": row["hyp"]})
            pairs.append({"premise": row["hyp"], "hypothesis": ref})
    probs = teacher_probabilities(nli, pairs, cache, desc="NLI pairs")
    forward, backward, start = [], [], 0
    for row in rows:
        block = probs[start : start + 2 * len(row["refs"])].astype("float64")
        forward.append(block[0::2])
        backward.append(block[1::2])
        start += 2 * len(row["refs"])
    return forward, backward


def strategy_scores(forward: Sequence, backward: Sequence, formula: str, direction: str):
    """MENLI's score per row for one strategy: pooled per reference, then the max over references (the
    toolkit's default multi-reference aggregation, ``menli.functional.aggregate_references``)."""
    import numpy as np

    from menli.functional import aggregate_references
    from menli.pooling import pool

    owner = np.repeat(np.arange(len(forward)), [len(f) for f in forward])
    pair_scores = pool(formula, direction, np.concatenate(forward), np.concatenate(backward))
    return aggregate_references(pair_scores, owner, len(forward), "max")


def over_window(nli, rows: Sequence[dict]) -> int:
    """How many (reference, candidate) pairs are longer than the NLI window (there, MENLI's default granularity
    would pool sentences instead of the text-level probabilities used here)."""
    from menli.granularity import pair_lengths

    refs = [ref for row in rows for ref in row["refs"]]
    hyps = [row["hyp"] for row in rows for _ in row["refs"]]
    return int((pair_lengths(nli, refs, hyps) > nli.max_length).sum()) if refs else 0


def load_halves(
    mix: dict, wanted: Sequence[str], nli, bertscore, cache: Path, score_cache: Path, limit_items: int | None = None
) -> dict[str, list[dict]]:
    """Per half (select, report) and set: the judged rows' NLI probabilities both ways (pair cache), BERTScore row
    scores (score cache), human scores and item keys; what every combination is computed from."""
    import numpy as np

    from nlgmetrics.metaeval.devmix import set_rows

    entries = {e["name"]: e for e in mix["sets"]}
    halves: dict[str, list[dict]] = {}
    for half in ("select", "report"):
        halves[half] = []
        for name in wanted:
            rows = set_rows(entries[name], data_dir(), half, int(mix["split_seed"]), limit_items)
            t0 = time.perf_counter()
            forward, backward = pair_probabilities(nli, rows, cache)
            tag = f"refonly-{Path(entries[name]['path']).stem}-{half}-{mix['split_seed']}"
            bert = np.asarray(reference_scores(bertscore, rows, score_cache, tag))
            print(f"{half} {name}: {len(rows)} rows, {time.perf_counter() - t0:.0f} s", flush=True)
            halves[half].append(
                {
                    "set": name,
                    "rows": len(rows),
                    "over_window": over_window(nli, rows),
                    "human": [float(r["scores"][entries[name]["human"]]) for r in rows],
                    "items": [(r.get("lp"), r.get("item_id")) for r in rows],
                    "forward": forward,
                    "backward": backward,
                    "bertscore": bert,
                }
            )
    return halves


def adversarial_rows(rows: list[dict]) -> tuple[list[dict], int, list]:
    """The adversarial suite as scoring rows: every good candidate, then every bad one, each against its anchor
    reference; returns (rows, number of good rows, error types)."""
    from nlgmetrics.metaeval.adversarial import adversarial_pairs

    anchors, good, bad, types = adversarial_pairs(rows)
    return [{"hyp": h, "refs": [a]} for h, a in zip(good + bad, anchors + anchors)], len(good), types


def adversarial_accuracy(scores, n_good: int, types: list) -> float:
    """Mean preference accuracy over error types of scores laid out as ``adversarial_rows`` returns its rows."""
    from nlgmetrics.metaeval import preference_accuracy

    return preference_accuracy(scores[:n_good], scores[n_good:], types)["mean"]


# --- the combination and its choice ---------------------------------------------------------------------------


def meets_goal(accuracy: float, goal: float) -> bool:
    """Whether an adversarial accuracy reaches ``goal``. Accuracies are means of per-type shares, so one that is
    exactly the goal can come out a rounding step below it (0.7 as 0.6999999999999998); that still counts."""
    return accuracy >= goal - 1e-9


def fit_ranges(sets: Sequence[dict], names: Sequence[str]) -> dict:
    """One fixed min-max range per metric, fitted on the rows of ``sets`` pooled (the select half)."""
    import numpy as np

    from menli import MinMax

    return {name: MinMax.fit(np.concatenate([s["scores"][name] for s in sets])) for name in names}


def all_items(sets: dict[str, list[dict]], name: str) -> dict:
    """One set's select and report halves joined (disjoint items): the set on all its items."""
    import numpy as np

    parts = [s for half in ("select", "report") for s in sets[half] if s["set"] == name]
    if not parts:
        raise ValueError(f"no set named {name!r} in the halves")
    return {
        "set": name,
        "human": [h for p in parts for h in p["human"]],
        "items": [i for p in parts for i in p["items"]],
        "scores": {k: np.concatenate([p["scores"][k] for p in parts]) for k in parts[0]["scores"]},
    }


def combined(scores: dict, ranges: dict, partner: str, weight: float):
    """MENLI's combination of stored scores with the fixed ranges: ``weight * MENLI + (1 - weight) * partner``, each
    min-max normalised (``menli.mix`` with ``menli.pair_weights``, what ``menli+<partner> --weight`` scores)."""
    from menli import mix, pair_weights

    return mix([scores["menli"], scores[partner]], pair_weights(weight), [ranges["menli"], ranges[partner]])


def mean_tau(sets: Sequence[dict], ranges: dict, partner: str, weight: float) -> float:
    """Unweighted mean over sets of the WMT20 tau-like of the combination."""
    import numpy as np

    from nlgmetrics.metaeval import tau_like

    return float(
        np.mean([tau_like(combined(s["scores"], ranges, partner, weight), s["human"], s["items"]) for s in sets])
    )


def versus_bertscore(sets: Sequence[dict], ranges: dict, partner: str, weight: float, resamples: int) -> dict:
    """Paired item bootstrap (items resampled within each set, seed 0) of the combination's mean tau-like minus
    BERTScore's on the same rows."""
    from nlgmetrics.metaeval import paired_bootstrap_tau_like_mix

    rows = [
        (combined(s["scores"], ranges, partner, weight), s["scores"]["bertscore"], s["human"], s["items"]) for s in sets
    ]
    return paired_bootstrap_tau_like_mix(rows, resamples, 0)


def choose(
    sets: Sequence[dict], ranges: dict, partners: Sequence[str] = ("bertscore",), weights: Sequence[float] = WEIGHTS
) -> tuple[dict, dict, str]:
    """(grid of mean tau-like per partner and weight, best weight per partner, best partner) on ``sets``.

    Ties go to the weight nearer 0.5, then to the earlier partner: a tie is no evidence for an extreme.
    """
    grid = {p: {w: mean_tau(sets, ranges, p, w) for w in weights} for p in partners}
    best = {p: max(weights, key=lambda w: (grid[p][w], -abs(w - 0.5))) for p in partners}
    chosen = max(partners, key=lambda p: grid[p][best[p]])
    return grid, best, chosen


def check_sets(parser, mix: dict, sets: str) -> list[str]:
    """The comma-separated set names, each one of the mix's (else a parser error naming the mix's sets)."""
    wanted = [s.strip() for s in sets.split(",") if s.strip()]
    names = [e["name"] for e in mix["sets"]]
    unknown = [s for s in wanted if s not in names]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; the mix has {', '.join(names)}")
    return wanted


def add_set_options(parser: argparse.ArgumentParser) -> None:
    """The options that read the short-text sets from the pair and score caches."""
    from nlgmetrics.nli import DEFAULT_NLI

    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--sets", default="ted_zhen,webnlg", help="comma-separated set names of the mix")
    parser.add_argument("--nli-model", default=DEFAULT_NLI)
    parser.add_argument("--cache", default=str(REPO / "runs" / "nli_pair_cache"))
    parser.add_argument(
        "--score-cache",
        default=str(REPO / "runs" / "devmix_cache"),
        help="BERTScore row scores (the cache evaluate.py devmix --cache uses)",
    )
    parser.add_argument(
        "--adversarial",
        default="adversarial/adv_menli_wmt20_de.jsonl",
        help="adversarial suite under the data folder ('' to skip)",
    )
    parser.add_argument("--limit-items", type=int, help="at most N items per set and half (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)


def combiner_sets(halves: dict[str, list[dict]], formula: str, direction: str) -> dict[str, list[dict]]:
    """``load_halves``'s halves in the combination's shape: per set, the MENLI and BERTScore score arrays."""
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
