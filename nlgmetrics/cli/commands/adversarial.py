"""``evaluate.py adversarial``: MENLI's adversarial preference accuracy (does the metric prefer the paraphrase?)."""

from __future__ import annotations

import argparse

from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args

NAME = "adversarial"
EPILOG = """example:
  nlgmetrics-evaluate adversarial --metric menli --data adversarial.jsonl --limit 100"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="MENLI adversarial preference accuracy",
        epilog=EPILOG,
        description="How often the metric scores the paraphrase above the adversarial candidate.",
    )
    p.add_argument("--data", required=True, help="adversarial JSONL (ref, hyp_para, hyp_adv_based, ...)")
    p.add_argument("--reference-free", action="store_true", help="anchor = source, good = r, bad = hyp_adv_free")
    p.add_argument("--limit", type=int, help="the first N rows of the file (smoke runs)")
    add_metric_options(p)
    return p


def run(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import read_jsonl, run_adversarial

    rows = read_jsonl(args.data)
    if args.limit is not None:
        rows = rows[: args.limit]
    scorer = metric_from_args(args.metric, args)
    result = run_adversarial(lambda hyps, anchors: scorer.score(hyps, anchors, None), rows, args.reference_free)
    return {
        "metric": args.metric,
        "data": str(args.data),
        "reference_free": args.reference_free,
        "limit_rows": args.limit,
        **result,
        "signature": scorer.signature(),
    }
