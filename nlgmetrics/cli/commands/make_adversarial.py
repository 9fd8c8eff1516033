"""``evaluate.py make-adversarial``: MENLI-format adversarial rows from a set with paraphrase references."""

from __future__ import annotations

import argparse
import json

from nlgmetrics.helpformat import add_renamed_flag

NAME = "make-adversarial"
EPILOG = """example:
  nlgmetrics-evaluate make-adversarial --data multiref.jsonl --rows adversarial.jsonl --types num,neg --seed 0"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="MENLI-format adversarial rows from a set with paraphrase references",
        epilog=EPILOG,
        description="Build adversarial candidates (number, negation, name... errors) "
        "from items with two or more references.",
    )
    p.add_argument("--data", required=True, help="JSONL with two or more references per item (field 'refs')")
    p.add_argument("--rows", metavar="FILE.jsonl", help="the adversarial rows to write (JSON lines; required)")
    add_renamed_flag(p, "--out", "--rows", "rows")
    p.add_argument("--types", help="comma-separated error codes (default: all 12)")
    p.add_argument("--limit", type=int, help="the first N items")
    p.add_argument("--seed", type=int, default=0, help="seed of the perturbations")
    return p


def run(args: argparse.Namespace) -> dict:
    import numpy as np

    from nlgmetrics.metaeval import InputError, atomic_write, multi_reference_rows, read_jsonl
    from nlgmetrics.stress import ERROR_CODES, make_adversarial

    rows = multi_reference_rows(read_jsonl(args.data), 1, args.limit, str(args.data))
    types = args.types.split(",") if args.types else list(ERROR_CODES)
    stats: dict = {}
    made = make_adversarial(rows, np.random.default_rng(args.seed), types, stats=stats)
    if not args.rows:
        raise InputError("--rows is required: the file to write the adversarial rows to")
    with atomic_write(args.rows) as handle:
        for row in made:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"out": str(args.rows), "n": len(made), "items": len(rows), "per_type": stats, "seed": args.seed}
