"""The results pages' blind-spot tables are the committed stress reports, rendered by bench/stress_table.py."""

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


def test_every_cell_names_a_committed_report_or_says_not_run():
    for name in stress_table.TABLES:
        table = stress_table.render(name)
        assert table.count("\n") == len(stress_table.TABLES[name]["rows"]) + 1
