"""Blind-spot suites of the README's recommended metrics on the same seeded 25 items per data set.

Why: the full suites cost from minutes (chrF) to days (sentence-level MENLI on TED paragraphs, ~19 h for the
three-way mix on TED-MT's 100 items) on a 2-core CPU, so the recommended metrics had never been run on common
items. Here every metric of the README's results table, plus the packaged mix ``menli+sescore+lm-ratio``, runs
``nlgmetrics-evaluate stress`` with its default settings on the same 25 items of each set (``--sample 25
--sample-seed 0``). A run is resumable: its per-row scores (``scores.json``, and a mix's per-part ``parts.json``;
keyed by hashes, no text) are kept every 500 rows and committed while the cell is unfinished, so a run cut off at
the end of a working session continues in the next one from a clean checkout (a finished cell keeps its report and
its cost ledgers, ``*.costs.json``). The mix reuses the ``menli`` cell's rows for its MENLI part (``--reuse-scores``),
so that cell's scores are kept until the set's mix is finished too. Runs go cheapest first and none starts once
``--budget-minutes`` are spent.

    python -m bench.stress_sample                        # every run not finished yet, within 60 minutes
    python -m bench.stress_sample --sets wmt21_deen --metrics sescore --budget-minutes 30
    python -m bench.stress_sample --sets tedmt_zhen --budget-minutes 70 --stop-running   # one session's piece
    python -m bench.stress_sample --status               # what is finished, what is partly scored, the costs

The full-set command for one cell (a GPU or a long CPU run) is the same without ``--sample``:

    nlgmetrics-evaluate stress --metric sescore --out runs/stress/wmt21_deen_sescore \\
        --data $NLGMETRICS_DATA/multiref/multiref_wmt21_deen_2refs_allsys.jsonl

Writes ``bench/results/stress/sample25/<set>/<metric>/report.{json,md}`` (rendered by ``bench/stress_table.py``)
and ``bench/results/stress_sample25.{json,md}`` (status and cost of every cell).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import REPO, children_cpu_seconds, cpu_model, data_dir, write_results
from nlgmetrics.stress.report import passed_of_judged

SAMPLE, SEED = 25, 0
ROOT = REPO / "bench" / "results" / "stress" / "sample25"
SETS = {  # name -> (file under the data folder, extra stress flags); cheapest first (TED items are paragraphs)
    "wmt21_deen": ("multiref/multiref_wmt21_deen_2refs_allsys.jsonl", []),
    "thumb_cnndm": ("judgments/summ_thumb_cnndm_10refs.jsonl", []),
    "tedmt_zhen": ("multiref/multiref_tedmt_zhen_2refs.jsonl", []),
}
# the README results table's metrics (default settings), then the packaged MENLI mix; cheapest first
METRICS = ["bleu", "chrf", "bertscore", "sescore", "menli", "menli+sescore+lm-ratio"]
CHUNK = 500
# rows between saves per set where CHUNK takes too long: TED-MT's paragraphs, so that a sitting stopped at its
# budget (--stop-running) loses minutes, not a quarter of an hour
CHUNKS = {"tedmt_zhen": 100}
# a cell whose mix parts another cell's scores supply (``--reuse-scores``): the MENLI part of the mix is the
# ``menli`` cell's metric, so on a set where that cell's scores are still kept the mix does not score MENLI again
REUSES = {"menli+sescore+lm-ratio": ["menli"]}
STATE = ("scores.jsonl", "parts.jsonl", "scores.json", "parts.json")  # resumable state (.json: older versions)


def folder(data_set: str, metric: str) -> Path:
    return ROOT / data_set / metric


def finished(data_set: str, metric: str) -> bool:
    return (folder(data_set, metric) / "report.json").is_file()


def ledger(data_set: str, metric: str, name: str) -> list[dict]:
    """The entries of one of a cell's cost ledgers (``scores.costs.json``, ``parts.costs.json``); none if absent."""
    path = folder(data_set, metric) / name
    return list(json.loads(path.read_text(encoding="utf-8")).values()) if path.is_file() else []


def costs(data_set: str, metric: str) -> dict:
    """Rows and seconds over every run that scored this cell (``scores.costs.json`` adds them up)."""
    entries = ledger(data_set, metric, "scores.costs.json")
    if not entries:
        return {}
    return {
        "rows": sum(int(entry.get("rows", 0)) for entry in entries),
        "seconds": sum(float(entry.get("seconds", 0.0)) for entry in entries),
    }


def reused_rows(data_set: str, metric: str) -> int:
    """Rows of a mix's parts taken from another cell's scores (their seconds are that cell's, not the mix's)."""
    return max((int(entry.get("reused", 0)) for entry in ledger(data_set, metric, "parts.costs.json")), default=0)


def run_cell(data_set: str, metric: str, data_root: Path, seconds_left: float | None = None) -> dict:
    """One stress run (resumed where its scores stop); wall and CPU seconds of this sitting.

    With ``seconds_left`` the run is stopped (SIGTERM) when they are spent: the chunks it saved are kept, the rows
    scored since its last save are lost (``CHUNKS``: TED-MT saves more often), and the next sitting
    continues.
    """
    path, extra = SETS[data_set]
    out = folder(data_set, metric)
    out.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "evaluate.py",
        "stress",
        "--metric",
        metric,
        "--data",
        str(data_root / path),
        "--sample",
        str(SAMPLE),
        "--sample-seed",
        str(SEED),
        "--chunk",
        str(CHUNKS.get(data_set, CHUNK)),
        "--no-plots",
        "--quiet",
        "--out",
        str(out.relative_to(REPO)),
        *extra,
    ]
    lent = [folder(data_set, lender) / "scores.jsonl" for lender in REUSES.get(metric, [])]
    for scores in [path for path in lent if path.is_file()]:
        command += ["--reuse-scores", str(scores.relative_to(REPO))]
    cpu_before, started = children_cpu_seconds(), time.time()
    with open(out / "run.log", "a", encoding="utf-8") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
        try:
            code: int | str = process.wait(timeout=seconds_left)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait()
            code = "stopped: budget spent"
    tidy(data_set)
    return {
        "set": data_set,
        "metric": metric,
        "exit": code,
        "wall_seconds": round(time.time() - started, 1),
        "cpu_seconds": round(children_cpu_seconds() - cpu_before, 1),
        "processor": cpu_model(),  # sittings of one cell may run on different machines
        "command": "nlgmetrics-evaluate " + " ".join(command[2:]).replace(str(data_root), "$NLGMETRICS_DATA"),
    }


def tidy(data_set: str) -> None:
    """Delete the resumable state of the set's finished cells (their scores were state, not results), except the
    scores an unfinished cell of the set still reuses."""
    lent = {lender for metric, lenders in REUSES.items() if not finished(data_set, metric) for lender in lenders}
    for metric in METRICS:
        if finished(data_set, metric) and metric not in lent:
            for name in STATE:
                (folder(data_set, metric) / name).unlink(missing_ok=True)


def status_rows(sittings: list[dict]) -> list[dict]:
    rows = []
    for data_set in SETS:
        for metric in METRICS:
            cost = costs(data_set, metric)
            report = folder(data_set, metric) / "report.json"
            summary = (
                json.loads(report.read_text(encoding="utf-8"))["summary"].get(metric, {}) if report.is_file() else {}
            )
            rows.append(
                {
                    "set": data_set,
                    "metric": metric,
                    "status": "finished" if report.is_file() else ("partly scored" if cost else "not run"),
                    "passed": passed_of_judged(summary) if summary else "-",
                    "rows scored": cost.get("rows", 0),
                    "scoring seconds": round(cost.get("seconds", 0.0)),
                    "part rows reused": reused_rows(data_set, metric),
                    "wall seconds, all sittings": round(
                        sum(s["wall_seconds"] for s in sittings if (s["set"], s["metric"]) == (data_set, metric))
                    ),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from {', '.join(SETS)}")
    parser.add_argument("--metrics", default=",".join(METRICS), help=f"comma-separated, from {', '.join(METRICS)}")
    parser.add_argument("--budget-minutes", type=float, default=60.0, help="start no run after this much wall time")
    parser.add_argument(
        "--stop-running",
        action="store_true",
        help="also stop the run under way when the budget is spent (its saved chunks are kept), so a sitting fits a "
        "working session; without it the budget only stops new runs from starting",
    )
    parser.add_argument("--status", action="store_true", help="only write the status table")
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    metrics = [m for m in args.metrics.split(",") if m]
    unknown = sorted(set(sets) - set(SETS)) + sorted(set(metrics) - set(METRICS))
    if unknown:
        raise SystemExit(f"unknown sets or metrics {unknown}; sets: {', '.join(SETS)}; metrics: {', '.join(METRICS)}")
    sittings: list[dict] = []
    started = time.time()
    if not args.status:
        root = data_dir()
        for metric in [m for m in METRICS if m in metrics]:
            for data_set in [s for s in SETS if s in sets]:
                if finished(data_set, metric):
                    continue
                if time.time() - started > args.budget_minutes * 60:
                    print(f"budget spent: {data_set} {metric} left for the next run", file=sys.stderr)
                    continue
                print(f"{data_set} {metric} ...", file=sys.stderr, flush=True)
                left = args.budget_minutes * 60 - (time.time() - started)
                sittings.append(run_cell(data_set, metric, root, left if args.stop_running else None))
                print(json.dumps(sittings[-1]), file=sys.stderr, flush=True)
    previous = REPO / "bench" / "results" / "stress_sample25.json"
    history = json.loads(previous.read_text(encoding="utf-8")).get("sittings", []) if previous.is_file() else []
    write_results(
        "stress_sample25",
        {"sample": SAMPLE, "sample_seed": SEED, "sittings": history + sittings},
        status_rows(history + sittings),
        [
            "set",
            "metric",
            "status",
            "passed",
            "rows scored",
            "scoring seconds",
            "part rows reused",
            "wall seconds, all sittings",
        ],
        f"Blind-spot suites on {SAMPLE} seeded items per set (--sample {SAMPLE} --sample-seed {SEED})",
        [
            "passed: tests passed of tests judged (a test is judged when it applies to 10 or more of the 25 items)",
            "rows scored, scoring seconds: over every run that scored the cell (scores.costs.json), "
            "resumed runs included; wall seconds, all sittings: every run of this script on the cell, summed "
            "(model loading and the perturbations included); a sitting cut off with its working session never "
            "wrote its line, so where that happened the wall sum is below the scoring seconds",
            "part rows reused: rows of the mix's MENLI part read from the menli cell's scores (--reuse-scores); "
            "their seconds are in the menli cell's row, not the mix's",
            "a partly scored cell continues where it stopped: rerun this script",
            "the cells were scored on more than one machine: each sitting in the JSON file names its processor "
            "where it was recorded, and Machine below is the last run's",
        ],
    )


if __name__ == "__main__":
    main()
