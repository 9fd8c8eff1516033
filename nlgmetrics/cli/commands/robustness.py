"""``evaluate.py robustness``: MARS Table 4: scores of reordered or context-copied candidates must drop."""

from __future__ import annotations

import argparse

from nlgmetrics.cli.common import write_report
from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args
from nlgmetrics.helpformat import add_renamed_flag
from nlgmetrics.metaeval.rows import one_row_per_item, source_text

NAME = "robustness"
EPILOG = """example:
  nlgmetrics-evaluate robustness --metric mars,bertscore --data judged.jsonl --json robustness.json --limit 50"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="MARS Table 4: scores of reordered / context-copied candidates must drop",
        epilog=EPILOG,
        description="Each item's candidate against 50%%-reordered and context-copied versions of it, per metric.",
    )
    p.add_argument("--data", required=True, help="JSONL with 'hyp', 'refs' and (for context_sentence) 'src'")
    p.add_argument("--json", metavar="FILE.json", help="also write the report here as indented JSON")
    add_renamed_flag(p, "--out", "--json", "json")
    p.add_argument("--markdown", help="also write the table as Markdown here")
    p.add_argument("--limit", type=int, help="the first N items")
    p.add_argument("--seed", type=int, default=0, help="seed of the reorderings")
    add_metric_options(p, several=True)
    return p


def run(args: argparse.Namespace) -> dict:
    """MARS Table 4: each item's candidate vs 50%-reordered and context-sentence copies of it (stress.robustness)."""
    from nlgmetrics.metaeval import InputError, read_jsonl
    from nlgmetrics.stress.robustness import markdown_table, run_robustness

    rows = one_row_per_item(read_jsonl(args.data), args.limit)
    if any(not isinstance(r.get("hyp"), str) or not r.get("refs") for r in rows):
        raise InputError(f"{args.data}: every row needs 'hyp' and 'refs'")
    srcs = [source_text(r.get("src")) for r in rows]
    names = [name for name in args.metric.split(",") if name]
    metrics = {name: metric_from_args(name, args, run_names=names) for name in names}
    report = run_robustness(
        metrics, [r["hyp"] for r in rows], [list(r["refs"]) for r in rows], srcs if any(srcs) else None, seed=args.seed
    )
    report["data"] = str(args.data)
    write_report(report, args.json, args.markdown, markdown_table)
    return report
