"""The documentation reads offline and installs as written: no font service, no install line for a package that
is not published."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_the_theme_requests_no_web_fonts():
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    assert config["theme"]["font"] == "false", "mkdocs.yml: theme.font must be false (fonts from the internet)"


def test_no_page_tells_users_to_pip_install_an_unpublished_package():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    bad = [
        f"{page.relative_to(REPO)}:{n}"
        for page in pages
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.match(r"^\s*pip install nlgmetrics(\s|$)", line)
    ]
    assert not bad, f"'pip install nlgmetrics' (not on PyPI) in {bad}; use 'pip install .' in a checkout"
