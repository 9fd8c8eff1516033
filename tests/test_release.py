"""The release path: one version (pyproject.toml), read everywhere else from the installed metadata, and a
changelog section for what is being released."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _pyproject_version() -> str:
    found = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    assert found, "pyproject.toml has no [project] version line"
    return found.group(1)


def test_the_version_is_written_once_and_signatures_read_it():
    import mars
    import nlgmetrics
    from nlgmetrics.metaeval.scorer import toolkit_version

    version = _pyproject_version()
    assert nlgmetrics.__version__ == version == mars.__version__ == toolkit_version(), (
        "the installed metadata differs from pyproject.toml: reinstall (pip install --no-deps -e .)"
    )
    for path in [*REPO.glob("nlgmetrics/**/*.py"), *REPO.glob("sescore/**/*.py"), *REPO.glob("menli/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"__version__\s*=\s*['\"]", text), f"{path}: a second, hand-written version"


def test_the_changelog_has_a_section_for_the_next_release():
    headings = re.findall(r"^## (.+)$", (REPO / "docs" / "changelog.md").read_text(encoding="utf-8"), re.MULTILINE)
    version = _pyproject_version()
    assert "Unreleased" in headings or any(h.startswith(version) for h in headings), (
        f"docs/changelog.md needs an 'Unreleased' or '{version}' section"
    )
