"""The README's MENLI and SEScore result tables are the ones docs/tables.py renders from docs/results (no hand-typed
number)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    assert any(row.startswith("| SEScore (default") for row in rows)


def test_readme_compare_example_is_what_the_command_prints(tmp_path):
    table = tmp_path / "table.md"
    subprocess.run([sys.executable, str(REPO / "evaluate.py"), "compare", "--metric", "chrf", "--hyps",
                    str(REPO / "examples" / "hyps.txt"), str(REPO / "examples" / "hyps_terse.txt"), "--refs",
                    str(REPO / "examples" / "refs.txt"), "--names", "demo,terse", "--markdown", str(table)],
                   capture_output=True, text=True, check=True)
    pair_rows = [line for line in table.read_text().splitlines() if line.startswith("| demo | terse |")]
    assert len(pair_rows) == 1, table.read_text()
    assert pair_rows[0] in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
