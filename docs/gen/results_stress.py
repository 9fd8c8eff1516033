"""Blind spots: the stress reports under bench/results/stress/, as the pass tables, verdict grids and the curves of
every failed test.

The README's blind-spot tables (``bench/stress_table.py``) are rendered here from the same declaration, so the two
cannot disagree; this page adds what the README has no room for: every report's full table and how each failing
metric's curve behaves.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from results_markdown import Page, collapsible, table
from results_plots import from_path, stress_curves, verdict_grid
from results_store import ResultFiles

FOLDER = "stress"  # under the results root


def _verdict(test: Mapping[str, Any], metric: str) -> str:
    if not test["applicable"] or metric not in test["metrics"]:
        return "n/a"
    passed = test["metrics"][metric].get("passed")
    return "too few" if passed is None else "pass" if passed else "FAIL"


def reports(files: ResultFiles) -> dict[str, dict[str, Any]]:
    """Every blind-spot report by folder (``self_bias`` has another shape and is left out)."""
    found = {}
    for stem in files.stems(f"{FOLDER}/**/report"):
        folder = stem[len(FOLDER) + 1 : -len("/report")]
        doc = files.load(stem)
        if isinstance(doc.get("tests"), dict):
            found[folder] = doc
    return found


def _grids(page: Page, files: ResultFiles, found: Mapping[str, dict[str, Any]]) -> None:
    """One verdict grid per data set of the main table: tests x the table's columns."""
    from bench.stress_table import TABLES

    main = TABLES["stress-main"]
    for label, cells in main["rows"].items():
        columns, verdicts, tests = [], {}, {}
        for column, cell in zip(main["columns"], cells):
            if cell is None:
                continue
            short = re.sub(r"[`()]", "", column)
            columns.append(short)
            folder, metric = cell
            report = found.get(folder)
            if report is None:
                continue
            for name, test in report["tests"].items():
                tests.setdefault(name, None)
                verdicts[(name, short)] = _verdict(test, metric)
        if not tests:
            continue
        measured = {column for _, column in verdicts}
        for name in tests:
            for column in columns:
                verdicts.setdefault((name, column), "n/a" if column in measured else "not run")
        rows = list(tests)
        slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        page.figure(
            f"stress-grid-{slug}",
            f"verdict of every test and metric on {label}",
            lambda rows=rows, columns=columns, verdicts=verdicts, label=label: verdict_grid(
                rows, columns, verdicts, f"{label}: verdict per test and metric"
            ),
        )


def _main_tables(files: ResultFiles) -> dict[str, list[str]]:
    from bench.stress_table import TABLES, render

    root = files.root / FOLDER
    for spec in TABLES.values():
        for cells in spec["rows"].values():
            for cell in cells:
                if cell is not None:
                    files.load(f"{FOLDER}/{cell[0]}/report")
    return {name: render(name, root).splitlines() for name in TABLES}


def _report_section(page: Page, folder: str, report: Mapping[str, Any]) -> None:
    from nlgmetrics.stress.report import markdown_table

    failing = [
        name
        for name, test in report["tests"].items()
        if test["applicable"] and any(_verdict(test, m) == "FAIL" for m in report["metrics"])
    ]
    summary = report.get("summary", {})
    verdicts = ", ".join(f"{m} {s['passed']}/{s['passed'] + s['failed']}" for m, s in summary.items())
    page.add(f"### `{folder}`", "", f"Passed of judged tests: {verdicts}." if verdicts else "", "")
    if failing:
        slug = folder.replace("/", "-").replace("_", "-")
        page.figure(
            f"stress-curves-{slug}",
            f"curves of the tests failed in {folder}",
            lambda: stress_curves(
                report,
                failing,
                f"{folder}: the failed tests (x: noise ratio, y: score relative to gold = 1; bold: fails)",
            ),
        )
    page.add(collapsible(f"{folder}: every test", markdown_table(report).splitlines()))


def _self_bias(page: Page, files: ResultFiles) -> None:
    doc = files.load(f"{FOLDER}/self_bias/report")
    if doc is None:
        return
    from nlgmetrics.cli.commands.selfbias import plot
    from nlgmetrics.stress.self_bias import markdown

    text = markdown(doc).splitlines()
    page.add(
        "## Self-evaluation bias",
        "",
        "Do LM-likelihood metrics prefer text from the LM they are built on? Each evaluator's win share for "
        "its own generator against the reference judges' win share for the same pairs "
        "(`evaluate.py self-bias`; blind-spot paper, section 5.4).",
        "",
    )
    page.figure(
        "stress-self-bias", "self-evaluation bias with 95% intervals", lambda: from_path(lambda path: plot(doc, path))
    )
    page.add([line for line in text if not line.startswith("# ")], "")


def _full_set_commands(sample: Mapping[str, Any]) -> list[str]:
    """One full-set command per data set, taken from the recorded 25-item runs of the packaged mix: the same
    command without the sampling, the saving cadence and the reused scores, so the page cannot drift from the
    script that made the table."""
    commands: dict[str, str] = {}
    for sitting in sample.get("sittings", []):
        if sitting.get("metric") != "menli+sescore+lm-ratio" or sitting["set"] in commands:
            continue
        data = re.search(r"--data (\S+)", sitting["command"])
        if data:
            commands[sitting["set"]] = (
                f"nlgmetrics-evaluate stress --metric menli+sescore+lm-ratio --device cuda \\\n"
                f"    --data {data.group(1)} --out runs/stress/{sitting['set']}"
            )
    return list(commands.values())


def render(files: ResultFiles) -> Page:
    """The blind-spot page."""
    found = reports(files)
    page = Page("results/stress.md")
    protocol = next(iter(found.values()))["protocol"] if found else {}
    page.add(
        "# Blind spots",
        "",
        "The blind-spot suite (He et al., 2023) perturbs a gold hypothesis at rising noise levels and checks "
        "that a metric's mean score falls at every level. Here a test **passes** when "
        f"{protocol.get('pass', 'the mean score strictly decreases from the gold point through every level')};"
        f" it is **judged** only when it applies to at least {protocol.get('min_applied', 10)} samples "
        '("too few" otherwise). Each cell below is passed/judged tests. How each report was made, and '
        "what the numbers mean, is in the notes on these runs (`bench/notes/stress_runs.md` in the repository); "
        "the reports themselves "
        "are under `bench/results/stress/`.",
        "",
    )
    tables = _main_tables(files)
    if "stress-sample25" in tables:
        sample = files.load("stress_sample25")
        page.add(
            "## The recommended metrics on the same 25 items",
            "",
            "The metrics of the README's results table with their default settings, and the packaged mix "
            "`menli+sescore+lm-ratio`, on 25 items per set drawn with seed 0 (`nlgmetrics-evaluate stress "
            "--sample 25 --sample-seed 0`; `bench/stress_sample.py`). With 25 items a test is judged only when it "
            "applies to 10 or more of them, so these counts are not comparable with the 100-item tables below. "
            "For the full sets, run the same command without `--sample` (hours per trained metric on a CPU).",
            "",
            tables["stress-sample25"],
            "",
        )
        if sample is not None:
            full_set = _full_set_commands(sample)
            if full_set:
                page.add(
                    "The full-set runs of the packaged mix, one per set (any metric name fits `--metric`; on "
                    "hardware with bfloat16 units `--precision bfloat16` is faster, see the [speed page](speed.md)):",
                    "",
                    "```bash",
                    *full_set,
                    "```",
                    "",
                )
            page.add(
                collapsible(
                    "status and cost of every cell (scoring seconds on a 2-core CPU)",
                    table(sample["rows"]),
                ),
                "",
            )
    page.add(
        "## Passed tests per metric and data set",
        "",
        tables.get("stress-main", []),
        "",
        "The same verdicts per test, one grid per data set (white: the test does not apply to this data; "
        "yellow: not run):",
        "",
    )
    _grids(page, files, found)
    if "stress-thumb-pooling" in tables:
        page.add(
            "## MENLI's pooling on summaries",
            "",
            "The MT pooling against the summarisation pooling on THumB CNN/DM (toolkit set-up):",
            "",
            tables["stress-thumb-pooling"],
            "",
        )
    page.add(
        "## Every report",
        "",
        "One section per report folder: the passed counts, the curves of the tests some metric failed (score "
        "relative to its gold point against the noise ratio; failing metrics bold), and the full table.",
        "",
    )
    for folder, report in found.items():
        _report_section(page, folder, report)
    _self_bias(page, files)
    cost = files.load("stress_chrf")
    if cost is not None:
        page.add(
            "## What the suite costs",
            "",
            table(cost["rows"]),
            "",
            "From `bench/bench_stress.py`; more timings on the [speed page](speed.md#stress-chrf).",
            "",
        )
    return page
