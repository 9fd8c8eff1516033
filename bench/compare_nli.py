"""NLI roles as MENLI metrics on the adversarial suite, side by side, with a paired bootstrap against the first.

Two protocols of ``adversarial/adv_menli_wmt20_de.jsonl``: reference-based (English reference anchors the
paraphrase and the one-error candidate) and reference-free (the German *source* anchors them: only a
multilingual NLI model can read it). Each row is a win when the paraphrase scores strictly higher. Rows are
resampled within their error type, so the statistic stays the protocol's mean over types; both models see the
same resample, and the table gives the 95% interval of the difference and the share of resamples where a model is
not better than the first one.

    python -m bench.compare_nli --models packaged:nli-minilm,packaged:nli-me5 [--limit N]
        # ~15 min per model on 2 cores (2 x 2,400 rows, two NLI passes each); -> nli_adversarial{,_by_type}.md
"""

from __future__ import annotations

import argparse
import time
from typing import Sequence

import numpy as np

from bench.harness import read_data, write_results
from nlgmetrics.modelroles.precision import PRECISIONS, forward_precision

PROTOCOLS = {"reference-based": False, "reference-free (German source)": True}


def stratified_bootstrap_difference(
    wins_a: np.ndarray, wins_b: np.ndarray, types: Sequence[str], resamples: int = 1000, seed: int = 0
) -> dict[str, float]:
    """mean-over-types accuracy of A minus B on the same row resamples (rows drawn with replacement inside each
    type, so each type keeps its size): 95% interval and the share of resamples where A is not better."""
    wins_a, wins_b = np.asarray(wins_a, float), np.asarray(wins_b, float)
    types = np.asarray(types)
    if not (len(wins_a) == len(wins_b) == len(types)) or len(types) == 0:
        raise ValueError(f"need equal, non-empty lengths; got {len(wins_a)}, {len(wins_b)}, {len(types)}")
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(types == t) for t in np.unique(types)]
    win_gap = wins_a - wins_b

    def type_mean(picks: list[np.ndarray]) -> float:  # the protocol's statistic: unweighted mean over types
        return float(np.mean([win_gap[pick].mean() for pick in picks]))

    diffs = np.array(
        [type_mean([index[rng.integers(0, len(index), len(index))] for index in groups]) for _ in range(resamples)]
    )
    low, high = np.percentile(diffs, [2.5, 97.5])
    return {
        "difference": type_mean(groups),
        "ci_low": float(low),
        "ci_high": float(high),
        "not_better": float(np.mean(diffs <= 0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        default="packaged:nli-minilm,packaged:nli-me5",
        help="comma-separated NLI role values; the first is the baseline",
    )
    parser.add_argument("--limit", type=int, help="first N rows (smoke runs)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--name", default="nli_adversarial", help="results file stem in bench/results")
    parser.add_argument("--precision", default="float32", choices=PRECISIONS, help="the NLI forward pass")
    parser.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help=f"comma-separated, of: {', '.join(PROTOCOLS)} (default: both)",
    )
    args = parser.parse_args()

    from menli import menli_scores
    from nlgmetrics.metaeval import adversarial_scores, preference_accuracy
    from nlgmetrics.nli import load_nli

    path = "adversarial/adv_menli_wmt20_de.jsonl"
    rows = read_data(path)[: args.limit]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if len(set(models)) != len(models) or len(models) < 2:
        parser.error(f"--models needs two or more distinct NLI role values, got {models}")
    protocols = {p: PROTOCOLS[p] for p in (p.strip() for p in args.protocols.split(",")) if p in PROTOCOLS}
    unknown = [p for p in args.protocols.split(",") if p.strip() and p.strip() not in PROTOCOLS]
    if unknown or not protocols:
        parser.error(f"--protocols: unknown {unknown or args.protocols!r}; known: {', '.join(PROTOCOLS)}")
    scored: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, list[str]]] = {}
    seconds: dict[tuple[str, str], float] = {}
    for model in models:
        nli = load_nli(model, "cpu")

        def score_against(hyps: list[str], anchors: list[str]) -> np.ndarray:
            with forward_precision(nli.device, args.precision):
                return menli_scores(nli, hyps, anchors, "e", "<->", batch_size=args.batch_size, progress=True)

        for protocol, reference_free in protocols.items():
            started = time.perf_counter()
            scored[model, protocol] = adversarial_scores(score_against, rows, reference_free)
            seconds[model, protocol] = time.perf_counter() - started

    out, by_type = [], []
    for protocol in protocols:
        good, bad, types = scored[models[0], protocol]
        base = good > bad
        for model in models:
            good, bad, types = scored[model, protocol]
            accuracy = preference_accuracy(good, bad, types)
            by_type.append({"protocol": protocol, "model": model, **accuracy["per_type"]})
            row = {
                "protocol": protocol,
                "model": model,
                "rows": len(types),
                "accuracy": accuracy["mean"],
                "seconds": seconds[model, protocol],
            }
            if model != models[0]:
                boot = stratified_bootstrap_difference(good > bad, base, types, args.resamples)
                row.update(
                    {
                        "diff_to_first": boot["difference"],
                        "ci95": f"[{boot['ci_low']:+.3f}, {boot['ci_high']:+.3f}]",
                        "not_better": boot["not_better"],
                    }
                )
            out.append(row)
    write_results(
        args.name,
        {
            "models": models,
            "data": str(path),
            "limit": args.limit,
            "resamples": args.resamples,
            "menli": "formula e, direction <->",
            "precision": args.precision,
        },
        out,
        ["protocol", "model", "rows", "accuracy", "diff_to_first", "ci95", "not_better", "seconds"],
        "MENLI (e, <->) adversarial preference accuracy by NLI model (mean over error types)",
        [
            f"Rows resampled within error type ({args.resamples} resamples, seed 0); not_better = share of "
            f"resamples where the model's mean accuracy is not above {models[0]}'s.",
            "Reference-free rows anchor on the German source: an English-only NLI model reads it as noise.",
        ],
    )
    type_names = sorted({t for row in by_type for t in row} - {"protocol", "model"})
    write_results(
        f"{args.name}_by_type",
        {"models": models, "data": str(path), "limit": args.limit},
        by_type,
        ["protocol", "model", *type_names],
        "The same runs by error type: share of rows where the paraphrase scores strictly higher",
        ["Where an NLI model is blind shows here: the mean in the first table is the unweighted mean of a row."],
    )


if __name__ == "__main__":
    main()
