"""``evaluate.py devmix``: score a metric (and a baseline) on one half of every set of the dev mix.

    nlgmetrics-evaluate devmix --metric sescore --versus bertscore --half select [--mix devmix/default.yaml]

Recipes and checkpoints are chosen with ``--half select`` and the numbers that are reported come from
``--half report``; the item split is a fixed seeded hash (``nlgmetrics.metaeval.split``). Every set gets the
WMT20 tau-like and system Pearson of both metrics and a paired item bootstrap of the tau-like difference; the mix
row is the mean difference over sets with a bootstrap that resamples items inside each set. ``--cache DIR`` keeps
every scored row (``nlgmetrics.scorecache``: one file per set half and metric signature), so an interrupted run
resumes, a second comparison against the same metric costs nothing, and a ``--limit-items`` trial's rows are not
scored again by the full run. Folders written before the shared cache (one whole list per file) are still read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args
from nlgmetrics.metaeval.rows import score_rows
from nlgmetrics.registry import PRECISIONS

NAME = "devmix"
EPILOG = """example:
  nlgmetrics-evaluate devmix --metric sescore --versus bertscore --half select --cache runs/devmix-cache
  (the mix's judged sets are read from --data-root or $NLGMETRICS_DATA; schema: the judged-data guide)"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``devmix`` subcommand's flags, then the metric flags every subcommand shares."""
    p = sub.add_parser(
        NAME,
        help="tau-like on the select or report half of every dev set, with paired bootstrap intervals against --versus",
        epilog=EPILOG,
        description="Compare a metric with a baseline on the dev mix: choose on the select half, "
        "report the report half once.",
    )
    p.add_argument(
        "--half",
        required=True,
        choices=("select", "report"),
        help="select: for choosing recipes and checkpoints; report: for the numbers you publish",
    )
    p.add_argument("--mix", default="devmix/default.yaml", help="YAML listing the judged sets (packaged name or path)")
    p.add_argument("--sets", help="comma-separated subset of the mix's set names")
    p.add_argument("--data-root", help="folder the mix's relative paths start from (default: $NLGMETRICS_DATA)")
    p.add_argument("--versus", default="bertscore", help="baseline metric scored on the same rows")
    p.add_argument(
        "--versus-encoder",
        default=None,
        help="encoder role value for the baseline (default: --encoder), with that encoder's own layer and prompt; "
        "compares encoders, e.g. --metric bertscore --encoder packaged:me5-small --versus bertscore "
        "--versus-encoder packaged:minilm",
    )
    p.add_argument(
        "--versus-precision",
        default=None,
        choices=PRECISIONS,
        help="forward-pass precision of the baseline (default: --precision); compares precisions, e.g. "
        "--metric sescore --precision bfloat16 --versus sescore --versus-precision float32",
    )
    p.add_argument(
        "--versus-checkpoint",
        nargs="+",
        default=None,
        metavar="CHECKPOINT",
        help="SEScore checkpoint(s) of the baseline (default: --checkpoint); compares checkpoints, e.g. --metric "
        "sescore --checkpoint runs/x/checkpoint --versus sescore --versus-checkpoint mpnet-v2",
    )
    p.add_argument("--limit-items", type=int, help="at most N items of each set's half (cheap trial runs)")
    p.add_argument("--bootstrap", type=int, default=1000, help="item resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument(
        "--cache",
        help="folder keeping each set's scores per row (resume, reuse across comparisons; nlgmetrics.scorecache)",
    )
    p.add_argument(
        "--chunk",
        type=int,
        help="with --cache: rows scored between two saves, so a killed run resumes "
        "inside a set (default: a set's missing rows in one call)",
    )
    p.add_argument("--markdown", help="also write the table as Markdown here")
    add_metric_options(p)
    return p


def _uses_encoder(metric: str) -> bool:
    """Whether --encoder changes this metric (bertscore, cosine, or a menli+ combination with one of them)."""
    return any(part in ("bertscore", "cosine") for part in metric.split("+"))


ENCODER_SETTINGS = ("layer", "prompt")  # chosen for one encoder: a layer index or prompt means nothing for another


def _encoder_settings_reset(args: argparse.Namespace) -> dict[str, Any]:
    """A baseline on another encoder (``--versus-encoder``) takes that encoder's own defaults for the settings that
    were chosen for ``--encoder`` (``--layer 18`` of EmbeddingGemma is no layer of MPNet)."""
    if not args.versus_encoder or args.versus_encoder == args.encoder:
        return {}
    from nlgmetrics.registry import metric_spec

    defaults = metric_spec("bertscore").make_options()
    return {key: getattr(defaults, key) for key in ENCODER_SETTINGS if getattr(args, key, None) not in (None, "")}


def run(args: argparse.Namespace) -> dict:
    """Score ``--metric`` and ``--versus`` on one half of every set of the mix, each row once (``--cache``).

    Args:
        args: the parsed ``devmix`` flags.

    Returns:
        Per set the tau-likes, system Pearsons, the paired bootstrap of the difference and tie counts; the mean
        difference over sets with its bootstrap; both signatures.
    """
    from nlgmetrics.metaeval import (
        InputError,
        atomic_write,
        paired_bootstrap_tau_like,
        paired_bootstrap_tau_like_mix,
        system_pearson,
        tau_like_ties,
    )
    from nlgmetrics.metaeval.devmix import load_mix, set_rows
    from nlgmetrics.resources import data_root
    from nlgmetrics.scorecache import cached_row_scores

    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    if args.limit_items is not None and args.limit_items < 1:
        raise InputError("--limit-items must be a positive number of items")
    chunk = getattr(args, "chunk", None)
    if chunk is not None and chunk < 1:
        raise InputError("--chunk must be a positive number of rows")
    versus_checkpoint = getattr(args, "versus_checkpoint", None)
    if versus_checkpoint and "sescore" not in args.versus.split("+"):
        raise InputError(
            f"--versus-checkpoint changes only SEScore baselines; --versus {args.versus} has no checkpoint"
        )
    if args.versus_encoder and not _uses_encoder(args.versus):
        raise InputError(
            f"--versus-encoder changes only bertscore/cosine baselines; --versus {args.versus} has no encoder"
        )
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
    names = [args.metric, args.versus]
    scorer = metric_from_args(args.metric, args, run_names=names)
    overrides = {
        key: value
        for key, value in (
            ("encoder", args.versus_encoder),
            ("precision", args.versus_precision),
            ("checkpoint", versus_checkpoint),
        )
        if value
    }
    overrides.update(_encoder_settings_reset(args))
    other = metric_from_args(args.versus, args, run_names=names, overrides=overrides)
    results, mix_sets = [], []
    for entry in entries:
        rows = set_rows(entry, root, args.half, int(mix["split_seed"]), args.limit_items)
        tag = f"{Path(entry['path']).stem}-{args.half}-{mix['split_seed']}"  # sets sharing a file share scores
        a = cached_row_scores(scorer, rows, cache, tag, row_scores=score_rows, chunk=chunk)
        b = cached_row_scores(other, rows, cache, tag, row_scores=score_rows, chunk=chunk)
        human = [float(r["scores"][entry["human"]]) for r in rows]
        items = [(r.get("lp"), r.get("item_id")) for r in rows]
        systems = [r.get("system") for r in rows]
        boot = paired_bootstrap_tau_like(a, b, human, items, args.bootstrap, args.seed)
        ties_a, ties_b = tau_like_ties(a, human, items), tau_like_ties(b, human, items)
        results.append(
            {
                "set": entry["name"],
                "human": entry["human"],
                "rows": len(rows),
                **boot,
                "system_pearson_a": system_pearson(a, human, systems),
                "system_pearson_b": system_pearson(b, human, systems),
                "judged_pairs": ties_a["judged_pairs"],
                "metric_ties_a": ties_a["metric_ties"],
                "metric_ties_b": ties_b["metric_ties"],
            }
        )
        mix_sets.append((a, b, human, items))
    pooled = paired_bootstrap_tau_like_mix(mix_sets, args.bootstrap, args.seed)
    label_a, label_b = args.metric, args.versus
    if args.versus_encoder and args.versus_encoder != args.encoder:  # two encoders: say which side has which
        label_b = f"{args.versus} ({args.versus_encoder})"
        label_a = f"{args.metric} ({args.encoder})" if _uses_encoder(args.metric) else args.metric
    if versus_checkpoint and versus_checkpoint != args.checkpoint:  # two checkpoints: say which side has which
        label_b = f"{args.versus} ({' '.join(versus_checkpoint)})"
        if args.checkpoint and "sescore" in args.metric.split("+"):
            label_a = f"{args.metric} ({' '.join(args.checkpoint)})"
    if args.versus_precision and args.versus_precision != args.precision:  # two precisions: name both
        label_a, label_b = f"{label_a} {args.precision}", f"{label_b} {args.versus_precision}"
    result = {
        "metric": args.metric,
        "versus": args.versus,
        "label_a": label_a,
        "label_b": label_b,
        "signature": scorer.signature(),
        "versus_signature": other.signature(),
        "half": args.half,
        "split_seed": mix["split_seed"],
        "mix": str(args.mix),
        "sets": results,
        "mean": pooled,
    }
    if args.markdown:
        with atomic_write(args.markdown) as handle:
            handle.write(markdown(result))
    return result


def markdown(result: dict) -> str:
    """One row per set and a mean row: both tau-likes, the difference with its 95% interval, P(not better)."""
    a, b = result.get("label_a", result["metric"]), result.get("label_b", result["versus"])
    lines = [
        f"Dev mix, **{result['half']}** half (split seed {result['split_seed']}): `{a}` vs `{b}`",
        "",
        f"| set | rows | items | tau-like {a} | tau-like {b} | difference [95% CI] | P(not better) "
        f"| sys. Pearson {a} | sys. Pearson {b} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["sets"]:
        lines.append(
            f"| {r['set']} ({r['human']}) | {r['rows']} | {r['items']} | {r['tau_like_a']:.4f} | "
            f"{r['tau_like_b']:.4f} | {r['difference']:+.4f} [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}] | "
            f"{r['share_a_not_better']:.3f} | {r['system_pearson_a']:.3f} | {r['system_pearson_b']:.3f} |"
        )
    m = result["mean"]
    lines.append(
        f"| **mean of sets** | | | | | {m['difference']:+.4f} [{m['ci95'][0]:+.4f}, {m['ci95'][1]:+.4f}] | "
        f"{m['share_a_not_better']:.3f} | | |"
    )
    tied = [
        f"{r['set']} {r['metric_ties_a'] / r['judged_pairs']:.1%} / {r['metric_ties_b'] / r['judged_pairs']:.1%}"
        for r in result["sets"]
        if r.get("judged_pairs")
    ]
    if tied:
        lines += [
            "",
            f"Metric ties among judged pairs (`{a}` / `{b}`; the tau-like counts a tie as discordant): "
            + ", ".join(tied)
            + ".",
        ]
    return "\n".join(lines) + "\n"
