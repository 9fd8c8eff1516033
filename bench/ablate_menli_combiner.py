"""Which partner should MENLI's combiner take, at which weight? Chosen on the dev mix's select half, reported on
its report half and on the dev adversarial suite.

MENLI's paper adds a similarity metric to NLI because NLI alone is blind to fluency and to small lexical damage.
The candidates here: BERTScore (the paper's choice), chrF, and the causal-LM likelihood ratio `lm-ratio` (a
fluency signal); ``--partners`` adds others, e.g. ``sescore`` (the shipped SEScore default, or ``--checkpoint``).
Each combination is ``w * MinMax(MENLI) + (1 - w) * MinMax(partner)`` with both ranges fitted once on the pooled
select half and then fixed (stored in the JSON), never on the scored set, for w in 0, 0.1, ..., 1. The choice is
the (partner, w) with the best mean tau-like over the mix's sets on the select half; the report half then gets
tau-likes and a paired item bootstrap (items resampled within each set) against BERTScore
with the same encoder, for the chosen combination, MENLI alone and each partner at its own select-best weight.
The MENLI issue judges TED zh-en on all its items, so each row also gets that set on both halves joined (marked as
including the select half the choice was made on; the dev mix leaves ref-A out). ``--save-stats`` writes the
chosen combination's fixed ranges as ``evaluate.py --normalization`` reads them (with the models they were fitted
with), so the same combination can be scored on any data.

    python bench/ablate_menli_combiner.py [--mix devmix/default.yaml] [--cache runs/devmix_cache]
    python bench/ablate_menli_combiner.py --nli-model packaged:nli-mpnet --name menli_combiner_mpnet
    python bench/ablate_menli_combiner.py --partners bertscore,chrf,lm-ratio,sescore --name menli_combiner_sescore \
        --save-stats bench/results/menli_combiner_sescore.stats.json

Scores are cached per row, set and half (``nlgmetrics.scorecache``, the cache ``evaluate.py devmix --cache``
uses), so a rerun is cheap. Cost of a first run on 2 cores: about an hour with nli-minilm (the SEScore partner run
took 4,660 s); a rerun from the cache, seconds. Writes bench/results/<name>.{json,md} (default menli_combiner);
``docs/reproduce_menli.sh`` reads ``menli_combiner_sescore.stats.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO, data_dir, metric, read_data, write_document  # noqa: E402

PARTNERS = ("bertscore", "chrf", "lm-ratio")
WEIGHTS = tuple(round(0.1 * k, 1) for k in range(11))


def reference_scores(scorer, rows: list[dict], cache: Path | None = None, tag: str = "") -> list[float]:
    """One score per judged row against its references only: sources never enter (``lm-ratio`` is meant as a
    fluency signal, not as the source-conditioned likelihood it becomes when given the article or MT source);
    each distinct (hypothesis, references) is scored once, and with ``cache`` read from or added to the score
    cache under ``tag`` (the file ``evaluate.py devmix --cache`` keeps for those rows)."""
    from nlgmetrics.scorecache import cached_row_scores

    return cached_row_scores(scorer, rows, cache, tag, sources=False)


def adversarial_rows(rows: list[dict]) -> tuple[list[dict], int, list]:
    """The adversarial suite as scoring rows: every good candidate, then every bad one, each against its anchor
    reference; returns (rows, number of good rows, error types). Scores split at that number into the two sides
    ``preference_accuracy`` compares."""
    from nlgmetrics.metaeval.adversarial import adversarial_pairs

    anchors, good, bad, types = adversarial_pairs(rows)
    return [{"hyp": h, "refs": [a]} for h, a in zip(good + bad, anchors + anchors)], len(good), types


def adversarial_accuracy(scores, n_good: int, types: list) -> float:
    """Mean preference accuracy over error types of scores laid out as ``adversarial_rows`` returns its rows."""
    from nlgmetrics.metaeval import preference_accuracy

    return preference_accuracy(scores[:n_good], scores[n_good:], types)["mean"]


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


def mean_tau_of(sets: Sequence[dict], combination: Callable[[dict], Sequence[float]]) -> float:
    """Unweighted mean over sets of the WMT20 tau-like of ``combination`` (a set's scores by metric -> one score
    per row): any weighting of stored scores, two parts or more."""
    import numpy as np

    from nlgmetrics.metaeval import tau_like

    return float(np.mean([tau_like(combination(s["scores"]), s["human"], s["items"]) for s in sets]))


def bootstrap_of(sets: Sequence[dict], combination: Callable[[dict], Sequence[float]], resamples: int) -> dict:
    """Paired item bootstrap (items resampled within each set, seed 0) of ``combination``'s mean tau-like minus
    BERTScore's on the same rows."""
    from nlgmetrics.metaeval import paired_bootstrap_tau_like_mix

    rows = [(combination(s["scores"]), s["scores"]["bertscore"], s["human"], s["items"]) for s in sets]
    return paired_bootstrap_tau_like_mix(rows, resamples, 0)


def mean_tau(sets: Sequence[dict], ranges: dict, partner: str, weight: float) -> float:
    """Unweighted mean over sets of the WMT20 tau-like of the combination."""
    return mean_tau_of(sets, lambda scores: combined(scores, ranges, partner, weight))


def versus_bertscore(sets: Sequence[dict], ranges: dict, partner: str, weight: float, resamples: int) -> dict:
    """Paired item bootstrap (items resampled within each set, seed 0) of the combination's mean tau-like minus
    BERTScore's on the same rows."""
    return bootstrap_of(sets, lambda scores: combined(scores, ranges, partner, weight), resamples)


def choose(
    sets: Sequence[dict], ranges: dict, partners: Sequence[str] = PARTNERS, weights: Sequence[float] = WEIGHTS
) -> tuple[dict, dict, str]:
    """(grid of mean tau-like per partner and weight, best weight per partner, best partner) on ``sets``.

    Ties go to the weight nearer 0.5, then to the earlier partner: a tie is no evidence for an extreme.
    """
    grid = {p: {w: mean_tau(sets, ranges, p, w) for w in weights} for p in partners}
    best = {p: max(weights, key=lambda w: (grid[p][w], -abs(w - 0.5))) for p in partners}
    chosen = max(partners, key=lambda p: grid[p][best[p]])
    return grid, best, chosen


def check_all_items_set(mix_path: str, name: str) -> str | None:
    """An error message when ``name`` is not a set of the mix (checked before anything is scored), else None."""
    from nlgmetrics.metaeval.devmix import load_mix

    names = [entry["name"] for entry in load_mix(mix_path)["sets"]]
    return (
        None if not name or name in names else f"--all-items-set {name}: no such set in {mix_path} ({', '.join(names)})"
    )


def load_scores(
    mix_path: str,
    names: Sequence[str],
    nli_model: str,
    checkpoint: Sequence[str] | None,
    cache: Path,
    limit_items: int | None,
    adversarial: str,
) -> dict:
    """Every metric's reference-only scores on the mix's select and report halves (and the adversarial suite's
    rows), read from or written to the dev-mix cache: what the combiner and the fluency-term ablation compute from.

    Returns ``halves`` ({half: [{set, human, items, scores: {name: array}}]}), ``scorers``, ``mix``,
    ``nli_model``, and, when ``adversarial`` names a suite, ``adversarial`` = (scores by name, number of good rows,
    error types) and ``adversarial_rows``.
    """
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("NLGMETRICS_THREADS", "2")))
    from nlgmetrics.metaeval.devmix import load_mix, set_rows

    mix = load_mix(mix_path)
    # one setting for every metric, as one command line's flags: MiniLM is the published rows' BERTScore encoder
    settings = {
        "nli_model": nli_model,
        "encoder": "packaged:minilm",
        "progress": False,
        **({"checkpoint": list(checkpoint)} if checkpoint else {}),
    }
    scorers = {name: metric(name, **settings) for name in names}
    root = data_dir()

    def scores_of(rows: list[dict], tag: str, what: str) -> dict:
        out = {}
        for name in names:
            t0 = time.perf_counter()
            out[name] = np.asarray(reference_scores(scorers[name], rows, cache, tag))
            print(f"{what} {name}: {len(rows)} rows, {time.perf_counter() - t0:.0f} s", flush=True)
        return out

    halves: dict[str, list[dict]] = {}
    for half in ("select", "report"):
        halves[half] = []
        for entry in mix["sets"]:
            rows = set_rows(entry, root, half, int(mix["split_seed"]), limit_items)
            tag = f"refonly-{Path(entry['path']).stem}-{half}-{mix['split_seed']}"
            halves[half].append(
                {
                    "set": entry["name"],
                    "human": [float(r["scores"][entry["human"]]) for r in rows],
                    "items": [(r.get("lp"), r.get("item_id")) for r in rows],
                    "scores": scores_of(rows, tag, f"{half} {entry['name']}"),
                }
            )
    out = {"halves": halves, "scorers": scorers, "mix": mix, "nli_model": nli_model}
    if adversarial:
        rows = read_data(adversarial)
        pairs, n_good, types = adversarial_rows(rows)
        out["adversarial"] = (scores_of(pairs, f"refonly-{Path(adversarial).stem}", "adversarial"), n_good, types)
        out["adversarial_rows"] = len(rows)
    return out


def load_checked(parser: argparse.ArgumentParser, args: argparse.Namespace, names: Sequence[str]) -> dict:
    """``load_scores`` for an ablation's parsed arguments (--mix, --cache, --nli-model, --checkpoint,
    --limit-items, --adversarial), after ``check_all_items_set`` (a usage error before anything is scored)."""
    bad_set = check_all_items_set(args.mix, args.all_items_set)
    if bad_set:
        parser.error(bad_set)
    return load_scores(
        args.mix, names, args.nli_model, args.checkpoint, Path(args.cache), args.limit_items, args.adversarial
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--cache", default=str(REPO / "runs" / "devmix_cache"))
    parser.add_argument(
        "--adversarial",
        default="adversarial/adv_menli_wmt20_de.jsonl",
        help="adversarial suite under the data folder ('' to skip)",
    )
    parser.add_argument("--limit-items", type=int, help="at most N items per set and half (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--name", default="menli_combiner", help="result file stem under bench/results")
    parser.add_argument(
        "--partners",
        default=",".join(PARTNERS),
        help="comma-separated partner metrics (evaluate.py names); bertscore must be among them "
        "(the report half's baseline)",
    )
    parser.add_argument("--checkpoint", nargs="+", help="SEScore checkpoint folder(s) of the sescore partner")
    parser.add_argument(
        "--nli-model",
        default="packaged:nli-minilm",
        help="MENLI's NLI role value (default: nli-minilm, the published table's; the toolkit's "
        "default is nli-mpnet); scores are cached by signature, so another model never reads "
        "another's cached scores",
    )
    parser.add_argument(
        "--all-items-set", default="ted_zhen", help="the set also reported on all its items ('' for none)"
    )
    parser.add_argument(
        "--save-stats",
        metavar="JSON",
        help="also write the chosen combination's fixed ranges as evaluate.py --normalization reads them",
    )
    args = parser.parse_args()

    partners = tuple(p for p in args.partners.split(",") if p)
    if "bertscore" not in partners or len(set(partners)) != len(partners):
        raise SystemExit(
            f"--partners {args.partners!r}: distinct names, bertscore among them (the report half's baseline)"
        )
    names = ("menli", *partners)
    started = time.perf_counter()
    scored = load_checked(parser, args, names)
    halves, scorers, mix = scored["halves"], scored["scorers"], scored["mix"]
    from nlgmetrics.metaeval import tau_like

    ranges = fit_ranges(halves["select"], names)
    grid, best_w, chosen = choose(halves["select"], ranges, partners)
    whole = all_items(halves, args.all_items_set) if args.all_items_set else None

    candidates = {"menli": ("bertscore", 1.0), "menli+bertscore@0.2 (paper-style default)": ("bertscore", 0.2)}
    for partner in partners:
        candidates[f"{partner} alone"] = (partner, 0.0)
        if 0.0 < best_w[partner] < 1.0 and (partner, best_w[partner]) not in candidates.values():
            candidates[f"menli+{partner}@{best_w[partner]}"] = (partner, best_w[partner])

    report_rows = []
    for label, (partner, w) in candidates.items():
        if whole is not None:
            every = {
                "all_items_tau": tau_like(
                    combined(whole["scores"], ranges, partner, w), whole["human"], whole["items"]
                ),
                "all_items_vs_bertscore": versus_bertscore([whole], ranges, partner, w, args.bootstrap),
            }
        else:
            every = {}
        report_rows.append(
            {
                "variant": label,
                "partner": partner,
                "weight": w,
                "select_mean_tau": mean_tau(halves["select"], ranges, partner, w),
                "report_tau": {
                    s["set"]: tau_like(combined(s["scores"], ranges, partner, w), s["human"], s["items"])
                    for s in halves["report"]
                },
                "report_mean_tau": mean_tau(halves["report"], ranges, partner, w),
                "vs_bertscore": versus_bertscore(halves["report"], ranges, partner, w, args.bootstrap),
                "chosen": w == best_w[chosen] and (partner == chosen or w == 1.0),
                **every,
            }
        )

    adversarial = None
    if args.adversarial:
        both, n_good, types = scored["adversarial"]
        adversarial = {"data": args.adversarial, "rows": scored["adversarial_rows"], "accuracy": {}}
        for row in report_rows:
            scores = combined(both, ranges, row["partner"], row["weight"])
            adversarial["accuracy"][row["variant"]] = adversarial_accuracy(scores, n_good, types)

    result = {
        "mix": args.mix,
        "split_seed": mix["split_seed"],
        "limit_items": args.limit_items,
        "nli_model": scored["nli_model"],
        "signatures": {name: scorers[name].signature() for name in names},
        "ranges": {name: {"low": r.low, "high": r.high} for name, r in ranges.items()},
        "select_grid": {p: {str(w): v for w, v in g.items()} for p, g in grid.items()},
        "chosen": {"partner": chosen, "weight": best_w[chosen]},
        "all_items_set": args.all_items_set or None,
        "report": report_rows,
        "adversarial": adversarial,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.save_stats:
        from menli import MixRecipe, fitted_with

        records = fitted_with(scorers["menli"].signature(), scorers[chosen].signature())
        MixRecipe.from_ranges([ranges["menli"], ranges[chosen]], records).save(args.save_stats)
        result["saved_stats"] = args.save_stats
    write_document(args.name, result, markdown)


def markdown(result: dict) -> str:
    sets = list(result["report"][0]["report_tau"])
    first = next(iter(result["select_grid"].values()))
    whole = result.get("all_items_set")  # absent in files written before the column existed
    lines = [
        f"# MENLI's combiner partner and weight: chosen on the select half, reported on the report half "
        f"(split seed {result['split_seed']}, NLI model {result['nli_model']})",
        "",
        "| variant | select mean tau | "
        + " | ".join(f"report {s}" for s in sets)
        + " | report mean | vs BERTScore [95% CI] | P(not better) | adversarial acc. |"
        + (f" {whole}, all items* | vs BERTScore [95% CI]* |" if whole else ""),
        "|---|---|" + "---|" * len(sets) + "---|---|---|---|" + ("---|---|" if whole else ""),
    ]

    def interval(boot: dict) -> str:
        return f"{boot['difference']:+.4f} [{boot['ci95'][0]:+.4f}, {boot['ci95'][1]:+.4f}]"

    for row in result["report"]:
        boot = row["vs_bertscore"]
        adv = (result["adversarial"] or {}).get("accuracy", {}).get(row["variant"])
        name = f"**{row['variant']}** (chosen)" if row["chosen"] else row["variant"]
        lines.append(
            f"| {name} | {row['select_mean_tau']:.4f} | "
            + " | ".join(f"{row['report_tau'][s]:.4f}" for s in sets)
            + f" | {row['report_mean_tau']:.4f} | {interval(boot)} | {boot['share_a_not_better']:.3f} | "
            + (f"{adv:.3f}" if adv is not None else "-")
            + " |"
            + (f" {row['all_items_tau']:.4f} | {interval(row['all_items_vs_bertscore'])} |" if whole else "")
        )
    lines += [
        "",
        "Select-half mean tau-like by weight w of MENLI (w = 0: the partner alone, w = 1: MENLI alone):",
        "",
        "| partner | " + " | ".join(first) + " |",
        "|---|" + "---|" * len(first),
    ]
    for partner, grid in result["select_grid"].items():
        lines.append(f"| {partner} | " + " | ".join(f"{v:.4f}" for v in grid.values()) + " |")
    lines += [
        "",
        "- Metrics: " + "; ".join(f"`{s}`" for s in result["signatures"].values()),
        "- Ranges (min-max, pooled select half, then fixed): "
        + ", ".join(f"{n} [{r['low']:.4g}, {r['high']:.4g}]" for n, r in result["ranges"].items()),
        "- vs BERTScore: mean over sets of tau-like(variant) - tau-like(BERTScore, same encoder) on the report "
        "half; items resampled within each set; P(not better) = share of resamples with difference <= 0.",
        "- Adversarial: mean preference accuracy over error types, reference-based, with the same fixed ranges."
        if result["adversarial"]
        else "- Adversarial suite not run.",
        *(
            [
                f"- *{whole} on both halves joined: includes the select half the choice was made on, so it is not a "
                "held-out number; the same paired item bootstrap against BERTScore."
            ]
            if whole
            else []
        ),
        f"- {result['seconds']:.0f} s; machine {result['machine']}",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
