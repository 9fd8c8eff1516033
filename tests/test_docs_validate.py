"""The checks every generated results page passes before it reaches the site (docs/gen/results_markdown.validate,
run by results_pages.render_pages on each page it renders, so the docs build fails on them): each check is shown
to fail on a small planted defect, to name the page and the line, and to pass the real pages."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))

import results_pages  # noqa: E402
import results_quality  # noqa: E402
import results_sescore  # noqa: E402
from results_markdown import APPENDIX, Page, PageError, cell, collapsible, local_path, table, validate  # noqa: E402
from results_store import ResultFiles  # noqa: E402


def _page(*lines: str) -> Page:
    page = Page("results/x.md")
    page.add("# X", "", *lines)
    return page


def _fails(page: Page, *expected: str) -> str:
    with pytest.raises(PageError) as caught:
        validate(page)
    message = str(caught.value)
    for text in expected:
        assert text in message, message
    return message


def test_a_clean_page_passes():
    page = _page("Some text.", "", "| a | b |", "|---|---|", "| 1 | 2 |", "")
    page.require_row("1", "a")
    page.figure("x-plot", "a plot", lambda: b"")
    page.add(collapsible("more", ["| wide | " + " | ".join("c" * 9) + " |", "|" + "---|" * 10]))
    page.appendix()
    page.add("The select half's arm `v2_mpnet_own_w0.5` (lever) is fine down here.", "")
    validate(page)


def test_a_malformed_table_fails_with_its_page_and_line():
    # the MENLI weight table's defect: 11 cells in the separator under a header of 10
    header = "| " + " | ".join(f"c{i}" for i in range(6)) + " |"
    _fails(
        _page(header, "|" + "---|" * 7, "| 1 | 2 | 3 | 4 | 5 | 6 |"),
        "docs/results/x.md:5:",
        "7 cells under a header of 6",
    )
    _fails(_page("| a | b |", "| 1 | 2 |"), "docs/results/x.md:4:", "without a separator")
    _fails(_page("| a | b |", "|---|---|", "| 1 | 2 | 3 |"), "docs/results/x.md:6:", "3 cells under a header of 2")
    _fails(_page("text right above", "| a |", "|---|", "| 1 |"), "docs/results/x.md:5:", "blank line before")


def test_cells_are_counted_as_markdown_splits_them():
    """Escaped pipes and pipes in code spans are not cell borders (signatures hold pipes)."""
    validate(_page("| a | b |", "|---|---|", f"| {cell('x|y')} | `sescore|ckpt:a` |", ""))


def test_a_wide_table_shown_open_fails_and_collapsed_passes():
    rows = [{f"column {i}": i for i in range(9)}]
    _fails(_page(*table(rows)), "docs/results/x.md:4:", "9 columns shown open")
    validate(_page(*collapsible("every column", table(rows))))
    _fails(_page(*collapsible("shown open", table(rows), expanded=True)), "9 columns shown open")


def test_a_figure_marked_but_not_drawn_fails():
    _fails(
        _page("<!-- figure: never-drawn | a plot -->"), "docs/results/x.md:4:", "never-drawn is marked but never drawn"
    )
    # the stress page's defect: a name the marker pattern rejects ("+") stays an invisible comment
    _fails(_page("<!-- figure: curves-menli+sescore | curves -->"), "marker the build cannot read")
    drawn = _page()
    drawn.figures["orphan"] = lambda: b""
    _fails(drawn, "orphan is drawn but no marker shows it")
    image = _page("![a plot](img/missing.png)")
    _fails(image, "an image of no figure the page draws: img/missing.png")


def test_figure_names_from_metric_names_are_made_valid():
    page = _page()
    page.figure("stress-curves-sample25-menli+sescore+lm-ratio", "curves", lambda: b"")
    assert "stress-curves-sample25-menli-sescore-lm-ratio" in page.figures
    validate(page)


def test_a_local_path_fails_and_result_values_are_shortened():
    _fails(_page("Read from /work/main/bench/results/x.json."), "docs/results/x.md:4:", "local path (/work/main")
    _fails(_page("| a |", "|---|", "| /tmp/mars_w40.yaml |"), "docs/results/x.md:6:", "/tmp/mars_w40.yaml")
    _fails(_page("/home/someone/data.jsonl"), "local path")
    assert local_path("/work/main/bench/results/menli_fluency.json") == "bench/results/menli_fluency.json"
    assert local_path("/work/shared/data/adversarial/adv.jsonl") == "$NLGMETRICS_DATA/adversarial/adv.jsonl"
    assert local_path("/work/wt/marslen/configs/mars/offline.yaml") == "configs/mars/offline.yaml"
    assert local_path("/work/main/.venv/lib/python3.11/site-packages/gt/model") == "<site-packages>/gt/model"
    assert local_path("/tmp/mars_w48.yaml") == "mars_w48.yaml"
    assert local_path("../shared/data/x.jsonl and bench/x.json") == "../shared/data/x.jsonl and bench/x.json"
    assert cell("/work/main/sescore/checkpoints/minilm-news") == "sescore/checkpoints/minilm-news"


def test_a_missing_default_row_fails():
    page = _page("| metric (full sets) | WMT |", "|---|---|", "| BLEU | 23/23 |", "")
    page.require_row("SEScore (default, `mpnet-v2`)", "metric (full sets)")
    _fails(page, "docs/results/x.md:4:", "has no row for the default 'SEScore (default, `mpnet-v2`)'")
    absent = _page("Some text.")
    absent.require_row("SEScore", "metric (full sets)")
    _fails(absent, "no table headed 'metric (full sets)'")


def test_builders_words_and_file_ids_stay_in_the_raw_data_appendix():
    _fails(_page("Chosen on the select half."), "docs/results/x.md:4:", "'select half'")
    _fails(_page("The lever passes."), "'lever'")
    _fails(_page(*collapsible("every arm", ["x"])), "'arm'")
    _fails(_page("As issue #56 asked."), "builders' word")
    _fails(_page("## `sescore_ablation_mpnet_select` (select half)"), "file id or variant code in a heading")
    validate(_page("Cf. Lightning-AI/torchmetrics#2728 upstream; warm use.", "", "## Speed {#mars-length}"))
    page = _page()
    page.appendix()
    page.add("## `sescore_ablation_mpnet_select`")
    _fails(page, "file id or variant code in a heading")  # the sidebar lists the appendix's headings too
    assert APPENDIX.startswith("## ")


def test_render_pages_refuses_a_defective_page(tmp_path, monkeypatch):
    """The generator runs the checks on every page it renders, so a renderer's defect fails the build."""

    def broken(files: ResultFiles) -> Page:
        page = Page("results/sescore.md")
        page.add("# SEScore", "", "| a | b |", "|---|---|---|", "")
        return page

    monkeypatch.setattr(results_sescore, "render", broken)
    with pytest.raises(PageError, match=r"docs/results/sescore\.md:5: a table row of 3 cells"):
        results_pages.render_pages(ResultFiles(tmp_path))


def _write(root: Path, stem: str, doc: dict) -> None:
    path = root / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_a_result_value_with_a_local_path_reaches_the_page_shortened(tmp_path):
    _write(tmp_path, "brand_new_bench", {"model": "/work/main/sescore/checkpoints/x", "rows": [{"a": "/tmp/y.yaml"}]})
    index = results_pages.render_pages(ResultFiles(tmp_path))[0].text()
    assert "sescore/checkpoints/x" in index and "/work/" not in index and "/tmp/" not in index


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {page.path: page.text() for page in results_pages.render_pages(ResultFiles())}


def test_the_default_rows_are_on_the_real_pages(pages):
    from sescore.shipped import DEFAULT_NAME

    sescore = pages["results/sescore.md"]
    head = sescore[: sescore.index(APPENDIX)]
    assert head.index(f"| SEScore default (`{DEFAULT_NAME}`) |") < head.index("## Correlation per data set")
    # the published-set runs predate the default: its rows say so instead of leaving it out
    assert f"| SEScore `{DEFAULT_NAME}` (the default) | not measured |" in sescore
    assert f"`{DEFAULT_NAME}` (the default) minus each baseline | not measured |" in sescore
    stress = pages["results/stress.md"]
    row = next(line for line in stress.splitlines() if line.startswith(f"| SEScore (default, `{DEFAULT_NAME}`) |"))
    assert "on the first 100 of 1,000 items; full set not run" in row  # the partial run the table used to miss
    assert "stress-curves-sample25-wmt21-deen-menli-sescore-lm-ratio" in stress  # the packaged mix's curves


def test_the_quality_headline_means_are_the_per_set_rows_means(pages):
    """Each headline mean tau-like is the mean of its row's cells in the per-set table (BERTScore's over five
    sets, TED en-de included)."""
    files = ResultFiles()
    quality = pages["results/quality.md"].splitlines()
    per_set = {line.split(" | ")[0][2:]: line for line in quality if line.startswith("| ")}
    labels = dict(results_quality.REPORT_FILES)
    for row in results_quality.headline_rows(files):
        label = labels.get(row["stem"])
        if label is None:
            continue
        cells = per_set[label].split(" | ")[1:-2]
        values = [float(c.split(" ")[0]) for c in cells if c != "-"]
        assert len(values) == len(row["taus"])
        assert abs(statistics.mean(values) - statistics.mean(row["taus"].values())) < 0.0011
