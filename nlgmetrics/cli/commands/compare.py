"""``evaluate.py compare``: two or more systems on one test set, paired-bootstrap intervals and verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from nlgmetrics.cli.common import add_devices_option, write_report
from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args, save_normalization
from nlgmetrics.helpformat import add_renamed_flag
from nlgmetrics.metaeval.rows import score_rows

NAME = "compare"
EPILOG = """example:
  nlgmetrics-evaluate compare --metric chrf --hyps examples/hyps.txt examples/hyps_terse.txt --refs examples/refs.txt \\
      --names full,terse --markdown compare.md"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="two or more systems on the same references: paired-bootstrap intervals and a "
        "significance verdict per pair",
        epilog=EPILOG,
        description="Compare systems' outputs on one test set with paired-bootstrap resampling.",
    )
    p.add_argument("--hyps", nargs="+", required=True, help="one file per system, one segment per line (UTF-8)")
    p.add_argument("--refs", nargs="+", required=True, help="one file per reference set, aligned with every system")
    p.add_argument("--srcs", help="sources/contexts, one per line (MARS context)")
    p.add_argument("--names", help="comma-separated system names, one per --hyps file (default: the file stems)")
    p.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples of the segments")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (the same draws for every system)")
    p.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the verdicts; intervals are at 1 - alpha"
    )
    p.add_argument(
        "--correction",
        choices=("none", "bonferroni"),
        default="none",
        help="multiple comparisons with 3+ systems: none (each pair on its own, said so in the JSON) or "
        "bonferroni (p-values times the number of pairs, wider difference intervals)",
    )
    p.add_argument("--json", metavar="FILE.json", help="also write the result here as indented JSON")
    add_renamed_flag(p, "--out", "--json", "json")
    p.add_argument("--markdown", help="write the system and pair tables as Markdown here")
    add_devices_option(p)
    add_metric_options(p)
    return p


def system_names(paths: Sequence[str], requested: str | None) -> list[str]:
    """``--names A,B,...`` or the files' stems; clashing stems (``a/out.txt``, ``b/out.txt``) get ``-1``, ``-2``.

    Names key the JSON and the verdicts ("out-2 better"), so they must be unique and say which file they are.
    """
    from nlgmetrics.metaeval import InputError

    if requested is not None:
        names = [n.strip() for n in requested.split(",")]
        if len(names) != len(paths) or not all(names):
            raise InputError(f"--names: {len(names)} name(s) for {len(paths)} --hyps files (give one per file)")
        if len(set(names)) != len(names):
            raise InputError(f"--names must be unique, got {requested!r}")
        return names
    stems = [Path(p).stem for p in paths]
    taken = set(stems)
    names: list[str] = []
    number = dict.fromkeys(stems, 0)
    for stem in stems:
        if stems.count(stem) == 1:
            names.append(stem)
            continue
        name = stem
        while name in taken:  # also steps over a file really called out-1.txt
            number[stem] += 1
            name = f"{stem}-{number[stem]}"
        taken.add(name)
        names.append(name)
    return names


def run(args: argparse.Namespace) -> dict:
    """Several systems' outputs on one test set: scores, paired-bootstrap intervals and a verdict per pair.

    Every system is scored in one call (hypotheses of all systems one after another, references repeated), so
    a model loads once and a (hypothesis, references, source) triple two systems share is scored once and
    gets the same score in both. For bleu/chrf the system score is sacrebleu's corpus statistic, re-computed
    on each resample; segment scores (sentence BLEU/chrF) then give only the wins, ties and losses.
    """
    from nlgmetrics.metaeval import InputError, check_same_length, paired_bootstrap_systems, read_lines
    from nlgmetrics.metaeval.compare import markdown_table

    if len(args.hyps) < 2:
        raise InputError(f"compare needs at least 2 systems (--hyps A.txt B.txt ...), got {len(args.hyps)}")
    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    if not 0 < args.alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1, got {args.alpha}")
    names = system_names(args.hyps, args.names)
    ref_files = [read_lines(f, "references") for f in args.refs]
    srcs = read_lines(args.srcs, "sources") if args.srcs else None
    n = check_same_length(srcs=srcs, **{f"refs[{i}]": r for i, r in enumerate(ref_files)})
    systems: dict[str, list[str]] = {}
    for name, path in zip(names, args.hyps):
        hyps = read_lines(path, f"system {name}")
        if len(hyps) != n:
            raise InputError(f"system {name} {path}: {len(hyps)} lines, but the references have {n}")
        systems[name] = hyps
    refs = [list(r) for r in zip(*ref_files)]
    scorer = metric_from_args(args.metric, args)
    rows = [
        {"hyp": hyp, "refs": refs[i], "src": srcs[i] if srcs else None}
        for hyps in systems.values()
        for i, hyp in enumerate(hyps)
    ]
    flat = score_rows(scorer, rows)
    save_normalization(scorer, args)
    segment = {name: flat[k * n : (k + 1) * n] for k, name in enumerate(systems)}
    corpus, signature, extra = None, scorer.signature(), {}
    if args.metric in ("bleu", "chrf"):
        from nlgmetrics.baselines import SacreBleuScorer

        extra["segment_signature"] = signature  # sentence-level scores: wins, ties and losses only
        corpus, signature = SacreBleuScorer(args.metric).corpus_statistic(systems, ref_files)
    result = paired_bootstrap_systems(segment, args.bootstrap, args.seed, args.alpha, corpus, args.correction)
    for system, path in zip(result["systems"], args.hyps):
        system["file"] = str(path)
    result = {
        "metric": args.metric,
        **result,
        "signature": f"{signature}|paired-bs:{args.bootstrap}|seed:{args.seed}|alpha:{args.alpha}"
        + (f"|correction:{args.correction}" if args.correction != "none" else ""),
        **extra,
    }
    pairs = len(result["pairs"]) if args.correction == "bonferroni" else 1
    if 2 / (args.bootstrap + 1) * pairs >= args.alpha:
        print(
            f"warning: with {args.bootstrap} resamples no p-value can fall below {args.alpha}"
            f"{' after the Bonferroni correction' if pairs > 1 else ''}; every verdict is 'no significant "
            "difference' (raise --bootstrap)",
            file=sys.stderr,
        )
    write_report(result, args.json, args.markdown, markdown_table)
    return result
