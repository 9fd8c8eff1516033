"""How docs/gen/results_pages.py turns result files into pages: rows from their files, references checked, defaults
checked, unknown files still shown, README blocks replaced in place, figures drawn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))

import results_pages  # noqa: E402
import results_plots  # noqa: E402
import results_quality  # noqa: E402
from results_markdown import FIGURE, cell, generic  # noqa: E402
from results_store import ResultFiles  # noqa: E402

MINILM = "bertscore|encoder:packaged:minilm@x"


def _devmix(difference: float, versus: str = MINILM, signature: str = "m", sets: tuple = ()) -> dict:
    names = sets or ("ted_zhen", "summeval_rel", "summeval_con", "webnlg")
    rows = [
        {
            "set": name,
            "tau_like_a": 0.1 + difference,
            "tau_like_b": 0.1,
            "difference": difference,
            "system_pearson_a": 0.5,
            "system_pearson_b": 0.4,
        }
        for name in names
    ]
    return {
        "metric": "m",
        "label_a": "a",
        "label_b": "b",
        "half": "report",
        "signature": signature,
        "versus_signature": versus,
        "sets": rows,
        "mean": {"difference": difference, "ci95": [difference - 0.01, difference + 0.01], "share_a_not_better": 0.25},
    }


def _write(root: Path, stem: str, doc: dict) -> None:
    path = root / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_the_report_half_table_reads_every_row_from_its_file_and_refuses_a_different_reference(tmp_path):
    files = ResultFiles(tmp_path)
    assert results_quality.report_table(files) == []  # no result file: no table, not an empty one
    details = {"default (minilm-v2)": _devmix(0.02), "no_rank_seeds_own_w0.5": _devmix(-0.03)}
    _write(tmp_path, "sescore_default_ablations_report", {"details": details})
    _write(tmp_path, "devmix_chrf_report", _devmix(0.01))
    lines = results_quality.report_table(ResultFiles(tmp_path))
    assert lines[2].startswith("| chrF |") and "| +0.010 [+0.000, +0.020] | 25.0% | 0.500 |" in lines[2]
    assert lines[3].startswith("| SEScore `minilm-v2`") and "0.120 (+0.020)" in lines[3]
    assert lines[4].startswith("| `minilm-v2`'s recipe w/o ranking loss") and "0.070 (-0.030)" in lines[4]
    assert lines[5] == (
        "| BERTScore-MiniLM (the reference of every row) | 0.100 | 0.100 | 0.100 | 0.100 | - | - | 0.400 |"
    )
    _write(tmp_path, "devmix_bleu_report", _devmix(-0.1, versus="bertscore|encoder:other"))
    with pytest.raises(ValueError, match="against different references"):
        results_quality.report_table(ResultFiles(tmp_path))
    (tmp_path / "devmix_bleu_report.json").unlink()
    _write(tmp_path, "sescore_default_ablations_report", {"details": {"other": details["default (minilm-v2)"]}})
    with pytest.raises(ValueError, match="has none of the arms"):
        results_quality.report_table(ResultFiles(tmp_path))


def test_a_headline_row_must_have_measured_the_current_default(tmp_path):
    from sescore.shipped import DEFAULT_NAME

    _write(tmp_path, "sescore_default_report_vs_minilm", _devmix(0.03, signature=f"sescore|ckpt:{DEFAULT_NAME}@ab"))
    _write(tmp_path, "devmix_chrf_report", _devmix(0.01))
    lines = results_quality.headline_table(ResultFiles(tmp_path), lambda metric: f"{metric}.md")
    assert len(lines) == 4 and lines[2].startswith("| [SEScore (default checkpoint")
    assert "| 0.130 | +0.030 [+0.020, +0.040] | 25.0% |" in lines[2] and lines[3].startswith("| [chrF](chrf.md)")
    _write(tmp_path, "sescore_default_report_vs_minilm", _devmix(0.03, signature="sescore|ckpt:retired@ab"))
    with pytest.raises(ValueError, match="rerun it with the default"):
        results_quality.headline_table(ResultFiles(tmp_path), str)


def test_pages_render_from_an_almost_empty_results_folder_and_show_unknown_files(tmp_path):
    """A benchmark not run yet gives no section, and a file no page knows lands on the index as it is."""
    _write(tmp_path, "brand_new_bench", {"rows": [{"what": "ours", "seconds": 1.5}], "notes": ["a note"]})
    pages = results_pages.render_pages(ResultFiles(tmp_path))
    index = pages[0].text()
    assert [p.path for p in pages][0] == "results/index.md" and "brand_new_bench.json" in index
    assert "| ours | 1.500 |" in index and "- a note" in index
    assert all(page.text().count("# ") >= 1 for page in pages)


def test_readme_blocks_replace_only_what_is_between_their_markers():
    readme = (
        "intro\n<!-- generated:metrics-table -->\nold\n<!-- /generated:metrics-table -->\nmiddle\n"
        "<!-- generated:headline-results -->\n<!-- /generated:headline-results -->\nend\n"
    )
    blocks = {"metrics-table": "| new |", "headline-results": "| head |\n\ntext", "absent": "x"}
    updated = results_pages.with_blocks(readme, blocks)
    assert updated == (
        "intro\n<!-- generated:metrics-table -->\n| new |\n<!-- /generated:metrics-table -->\nmiddle\n"
        "<!-- generated:headline-results -->\n| head |\n\ntext\n<!-- /generated:headline-results -->\n"
        "end\n"
    )
    assert results_pages.readme_block(updated, "headline-results") == "| head |\n\ntext"
    assert results_pages.readme_block(updated, "absent") is None
    assert results_pages.with_blocks(updated, blocks) == updated


def test_cells_and_generic_rendering_keep_every_number():
    assert cell(0.0001234) == "1.2e-04" and cell(12.3456) == "12.346" and cell(None) == ""
    assert cell([0.01, -0.02], "ci95") == "[+0.010, -0.020]" and cell([1, 2], "seeds") == "1, 2"
    assert cell("a|b") == "a\\|b" and cell(True) == "yes"
    lines = generic({"n": 3, "rows": [{"a": 1}], "deep": {"x": [{"y": 1}]}, "notes": ["why"]})
    text = "\n".join(lines)
    assert "| a |" in text and "| n | 3 |" in text and '"deep"' in text and "- why" in text


def test_figures_are_markers_in_the_text_and_png_when_drawn():
    page = results_pages.Page("results/x.md")
    page.figure(
        "x-forest",
        "an interval plot",
        lambda: results_plots.forest([("a", 0.01, [-0.01, 0.03]), ("b", -0.02, None)], "t", "difference"),
    )
    assert FIGURE.findall(page.text()) == [("x-forest", "an interval plot")]
    assert page.figures["x-forest"]().startswith(b"\x89PNG")
    grid = results_plots.verdict_grid(["t1", "t2"], ["m"], {("t1", "m"): "pass", ("t2", "m"): "FAIL"}, "g")
    assert grid.startswith(b"\x89PNG")


def test_readme_compare_example_is_what_the_command_prints(tmp_path):
    """The README's `compare` example: its command, run, prints the table row the README shows."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "-evaluate compare " in line or "evaluate.py compare " in line), None
    )
    assert start is not None, (
        "the README lost its `compare` example (`nlgmetrics-evaluate compare ...`), which this test runs"
    )
    command = lines[start]
    while command.endswith("\\"):
        start += 1
        command = command[:-1] + " " + lines[start].strip()
    args = command.split("compare", 1)[1].split()
    if "--markdown" in args:
        del args[args.index("--markdown") : args.index("--markdown") + 2]
    table = tmp_path / "table.md"
    subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), "compare", *args, "--markdown", str(table)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    written = table.read_text().splitlines()
    header = next(i for i, line in enumerate(written) if line.startswith("| A | B |"))  # the pairs' table
    rows = [line for line in written[header + 2 :] if line.startswith("| ")]
    assert rows and all(row in lines for row in rows), table.read_text()


def test_a_confirmation_verdict_is_written_on_the_sescore_page(tmp_path):
    import results_sescore

    confirm = {
        "lever": "v2_mpnet_nli_inputs",
        "difference": 0.031,
        "not_better": 0.042,
        "bar": {
            "file": "bench/results/sescore_ablation_mpnet_select.json",
            "row": "v2_mpnet_own_w0.5",
            "difference": 0.0235,
        },
        "rule": "difference > the bar's and not better in under 5% of resamples (docs/guides/experiments.md, step 2)",
        "passes": True,
    }
    row = {**_devmix(0.031), "half": "select"}
    _write(
        tmp_path,
        "sescore_lever_x_mpnet_select",
        {"half": "select", "details": {"v2_mpnet_nli_inputs": row}, "confirm": confirm},
    )
    text = results_sescore.render(ResultFiles(tmp_path)).text()
    assert "`v2_mpnet_nli_inputs` +0.0310, not better in 4.2% of resamples, against `v2_mpnet_own_w0.5` +0.0235" in text
    assert "**becomes the candidate**" in text and "[the rule](../guides/experiments.md)" in text
    _write(
        tmp_path,
        "sescore_lever_x_mpnet_select",
        {"half": "select", "details": {}, "confirm": {**confirm, "passes": False}},
    )
    assert "**does not pass**" in results_sescore.render(ResultFiles(tmp_path)).text()


def _report_file(tmp_path, not_better: float) -> None:
    row = {**_devmix(0.019), "half": "report"}
    row["mean"] = {"difference": 0.019, "ci95": [-0.01, 0.05], "share_a_not_better": not_better}
    _write(tmp_path, "sescore_lever_x_mpnet_report", {"half": "report", "details": {"v2_mpnet_nli_inputs": row}})


def test_the_report_verdict_follows_a_passed_confirmation(tmp_path):
    import results_sescore

    confirm = {
        "lever": "v2_mpnet_nli_inputs",
        "difference": 0.05,
        "not_better": 0.001,
        "bar": {"file": "f.json", "row": "v2_mpnet_own_w0.5", "difference": 0.0235},
        "rule": "step 2",
        "passes": False,
    }
    _write(tmp_path, "sescore_lever_x_mpnet_select", {"half": "select", "details": {}, "confirm": confirm})
    _report_file(tmp_path, 0.105)
    assert "step 3" not in results_sescore.render(ResultFiles(tmp_path)).text()  # no candidate, no verdict
    _write(
        tmp_path,
        "sescore_lever_x_mpnet_select",
        {"half": "select", "details": {}, "confirm": {**confirm, "passes": True}},
    )
    text = results_sescore.render(ResultFiles(tmp_path)).text()
    assert "`v2_mpnet_nli_inputs` +0.0190 [-0.0100, +0.0500], not better in 10.5% of resamples: **does not" in text
    # the interval [-0.010, +0.050] spreads 0.060 / 3.92 = 0.0153; 1.645 of those is 0.025
    assert "spread (about 0.0153), a lead shows as not better in under 5% of resamples from about +0.025 on" in text
    # (0.0252 / 0.0190) ** 2 = 1.76: the items a lead of +0.019 needs, relative to the report half's
    assert "If this lead (+0.0190) held, it would show with about 1.8 times the report half's judged items." in text
    _report_file(tmp_path, 0.049)
    assert (
        "not better in 4.9% of resamples: **replaces the default**"
        in results_sescore.render(ResultFiles(tmp_path)).text()
    )
