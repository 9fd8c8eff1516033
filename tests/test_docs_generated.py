"""The committed generated documentation is what its generators render from today's parsers and result files.

The results pages (docs/results/*.md), the command-line reference (docs/reference/cli.md) and the README's
generated blocks are committed so they read on GitHub; these tests fail when a result file, a flag or a metric's
declaration changed without the page being rendered again (the message names the command that does it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))

import cli_reference  # noqa: E402
import results_pages  # noqa: E402
from results_store import ResultFiles  # noqa: E402


@pytest.fixture(scope="module")
def rendered() -> tuple[list, ResultFiles]:
    files = ResultFiles()
    return results_pages.render_pages(files), files


def test_the_results_pages_are_current(rendered):
    pages, _ = rendered
    stale = [page.path for page in pages if (REPO / "docs" / page.path).read_text(encoding="utf-8") != page.text()]
    assert not stale, f"{stale} differ from bench/results: run python docs/gen/results_pages.py --write"


def test_the_cli_reference_is_current():
    page = cli_reference.render()
    committed = (REPO / "docs" / page.path).read_text(encoding="utf-8")
    assert committed == page.text(), "docs/reference/cli.md is stale: run python docs/gen/cli_reference.py --write"


def test_the_readme_blocks_are_current():
    """Every block the generator renders is in the README and current (a README that lost a block fails: the
    headline numbers and the metrics table would silently stop being checked)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = results_pages.readme_blocks(ResultFiles())
    present = {name: results_pages.readme_block(readme, name) for name in blocks}
    missing = [name for name, text in present.items() if text is None]
    assert not missing, (
        f"the README lost its generated blocks {missing} (<!-- generated:NAME --> ... <!-- /generated:NAME -->): "
        "put the markers back and run python docs/gen/results_pages.py --readme"
    )
    stale = [name for name, text in present.items() if text != blocks[name]]
    assert not stale, f"README blocks {stale} are stale: run python docs/gen/results_pages.py --readme"


def test_every_result_file_is_shown_on_a_page(rendered):
    """Every result file is read by some page (one nobody wrote a section for lands on the index as it is), and the
    index says where each is shown."""
    pages, files = rendered
    assert set(files.stems()) <= set(files.used)
    index = pages[0].text()
    missing = [stem for stem in files.stems() if f"`{files.display(stem)}`" not in index]
    assert not missing, missing


def test_the_real_tables_keep_their_rows(rendered):
    """What the README's hand-placed tables used to hold, now on the pages: the MENLI and SEScore runs."""
    pages, _ = rendered
    # rows of collapsed sections are indented under their marker: a row is a row wherever it sits
    by_path = {page.path: [line.lstrip() for line in page.text().splitlines()] for page in pages}
    menli = [line for line in by_path["results/menli.md"] if line.startswith("| menli")]
    assert len(menli) >= 10 and any("nli-mpnet" in line for line in menli)
    sescore = [line for line in by_path["results/sescore.md"] if line.startswith("| SEScore")]
    assert len(sescore) >= 8 and any(line.startswith("| SEScore `minilm-v2` (three models") for line in sescore)
    quality = by_path["results/quality.md"]
    assert any(line.startswith("| SEScore default (`mpnet-v2`)") for line in quality)
    assert any(line.startswith("| BERTScore-MiniLM (the reference of every row)") for line in quality)
