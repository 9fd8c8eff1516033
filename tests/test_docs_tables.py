"""The README's MENLI and SEScore result tables are the ones docs/tables.py renders from docs/results (no hand-typed
number)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_readme_menli_tables_match_the_rendered_results():
    rendered = subprocess.run([sys.executable, str(REPO / "docs" / "tables.py")], capture_output=True, text=True,
                              check=True).stdout
    rows = [line for line in rendered.splitlines() if line.startswith("| ") and not line.startswith("| metric ")]
    assert len(rows) >= 10, rendered
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README rows differ from docs/tables.py: {missing}"
    assert any("nli-mpnet" in row for row in rows)


def test_readme_sescore_tables_match_the_rendered_results():
    rendered = subprocess.run([sys.executable, str(REPO / "docs" / "tables.py"), "sescore"], capture_output=True,
                              text=True, check=True).stdout
    rows = [line for line in rendered.splitlines() if line.startswith("| ") and not line.startswith("| metric")
            and not line.startswith("| SEScore minus")]
    assert len(rows) >= 16, rendered
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README rows differ from docs/tables.py sescore: {missing}"
    assert any(row.startswith("| SEScore `minilm-v2` (three models") for row in rows)
    assert any(row.startswith("| SEScore default (`mpnet-v2`") for row in rows)


def test_readme_compare_example_is_what_the_command_prints(tmp_path):
    table = tmp_path / "table.md"
    subprocess.run([sys.executable, str(REPO / "evaluate.py"), "compare", "--metric", "chrf", "--hyps",
                    str(REPO / "examples" / "hyps.txt"), str(REPO / "examples" / "hyps_terse.txt"), "--refs",
                    str(REPO / "examples" / "refs.txt"), "--names", "demo,terse", "--markdown", str(table)],
                   capture_output=True, text=True, check=True)
    pair_rows = [line for line in table.read_text().splitlines() if line.startswith("| demo | terse |")]
    assert len(pair_rows) == 1, table.read_text()
    assert pair_rows[0] in (REPO / "README.md").read_text(encoding="utf-8").splitlines()


def _devmix_result(difference: float, versus: str = "bertscore|encoder:packaged:minilm@x") -> dict:
    sets = [{"set": name, "tau_like_a": 0.1 + difference, "tau_like_b": 0.1, "difference": difference,
             "system_pearson_a": 0.5, "system_pearson_b": 0.4}
            for name in ("ted_zhen", "summeval_rel", "summeval_con", "webnlg")]
    return {"versus_signature": versus, "sets": sets,
            "mean": {"difference": difference, "ci95": [difference - 0.01, difference + 0.01],
                     "share_a_not_better": 0.25}}


def test_the_report_half_table_reads_every_row_from_its_file_and_refuses_a_different_baseline(tmp_path, monkeypatch):
    import json

    monkeypatch.syspath_prepend(str(REPO / "docs"))
    import tables

    monkeypatch.setattr(tables, "BENCH", tmp_path)
    assert tables.sescore_report_table() == []  # no result file: no table, not an empty one
    details = {"default (minilm-v2)": _devmix_result(0.02), "no_rank_seeds_own_w0.5": _devmix_result(-0.03)}
    (tmp_path / "sescore_default_ablations_report.json").write_text(json.dumps({"details": details}))
    (tmp_path / "devmix_chrf_report.json").write_text(json.dumps(_devmix_result(0.01)))
    lines = tables.sescore_report_table()
    assert lines[2].startswith("| SEScore `minilm-v2`") and "| +0.020 [+0.010, +0.030] | 25.0% | 0.500 |" in lines[2]
    assert lines[3].startswith("| `minilm-v2`'s recipe w/o ranking loss") and "0.070 (-0.030)" in lines[3]
    assert lines[4].startswith("| chrF |") and lines[5].startswith("| BERTScore-MiniLM") and len(lines) == 6
    assert lines[5].endswith("| 0.100 | 0.100 | 0.100 | 0.100 | - | - | 0.400 |")
    (tmp_path / "sescore_default_report_vs_minilm.json").write_text(json.dumps(_devmix_result(0.04)))
    with_default = tables.sescore_report_table()  # a model on another encoder: first, against the same BERTScore
    assert with_default[2].startswith("| SEScore default (`mpnet-v2`") and "0.140 (+0.040)" in with_default[2]
    assert with_default[3:] == lines[2:]
    (tmp_path / "sescore_default_report_vs_minilm.json").write_text(json.dumps(_devmix_result(0.04, "bertscore|mp")))
    with pytest.raises(SystemExit, match="sescore_default_report_vs_minilm: its BERTScore"):
        tables.sescore_report_table()
    (tmp_path / "sescore_default_report_vs_minilm.json").unlink()
    (tmp_path / "devmix_bleu_report.json").write_text(json.dumps(_devmix_result(-0.1, versus="bertscore|other")))
    with pytest.raises(SystemExit, match="devmix_bleu_report: its BERTScore"):
        tables.sescore_report_table()
    (tmp_path / "sescore_default_ablations_report.json").write_text(json.dumps({"details": {"other": details["default (minilm-v2)"]}}))
    with pytest.raises(SystemExit, match="has none of the rows"):
        tables.sescore_report_table()
