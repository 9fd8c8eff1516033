"""The main job on the embedded default models: score the shipped example set with MENLI and its peers.

Runs ``evaluate.py score`` for each metric (exactly what a user would type) and prints a per-segment table.
``--nli-model`` passes another NLI model to the MENLI rows (``bench/bench_demo.py`` times the demo with the fast
``packaged:nli-minilm`` beside the default).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRICS = ["menli", "menli+bertscore", "bertscore", "chrf", "bleu"]


def main() -> int:
    parser = argparse.ArgumentParser(description="Score examples/ with MENLI and its peers on the default models.")
    parser.add_argument("--nli-model", help="NLI role value for the MENLI rows (default: the toolkit's)")
    args = parser.parse_args()
    hyps = (HERE / "hyps.txt").read_text(encoding="utf-8").splitlines()
    table: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for metric in METRICS:
            out = Path(tmp) / f"{metric}.jsonl"
            command = [sys.executable, str(HERE.parent / "evaluate.py"), "score", "--metric", metric,
                       "--hyps", str(HERE / "hyps.txt"), "--refs", str(HERE / "refs.txt"), "--out", str(out), "--quiet"]
            if args.nli_model and metric.startswith("menli"):
                command += ["--nli-model", args.nli_model]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr.strip().splitlines()[-1], file=sys.stderr)
                return done.returncode
            summary = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{metric:>16}: system {summary['system_score']:.3f}   {summary['signature']}")
            table[metric] = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    print()
    print(" | ".join(f"{m:>15}" for m in METRICS) + " | hypothesis")
    for i, hyp in enumerate(hyps):
        print(" | ".join(f"{table[m][i]:>15.3f}" for m in METRICS) + f" | {hyp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
