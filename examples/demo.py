"""The main job on the embedded default models: score the shipped example set with every metric family.

Runs ``evaluate.py score`` for each metric (exactly what a user would type) and prints a per-segment table:
SEScore (the shipped default checkpoint), MENLI alone and combined with BERTScore, MARS, and the peers BERTScore,
chrF and BLEU, so a new user sees the three families side by side on sentences whose errors are plain to read.
``--metrics`` picks a subset (MARS generates with a causal LM and is the slowest row); ``--nli-model`` passes
another NLI model to the MENLI rows (``bench/bench_demo.py`` times the demo with the fast ``packaged:nli-minilm``
beside the default).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRICS = ["sescore", "menli", "menli+bertscore", "mars", "bertscore", "chrf", "bleu"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Score examples/ with SEScore, MENLI, MARS and their peers on the default models."
    )
    parser.add_argument(
        "--metrics",
        default=",".join(METRICS),
        help="comma-separated evaluate.py metrics, in table order (default: %(default)s)",
    )
    parser.add_argument("--nli-model", help="NLI role value for the MENLI rows (default: the toolkit's)")
    args = parser.parse_args()
    metrics = [m for m in args.metrics.split(",") if m]
    if not metrics:
        parser.error("--metrics names no metric")
    hyps = (HERE / "hyps.txt").read_text(encoding="utf-8").splitlines()
    table: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for metric in metrics:
            out = Path(tmp) / f"{metric}.jsonl"
            command = [
                sys.executable,
                str(HERE.parent / "evaluate.py"),
                "score",
                "--metric",
                metric,
                "--hyps",
                str(HERE / "hyps.txt"),
                "--refs",
                str(HERE / "refs.txt"),
                "--scores",
                str(out),
                "--quiet",
            ]
            if args.nli_model and metric.startswith("menli"):
                command += ["--nli-model", args.nli_model]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                lines = done.stderr.strip().splitlines()
                print(f"{metric}: {lines[-1] if lines else f'evaluate.py exited {done.returncode}'}", file=sys.stderr)
                return done.returncode
            summary = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{metric:>16}: system {summary['system_score']:.3f}   {summary['signature']}", flush=True)
            table[metric] = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    print()
    print(" | ".join(f"{m:>15}" for m in metrics) + " | hypothesis")
    for i, hyp in enumerate(hyps):
        print(" | ".join(f"{table[m][i]:>15.3f}" for m in metrics) + f" | {hyp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
