"""Blind spots: the stress reports under bench/results/stress/, as the pass tables, verdict grids and the curves of
every failed test.

The README's blind-spot tables (``bench/stress_table.py``) are rendered here from the same declaration, so the two
cannot disagree; this page adds what the README has no room for: every report's full table and how each failing
metric's curve behaves.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from results_markdown import Lines, Page, collapsible, table
from results_plots import from_path, stress_curves, verdict_grid
from results_store import ResultFiles

FOLDER = "stress"  # under the results root
MIX = "menli+sescore+lm-ratio"  # the packaged mix
# columns of bench/stress_table.py's main table that are the current defaults or their baselines (the rest, the
# earlier checkpoints and other MENLI settings, are shown collapsed)
CURRENT_COLUMNS = {
    "BLEU",
    "chrF",
    "BERTScore-MiniLM",
    "SEScore (default, `mpnet-v2`)",
    "MARS",
    "MENLI nli-mpnet (default), sentences, `--task mt`",
    "MENLI nli-mpnet, sentences, `--task summarization`",
    "MENLI nli-mpnet + BERTScore @0.4 (robust)",
}


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


def _cell(files: ResultFiles, found: Mapping[str, Any], set_folder: str, cell: tuple[str, str] | None) -> str:
    """One table cell: ``passed/judged`` from its report; where the full set was not run but a run on its first
    items was (``<set>_first<N>_<rest>``), that run's count said to be one; "not run" otherwise; "-" for no such
    set-up."""
    from bench.stress_table import NOT_RUN, cell_text
    from nlgmetrics.stress.report import passed_of_judged

    text = cell_text(files.root / FOLDER, cell)
    if text != NOT_RUN or cell is None or not cell[0].startswith(f"{set_folder}_"):
        return text
    rest = cell[0][len(set_folder) + 1 :]
    for folder, report in found.items():
        first = re.fullmatch(rf"{re.escape(set_folder)}_first(\d+)_{re.escape(rest)}", folder)
        if first and cell[1] in report.get("summary", {}):
            total = found.get(set_folder, {}).get("protocol", {}).get("n_samples")
            items = report.get("setup", {}).get("items") or first.group(1)
            of = f" of {total:,}" if total else ""
            return f"{passed_of_judged(report['summary'][cell[1]])} on the first {items}{of} items; full set not run"
    return text


def transposed(
    files: ResultFiles, found: Mapping[str, Any], name: str, corner: str, keep: set[str] | None = None
) -> Lines:
    """A table of ``bench/stress_table.py`` with a row per metric and a column per data set (the declaration has
    a row per data set: 15 columns, too wide to read), headed ``corner``, only the metrics in ``keep`` (every one
    when None)."""
    from bench.stress_table import TABLES

    spec = TABLES[name]
    sets = list(spec["rows"])
    for cells in spec["rows"].values():
        for cell in cells:
            if cell is not None:
                files.load(f"{FOLDER}/{cell[0]}/report")
    set_folders = {label: next(c[0] for c in cells if c is not None) for label, cells in spec["rows"].items()}
    lines = ["| " + " | ".join([corner, *sets]) + " |", "|" + "---|" * (len(sets) + 1)]
    for index, column in enumerate(spec["columns"]):
        if keep is not None and column not in keep:
            continue
        cells = [_cell(files, found, set_folders[label], spec["rows"][label][index]) for label in sets]
        lines.append("| " + " | ".join([column, *cells]) + " |")
    return lines if len(lines) > 2 else []


def _failing(report: Mapping[str, Any]) -> list[str]:
    return [
        name
        for name, test in report["tests"].items()
        if test["applicable"] and any(_verdict(test, m) == "FAIL" for m in report["metrics"])
    ]


def _curves(page: Page, folder: str, report: Mapping[str, Any], title: str) -> str | None:
    """The marker of the curves of every test some metric of a report failed (None when it failed none)."""
    failing = _failing(report)
    if not failing:
        return None
    return page.marker(
        f"stress-curves-{folder.replace('/', '-').replace('_', '-')}",
        f"curves of the tests failed in {title}",
        lambda: stress_curves(
            report, failing, f"{title}: the failed tests (x: noise ratio, y: score relative to gold = 1; bold: fails)"
        ),
    )


def _report_section(page: Page, folder: str, report: Mapping[str, Any], drawn: set[str]) -> None:
    """One report in the raw-data appendix: passed counts, the curves of its failed tests (unless the page shows
    them above), and the full table."""
    from nlgmetrics.stress.report import markdown_table

    summary = report.get("summary", {})
    verdicts = ", ".join(f"{m} {s['passed']}/{s['passed'] + s['failed']}" for m, s in summary.items())
    body = [f"Passed of judged tests: {verdicts}.", ""] if verdicts else []
    marker = None if folder in drawn else _curves(page, folder, report, folder)
    if marker:
        body += [marker, ""]
    body += markdown_table(report).splitlines()
    page.add(collapsible(f"{folder}: {verdicts or 'every test'}", body))


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


def _sample_verdict(files: ResultFiles, found: Mapping[str, Any]) -> str:
    """One line: each metric's passed of judged tests over the 25-item runs, and the tests the mix fails."""
    from bench.stress_table import TABLES

    spec = TABLES["stress-sample25"]
    totals = []
    for index, column in enumerate(spec["columns"]):
        passed = judged = 0
        for cells in spec["rows"].values():
            summary = found.get(cells[index][0], {}).get("summary", {}).get(cells[index][1])
            if summary:
                passed += summary["passed"]
                judged += summary["passed"] + summary["failed"]
        if judged:
            totals.append(f"{column} {passed}/{judged}")
    if not totals:
        return ""
    failed = sorted(
        {t for f, r in found.items() if f.startswith("sample25/") and f.endswith(f"/{MIX}") for t in _failing(r)}
    )
    line = "**Verdict:** passed of judged tests over the three sets: " + ", ".join(totals) + "."
    if failed:
        line += f" The packaged mix fails {', '.join(failed)}."
    return line


def render(files: ResultFiles) -> Page:
    """The blind-spot page."""
    from sescore.shipped import DEFAULT_NAME

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
        '("too few" otherwise). Each cell below is passed/judged tests; *not run* means the measurement was '
        "never made, and nothing is inferred for it. How each report was made, and what the numbers mean, is in "
        "the notes on these runs (`bench/notes/stress_runs.md` in the repository).",
        "",
    )
    drawn: set[str] = set()
    sample = transposed(files, found, "stress-sample25", "metric (25 items per set)")
    if sample:
        runs = files.load("stress_sample25")
        page.require_row(f"SEScore (`{DEFAULT_NAME}`)", "metric (25 items per set)")
        page.add(
            "## The defaults on the same 25 items",
            "",
            "The metrics of the headline table with their default settings, and the packaged mix "
            f"`{MIX}`, on 25 items per set drawn with seed 0 (`nlgmetrics-evaluate stress --sample 25 "
            "--sample-seed 0`; `bench/stress_sample.py`). With 25 items a test is judged only when it applies to 10 "
            "or more of them, so these counts are not comparable with the full-set table below.",
            "",
            sample,
            "",
            _sample_verdict(files, found),
            "",
        )
        curves = []
        for folder, report in found.items():
            if folder.startswith("sample25/") and folder.endswith(f"/{MIX}"):
                label = folder.split("/")[1]
                marker = _curves(page, folder, report, f"the packaged mix on {label}, 25 items")
                if marker:
                    drawn.add(folder)
                    curves += [marker, ""]
        if curves:
            page.add(
                "How the packaged mix fails: its score on each test it fails, relative to the gold point, against "
                "the noise ratio.",
                "",
                curves,
            )
        if runs is not None:
            full_set = _full_set_commands(runs)
            if full_set:
                page.add(
                    "For the full sets, run the same command without `--sample` (hours per trained metric on a CPU; on "
                    "hardware with bfloat16 units `--precision bfloat16` is faster, see the [speed page](speed.md)):",
                    "",
                    "```bash",
                    *full_set,
                    "```",
                    "",
                )
            page.add(
                collapsible("status and cost of every cell (scoring seconds on a 2-core CPU)", table(runs["rows"])),
                "",
            )
    main = transposed(files, found, "stress-main", "metric (full sets)", CURRENT_COLUMNS)
    if main:
        page.require_row(f"SEScore (default, `{DEFAULT_NAME}`)", "metric (full sets)")
        page.add(
            "## Passed tests per metric and data set",
            "",
            "Each set's full sample (as many items as the protocol draws from it), the current defaults and their "
            "baselines; a count from a run on the first items only says so.",
            "",
            main,
            "",
        )
        earlier = transposed(
            files, found, "stress-main", "earlier checkpoint or setting (full sets)", set(_columns()) - CURRENT_COLUMNS
        )
        if earlier:
            page.add(collapsible("Earlier SEScore checkpoints and other MENLI settings", earlier), "")
        page.add(
            "The same verdicts per test, one grid per data set (white: the test does not apply to this data; "
            "yellow: not run):",
            "",
        )
        _grids(page, files, found)
    pooling = _untransposed(files, found, "stress-thumb-pooling")
    if any("/" in line for line in pooling[2:]):
        page.add(
            "## MENLI's pooling on summaries",
            "",
            "The MT pooling against the summarisation pooling on THumB CNN/DM (toolkit set-up):",
            "",
            pooling,
            "",
        )
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
    page.appendix(
        "Every report under `bench/results/stress/`, by folder: its passed counts, the curves of the tests some "
        "metric failed (score relative to its gold point against the noise ratio; failing metrics bold) and the "
        "full table."
    )
    for folder, report in found.items():
        _report_section(page, folder, report, drawn)
    return page


def _columns() -> list[str]:
    from bench.stress_table import TABLES

    return TABLES["stress-main"]["columns"]


def _untransposed(files: ResultFiles, found: Mapping[str, Any], name: str) -> Lines:
    """A narrow table as declared (a row per declared row)."""
    from bench.stress_table import render

    return render(name, files.root / FOLDER).splitlines()
