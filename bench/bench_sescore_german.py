"""German SEScore checkpoints on TED en-de against BERTScore with the German default encoder (me5-small).

The rule that decides (docs/guides/experiments.md, "German SEScore"): candidates are compared on the select half,
the chosen one is scored once on the report half. Each candidate is one ``nlgmetrics-evaluate devmix`` run on
``devmix/german.yaml`` (BERTScore's rows are scored once and cached); the result keeps every set's numbers and
each run's cost. ``--synthesis`` also stores the training data's summary for the SEScore results page.

    python -m bench.bench_sescore_german --half select \
        --candidate packed=runs/sescore/me5-de/checkpoint --candidate trained=runs/sescore/me5-de/trained
    python -m bench.bench_sescore_german --half report --candidate packed=runs/sescore/me5-de/checkpoint
    python -m bench.bench_sescore_german --synthesis runs/sescore/me5-de/synthesis
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.harness import RESULTS, data_dir, portable, write_results
from nlgmetrics.machine import machine

MIX = "devmix/german.yaml"


def compare(checkpoint: str, half: str, cache: str) -> tuple[dict, dict]:
    """One ``nlgmetrics-evaluate devmix`` run of SEScore ``checkpoint`` against BERTScore (me5-small), in its own
    process through the command line; its JSON result and its cost."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "nlgmetrics.cli.evaluate", "devmix", "--half", half, "--mix", MIX]
    command += ["--data-root", str(data_dir()), "--metric", "sescore", "--checkpoint", checkpoint]
    command += ["--versus", "bertscore", "--cache", cache, "--quiet"]
    wall = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout), {"wall_s": round(time.perf_counter() - wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("select", "report"))
    parser.add_argument("--candidate", action="append", default=[], help="NAME=CHECKPOINT_FOLDER")
    parser.add_argument("--cache", default="runs/devmix-cache", help="devmix score cache (BERTScore rows reused)")
    parser.add_argument("--synthesis", help="a German synthesis folder: store its summary.json")
    args = parser.parse_args()
    if args.synthesis:
        summary = json.loads((Path(args.synthesis) / "summary.json").read_text(encoding="utf-8"))
        note = "steps 1-2 of the German recipe (configs/sescore/de_me5_sentences.yaml, de_me5_synthesize.yaml)"
        document = portable({**summary, "machine": machine(), "note": note})
        (RESULTS / "synthesis_de_me5_summary.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    if not args.candidate:
        return
    if args.half is None:
        parser.error("--candidate needs --half")
    rows, details = [], {}
    for spec in args.candidate:
        name, sep, folder = spec.partition("=")
        if not sep or not Path(folder, "hparams.yaml").is_file():
            parser.error(f"--candidate {spec}: expected NAME=CHECKPOINT_FOLDER (a folder with hparams.yaml)")
        result, cost = compare(folder, args.half, args.cache)
        details[name] = {**result, "cost": cost}
        ted = result["sets"][0]
        rows.append(
            {
                "candidate": name,
                "checkpoint": folder,
                "rows": ted["rows"],
                "items": ted["items"],
                "tau-like SEScore": round(ted["tau_like_a"], 4),
                "tau-like BERTScore-me5": round(ted["tau_like_b"], 4),
                "difference [95% CI]": f"{ted['difference']:+.4f} [{ted['ci95'][0]:+.4f}, {ted['ci95'][1]:+.4f}]",
                "not better": f"{ted['share_a_not_better']:.1%}",
                "seconds": cost["wall_s"],
            }
        )
    write_results(
        f"sescore_de_{args.half}",
        {"half": args.half, "mix": MIX, "runs": details},
        rows,
        list(rows[0]),
        f"German SEScore on TED en-de ({args.half} half) against BERTScore-me5-small",
        [
            "tau-like (WMT20, item-grouped) on TED en-de MQM; difference = SEScore minus BERTScore with "
            "packaged:me5-small on the same rows, 95% paired item-bootstrap interval (1,000 resamples)",
            "seconds: wall time of the devmix run (BERTScore's rows come from the cache after the first candidate)",
        ],
    )


if __name__ == "__main__":
    main()
