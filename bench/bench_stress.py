"""Blind-spot suite cost: the whole default suite for one metric on N segments, and how much of it is scoring.

The peer is the metric's own scoring time inside the same run (its callable is timed), so the ratio
total / scoring says what the protocol (parsing, perturbing, noise ratios) adds on top of the unavoidable work.

    python -m bench.bench_stress [--metric chrf] [--segments 1000] [--seeds 1,2,3,4,5]   # ~2 min for chrF
"""

from __future__ import annotations

import argparse
import time

from bench.harness import WMT_FILE, metric, read_data, write_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metric", default="chrf", help="a metric name, e.g. chrf, bleu, bertscore (MiniLM)")
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    args = parser.parse_args()

    from nlgmetrics.stress import DEFAULT_TESTS, run_blindspot

    rows = read_data(WMT_FILE)[: args.segments]
    gold = [r["refs"][0] for r in rows]
    refs = [r["refs"][1] for r in rows]
    scorer = metric(args.metric, encoder="packaged:minilm", progress=False)  # MiniLM: the published row's encoder
    spent = {"seconds": 0.0, "texts": 0}

    def timed(hyps, references, srcs):
        started = time.perf_counter()
        scores = scorer.score(hyps, references, srcs)
        spent["seconds"] += time.perf_counter() - started
        spent["texts"] += len(hyps)
        return scores

    seeds = tuple(int(s) for s in args.seeds.split(","))
    started = time.perf_counter()
    report = run_blindspot({args.metric: timed}, gold, refs, None, tests=list(DEFAULT_TESTS), seeds=seeds)
    total = time.perf_counter() - started
    applicable = sum(1 for t in report["tests"].values() if t["applicable"])
    passed = report["summary"][args.metric]["passed"]
    rows_out = [
        {
            "what": f"whole suite, {args.metric}",
            "segments": len(rows),
            "tests": applicable,
            "seeds": len(seeds),
            "texts_scored": spent["texts"],
            "seconds": total,
            "ratio_to_scoring": total / max(spent["seconds"], 1e-9),
        },
        {
            "what": f"scoring only ({args.metric})",
            "segments": len(rows),
            "tests": applicable,
            "seeds": len(seeds),
            "texts_scored": spent["texts"],
            "seconds": spent["seconds"],
            "ratio_to_scoring": 1.0,
        },
    ]
    write_results(
        f"stress_{args.metric}",
        {"metric": args.metric, "passed": passed, "applicable_tests": applicable},
        rows_out,
        ["what", "segments", "tests", "seeds", "texts_scored", "seconds", "ratio_to_scoring"],
        f"Blind-spot suite on WMT21 de-en, {len(rows)} segments, 2 CPU cores",
    )


if __name__ == "__main__":
    main()
