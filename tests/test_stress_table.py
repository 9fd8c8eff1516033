"""The README's blind-spot tables are the committed stress reports, rendered by bench/stress_table.py."""
from __future__ import annotations

import json

import pytest

from bench import stress_table


def _report(root, folder, summary):
    (root / folder).mkdir(parents=True)
    (root / folder / "report.json").write_text(json.dumps({"summary": summary}))


def test_cells_come_from_the_named_report_and_missing_folders_say_not_run(tmp_path):
    _report(tmp_path, "a", {"bleu": {"passed": 20, "failed": 3, "too_few": 1, "not_applicable": 0}})
    assert stress_table.cell_text(tmp_path, ("a", "bleu")) == "20/23"  # too few / not applicable are not judged
    assert stress_table.cell_text(tmp_path, ("b", "bleu")) == stress_table.NOT_RUN
    assert stress_table.cell_text(tmp_path, None) == "-"
    with pytest.raises(KeyError, match="no metric 'chrf' in its summary \\(has bleu\\)"):
        stress_table.cell_text(tmp_path, ("a", "chrf"))


def test_write_readme_replaces_only_the_marked_blocks(tmp_path, monkeypatch):
    _report(tmp_path / "stress", "a", {"m": {"passed": 1, "failed": 1}})
    monkeypatch.setattr(stress_table, "TABLES", {"t": {"columns": ["M"], "rows": {"set": [("a", "m")]}}})
    readme = tmp_path / "README.md"
    readme.write_text("before\n" + stress_table.marked_block("t", "old table") + "\nafter\n")
    assert stress_table.write_readme(readme, tmp_path / "stress") == ["t"]
    table = "| data | M |\n|---|---|\n| set | 1/2 |"
    assert readme.read_text() == "before\n" + stress_table.marked_block("t", table) + "\nafter\n"
    assert stress_table.write_readme(readme, tmp_path / "stress") == []


def test_the_readme_tables_match_the_committed_reports():
    readme = stress_table.README.read_text(encoding="utf-8")
    for name in stress_table.TABLES:
        assert stress_table.readme_block(name, readme) == stress_table.render(name), (
            f"README block '{name}' is stale: run python bench/stress_table.py --write-readme")
