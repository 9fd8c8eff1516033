"""``evaluate.py score``: one metric's score for each hypothesis, and the system score."""

from __future__ import annotations

import argparse
import json

from nlgmetrics.cli.common import add_devices_option
from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args, save_normalization
from nlgmetrics.helpformat import add_renamed_flag

NAME = "score"
EPILOG = """example:
  nlgmetrics-evaluate score --metric sescore --hyps examples/hyps.txt --refs examples/refs.txt --scores scores.jsonl"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="score hypotheses against references",
        epilog=EPILOG,
        description="Score each hypothesis against its reference(s) with one metric.",
    )
    p.add_argument("--hyps", required=True, help="candidates, one per line (UTF-8)")
    p.add_argument("--refs", nargs="+", help="one file per reference set, aligned with --hyps")
    p.add_argument("--srcs", help="sources/contexts, one per line (MARS context, reference-free MENLI)")
    p.add_argument(
        "--reference-free",
        action="store_true",
        help="score against --srcs instead of references (MENLI puts the source in the premise's place)",
    )
    p.add_argument(
        "--scores",
        metavar="FILE.jsonl",
        help="also write the per-segment scores here (JSONL: one {index, score} object per line)",
    )
    add_renamed_flag(p, "--out", "--scores", "scores")
    add_devices_option(p)
    add_metric_options(p)
    return p


def _reads_language(metric: str) -> bool:
    """Whether ``--metric`` (or every part of a ``menli+...`` mix) takes the ``lang`` option."""
    from nlgmetrics.registry import RegistryError, accepted_options

    try:
        return all("lang" in accepted_options(part) for part in metric.split("+"))
    except (RegistryError, ValueError, KeyError):
        return False


def run(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import InputError, atomic_write, check_same_length, read_lines

    hyps = read_lines(args.hyps, "hypotheses")
    ref_files = [read_lines(f, "references") for f in (args.refs or [])]
    srcs = read_lines(args.srcs, "sources") if args.srcs else None
    check_same_length(hyps=hyps, srcs=srcs, **{f"refs[{i}]": r for i, r in enumerate(ref_files)})
    if not ref_files and not args.reference_free:
        raise InputError("--refs is required (or --reference-free with --srcs for MENLI)")
    if args.reference_free and srcs is None:
        raise InputError("--reference-free needs --srcs")
    refs = [list(r) for r in zip(*ref_files)] if ref_files else None
    if refs is not None and len(ref_files) == 1:
        refs = [r[0] for r in refs]
    if getattr(args, "lang", "") is None and _reads_language(args.metric):
        from nlgmetrics.language import resolve_lang  # name the identified language in the signature

        args.lang = resolve_lang(None, refs if refs is not None and not args.reference_free else srcs or [])
    scorer = metric_from_args(args.metric, args, reference_free=args.reference_free)
    scores = scorer.score(hyps, refs if refs is not None else srcs, srcs)
    save_normalization(scorer, args)
    if args.scores:
        with atomic_write(args.scores) as handle:
            for index, value in enumerate(scores):
                handle.write(json.dumps({"index": index, "score": value}) + "\n")
    return {
        "metric": args.metric,
        "system_score": float(sum(scores) / len(scores)),
        "n": len(scores),
        "signature": scorer.signature(),
    }
