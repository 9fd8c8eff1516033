"""``evaluate.py correlate``: a metric's agreement with human judgments (WMT20 tau-like, Kendall, Pearson)."""

from __future__ import annotations

import argparse
import re
from typing import Sequence

from nlgmetrics.cli.common import add_devices_option
from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args, save_normalization
from nlgmetrics.metaeval.rows import score_rows

NAME = "correlate"
EPILOG = """example:
  nlgmetrics-evaluate correlate --metric sescore --data judged.jsonl --versus bertscore --human score
  (the judged JSONL schema: the documentation's "Judged data" page)"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="correlation with human judgments (WMT20 tau-like, Kendall, Pearson)",
        epilog=EPILOG,
        description="Correlate a metric's scores with human judgments.",
    )
    p.add_argument("--data", required=True, help="judged JSONL: one row per (item, system) with hyp, refs and scores")
    p.add_argument("--limit", type=int, help="the first N items, with all their systems")
    p.add_argument(
        "--skip", type=int, default=0, help="leave out the first N items (e.g. a dev slice used for selection)"
    )
    p.add_argument("--human", help="which human score (key of 'scores') to correlate with (default: the only one)")
    p.add_argument(
        "--versus",
        help="a second metric scored on the same rows: paired item bootstrap of the "
        "tau-like difference (metric minus versus) under 'versus'",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="item resamples for --versus")
    p.add_argument("--seed", type=int, default=0, help="seed of the --versus resampling")
    p.add_argument(
        "--human-systems",
        help="comma-separated systems that are human references (reported with and "
        "without them), or 'none' (default: the rows' human_system field, else "
        "whole names ref-X/Human-X)",
    )
    add_devices_option(p)
    add_metric_options(p)
    return p


def _human_key(rows: Sequence[dict], requested: str | None) -> str:
    from nlgmetrics.metaeval import InputError

    keys = sorted({k for r in rows for k in (r.get("scores") or {})})
    if requested:
        if requested not in keys:
            raise InputError(f"human score '{requested}' not in the data; available: {', '.join(keys)}")
        return requested
    if len(keys) == 1:
        return keys[0]
    raise InputError(f"the data has several human scores; pick one with --human: {', '.join(keys)}")


_WMT_HUMAN = re.compile(r"^(ref|Human)-[A-Za-z0-9]+(\.\d+)?$")


def human_systems(rows: Sequence[dict], flag: str | None) -> tuple[list[str], str]:
    """Which systems are human references, and how that was decided (stated in the JSON, never guessed).

    In order: ``--human-systems A,B`` (``none`` for no human system); a boolean ``human_system`` field on the
    rows; otherwise the WMT naming of human translations, a whole name of the form ``ref-X``/``Human-X`` (a
    system called ``refresh`` or ``reference_bart`` is not human).
    """
    systems = sorted({str(r.get("system")) for r in rows})
    if flag is not None:
        names = [] if flag.strip().lower() == "none" else [s.strip() for s in flag.split(",") if s.strip()]
        unknown = [s for s in names if s not in systems]
        if unknown:
            from nlgmetrics.metaeval import InputError

            raise InputError(f"--human-systems: {', '.join(unknown)} not among the data's systems")
        return names, "--human-systems"
    if any("human_system" in r for r in rows):
        return sorted({str(r.get("system")) for r in rows if r.get("human_system")}), "row field human_system"
    return [s for s in systems if _WMT_HUMAN.match(s)], "WMT naming (whole name ref-X or Human-X)"


def run(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import (
        InputError,
        correlation_report,
        first_items,
        paired_bootstrap_correlation,
        paired_bootstrap_tau_like,
        read_jsonl,
    )

    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    rows = first_items(read_jsonl(args.data), args.limit, args.skip)
    key = _human_key(rows, args.human)
    rows = [r for r in rows if (r.get("scores") or {}).get(key) is not None]
    if not rows:
        raise InputError(f"{args.data}: no row has human score '{key}'")
    for number, row in enumerate(rows, 1):
        if not isinstance(row.get("hyp"), str) or not isinstance(row.get("refs"), list) or not row["refs"]:
            raise InputError(f"{args.data}: row {number} lacks 'hyp' or 'refs'")
    from nlgmetrics.metaeval import usable_rows

    rows, skipped = usable_rows(rows)
    if not rows:
        raise InputError(f"{args.data}: every row has an empty hypothesis or reference")
    humans, humans_how = human_systems(rows, args.human_systems)
    scorer = metric_from_args(args.metric, args, run_names=[args.metric] + ([args.versus] if args.versus else []))
    metric = score_rows(scorer, rows)
    save_normalization(scorer, args)
    human = [float(r["scores"][key]) for r in rows]
    items = [(r.get("lp"), r.get("item_id")) for r in rows]
    systems = [r.get("system") for r in rows]
    result = {
        "metric": args.metric,
        "data": str(args.data),
        "human": key,
        "skip_items": args.skip,
        "limit_items": args.limit,
        "human_systems": humans,
        "human_systems_from": humans_how,
        "skipped_rows": len(skipped),
        "skipped": skipped[:50],
    }
    result.update(correlation_report(metric, human, items, systems))
    mt = [i for i, s in enumerate(systems) if str(s) not in set(humans)]
    if len(mt) < len(rows):
        sub = correlation_report(
            [metric[i] for i in mt], [human[i] for i in mt], [items[i] for i in mt], [systems[i] for i in mt]
        )
        result["without_human_systems"] = sub
    result["signature"] = scorer.signature()
    if args.versus:
        other = metric_from_args(args.versus, args, run_names=[args.metric, args.versus])
        versus = score_rows(other, rows)
        result["versus"] = {
            "metric": args.versus,
            "signature": other.signature(),
            **paired_bootstrap_tau_like(metric, versus, human, items, args.bootstrap, args.seed),
        }
        # segment level without grouping: the only comparison for one-candidate-per-item data (ROC stories)
        result["versus"]["segment"] = {
            stat: paired_bootstrap_correlation(metric, versus, human, stat, args.bootstrap, args.seed)
            for stat in ("pearson", "kendall_b")
        }
    return result
