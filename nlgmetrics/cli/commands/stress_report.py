"""``evaluate.py stress-report``: re-judge a stored stress report (another --min-applied) without scoring again."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nlgmetrics.cli.commands.stress import NO_PLOTS_HELP, add_min_applied

NAME = "stress-report"
EPILOG = """example:
  nlgmetrics-evaluate stress-report --report runs/stress --min-applied 5"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="re-judge a stored stress report.json and rewrite its table and plots",
        epilog=EPILOG,
        description="Re-judge a stored blind-spot report; nothing is scored again.",
    )
    p.add_argument("--report", required=True, help="report.json written by 'stress', or its folder")
    p.add_argument("--out", help="folder to write (default: the report's own folder)")
    add_min_applied(p)
    p.add_argument("--no-plots", action="store_true", help=NO_PLOTS_HELP)
    return p


def run(args: argparse.Namespace) -> dict:
    """Re-judge a stored report.json (e.g. under another --min-applied) and rewrite its table and plots.

    Only the verdicts change; the curves are read as stored, so nothing is scored again.
    """
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.stress import judge, write_report

    path = Path(args.report)
    if path.is_dir():
        path = path / "report.json"
    if not path.is_file():
        raise InputError(f"{path}: no such report (give a report.json written by 'evaluate.py stress' or its folder)")
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: not a JSON report ({err})") from None
    if not isinstance(stored, dict) or not {"protocol", "metrics", "tests"} <= stored.keys():
        raise InputError(f"{path}: not a blind-spot report (needs 'protocol', 'metrics' and 'tests')")
    report = judge(stored, args.min_applied)
    write_report(report, args.out or path.parent, plots=not args.no_plots)
    return report
