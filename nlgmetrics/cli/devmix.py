"""``evaluate.py devmix``: score a metric (and a baseline) on one half of every set of the dev mix.

    python evaluate.py devmix --metric sescore --versus bertscore --half select [--mix configs/devmix/default.yaml]

Recipes and checkpoints are chosen with ``--half select`` and the numbers that are reported come from
``--half report``; the item split is a fixed seeded hash (``nlgmetrics.metaeval.split``). Every set gets the
WMT20 tau-like and system Pearson of both metrics and a paired item bootstrap of the tau-like difference; the mix
row is the mean difference over sets with a bootstrap that resamples items inside each set. ``--cache DIR`` keeps
each set's scores, so an interrupted run resumes and a second comparison against the same metric costs nothing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Sequence

def add_parser(sub: Any, add_metric_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("devmix", help="tau-like on the select or report half of every dev set, with paired "
                                      "bootstrap intervals against --versus")
    p.add_argument("--half", required=True, choices=("select", "report"),
                   help="select: for choosing recipes and checkpoints; report: for the numbers you publish")
    p.add_argument("--mix", default="devmix/default.yaml", help="YAML listing the judged sets (packaged name or path)")
    p.add_argument("--sets", help="comma-separated subset of the mix's set names")
    p.add_argument("--data-root", help="folder the mix's relative paths start from (default $NLGMETRICS_DATA or "
                                       "../shared/data)")
    p.add_argument("--versus", default="bertscore", help="baseline metric scored on the same rows")
    p.add_argument("--versus-encoder", default=None,
                   help="encoder role value for the baseline (default: --encoder); compares encoders, e.g. "
                        "--metric bertscore --encoder packaged:me5-small --versus bertscore "
                        "--versus-encoder packaged:minilm")
    p.add_argument("--versus-precision", default=None, choices=("float32", "bfloat16"),
                   help="forward-pass precision of the baseline (default: --precision); compares precisions, e.g. "
                        "--metric sescore --precision bfloat16 --versus sescore --versus-precision float32")
    p.add_argument("--limit-items", type=int, help="at most N items of each set's half (cheap trial runs)")
    p.add_argument("--bootstrap", type=int, default=1000, help="item resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--cache", help="folder keeping each set's scores (resume, reuse across comparisons)")
    p.add_argument("--markdown", help="also write the table as Markdown here")
    add_metric_options(p)


def _cached_scores(scorer: Any, rows: Sequence[dict], row_scores: Callable, cache: Path | None,
                   tag: str) -> list[float]:
    """Row scores of ``scorer``, read from or written to ``cache`` under a key of its signature and the rows."""
    if cache is None:
        return row_scores(scorer, rows)
    from nlgmetrics.metaeval import atomic_write

    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row.get("hyp"), row.get("refs"), row.get("src")], ensure_ascii=False).encode())
    key = hashlib.sha256(f"{scorer.signature()}\x1f{digest.hexdigest()}".encode()).hexdigest()[:20]
    path = cache / f"{tag}-{key}.json"
    if path.is_file():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("signature") == scorer.signature() and len(stored.get("scores", [])) == len(rows):
            return [float(s) for s in stored["scores"]]
    scores = row_scores(scorer, rows)
    with atomic_write(path) as handle:
        json.dump({"signature": scorer.signature(), "rows": len(rows), "scores": scores}, handle)
    return scores


def _uses_encoder(metric: str) -> bool:
    """Whether --encoder changes this metric (bertscore, cosine, or a menli+ combination with one of them)."""
    return any(part in ("bertscore", "cosine") for part in metric.split("+"))


def cmd_devmix(args: argparse.Namespace, build_scorer: Callable, row_scores: Callable) -> dict:
    from nlgmetrics.metaeval import (
        InputError, atomic_write, paired_bootstrap_tau_like, paired_bootstrap_tau_like_mix, system_pearson,
        tau_like_ties,
    )
    from nlgmetrics.metaeval.devmix import load_mix, set_rows
    from nlgmetrics.resources import data_root

    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    if args.limit_items is not None and args.limit_items < 1:
        raise InputError("--limit-items must be a positive number of items")
    if args.versus_encoder and not _uses_encoder(args.versus):
        raise InputError(f"--versus-encoder changes only bertscore/cosine baselines; --versus {args.versus} has no "
                         f"encoder")
    mix = load_mix(args.mix)
    entries = mix["sets"]
    if args.sets:
        wanted = [n for n in args.sets.split(",") if n]
        known = {e["name"]: e for e in entries}
        missing = [n for n in wanted if n not in known]
        if missing:
            raise InputError(f"unknown set(s) {', '.join(missing)}; the mix has {', '.join(known)}")
        entries = [known[n] for n in wanted]
    try:
        root = data_root(args.data_root)
    except FileNotFoundError as error:
        raise InputError(str(error)) from error
    cache = Path(args.cache) if args.cache else None
    args.reference_free_scoring = False
    scorer = build_scorer(args.metric, args)
    versus_args = argparse.Namespace(**vars(args))
    if args.versus_encoder:
        versus_args.encoder = args.versus_encoder
    if args.versus_precision:
        versus_args.precision = args.versus_precision
    other = build_scorer(args.versus, versus_args)
    results, mix_sets = [], []
    for entry in entries:
        rows = set_rows(entry, root, args.half, int(mix["split_seed"]), args.limit_items)
        tag = f"{Path(entry['path']).stem}-{args.half}-{mix['split_seed']}"  # sets sharing a file share scores
        a = _cached_scores(scorer, rows, row_scores, cache, tag)
        b = _cached_scores(other, rows, row_scores, cache, tag)
        human = [float(r["scores"][entry["human"]]) for r in rows]
        items = [(r.get("lp"), r.get("item_id")) for r in rows]
        systems = [r.get("system") for r in rows]
        boot = paired_bootstrap_tau_like(a, b, human, items, args.bootstrap, args.seed)
        ties_a, ties_b = tau_like_ties(a, human, items), tau_like_ties(b, human, items)
        results.append({"set": entry["name"], "human": entry["human"], "rows": len(rows), **boot,
                        "system_pearson_a": system_pearson(a, human, systems),
                        "system_pearson_b": system_pearson(b, human, systems),
                        "judged_pairs": ties_a["judged_pairs"], "metric_ties_a": ties_a["metric_ties"],
                        "metric_ties_b": ties_b["metric_ties"]})
        mix_sets.append((a, b, human, items))
    pooled = paired_bootstrap_tau_like_mix(mix_sets, args.bootstrap, args.seed)
    label_a, label_b = args.metric, args.versus
    if args.versus_encoder and args.versus_encoder != args.encoder:  # two encoders: say which side has which
        label_b = f"{args.versus} ({args.versus_encoder})"
        label_a = f"{args.metric} ({args.encoder})" if _uses_encoder(args.metric) else args.metric
    if args.versus_precision and args.versus_precision != args.precision:  # two precisions: name both
        label_a, label_b = f"{label_a} {args.precision}", f"{label_b} {args.versus_precision}"
    result = {"metric": args.metric, "versus": args.versus, "label_a": label_a, "label_b": label_b,
              "signature": scorer.signature(),
              "versus_signature": other.signature(), "half": args.half, "split_seed": mix["split_seed"],
              "mix": str(args.mix), "sets": results, "mean": pooled}
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(markdown(result))
    return result


def markdown(result: dict) -> str:
    """One row per set and a mean row: both tau-likes, the difference with its 95% interval, P(not better)."""
    a, b = result.get("label_a", result["metric"]), result.get("label_b", result["versus"])
    lines = [f"Dev mix, **{result['half']}** half (split seed {result['split_seed']}): `{a}` vs `{b}`", "",
             f"| set | rows | items | tau-like {a} | tau-like {b} | difference [95% CI] | P(not better) "
             f"| sys. Pearson {a} | sys. Pearson {b} |", "|---|---|---|---|---|---|---|---|---|"]
    for r in result["sets"]:
        lines.append(f"| {r['set']} ({r['human']}) | {r['rows']} | {r['items']} | {r['tau_like_a']:.4f} | "
                     f"{r['tau_like_b']:.4f} | {r['difference']:+.4f} [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}] | "
                     f"{r['share_a_not_better']:.3f} | {r['system_pearson_a']:.3f} | {r['system_pearson_b']:.3f} |")
    m = result["mean"]
    lines.append(f"| **mean of sets** | | | | | {m['difference']:+.4f} [{m['ci95'][0]:+.4f}, {m['ci95'][1]:+.4f}] | "
                 f"{m['share_a_not_better']:.3f} | | |")
    tied = [f"{r['set']} {r['metric_ties_a'] / r['judged_pairs']:.1%} / {r['metric_ties_b'] / r['judged_pairs']:.1%}"
            for r in result["sets"] if r.get("judged_pairs")]
    if tied:
        lines += ["", f"Metric ties among judged pairs (`{a}` / `{b}`; the tau-like counts a tie as discordant): "
                  + ", ".join(tied) + "."]
    return "\n".join(lines) + "\n"
