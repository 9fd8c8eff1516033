"""The benchmark result files the results pages are rendered from, read by name.

Why a class and not ``json.load`` at each use: the index page lists every result file with the page that shows it,
and any file no page claimed is rendered there generically, so a new benchmark is on the site the day its JSON
lands. For that the pages' reads must be recorded in one place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"


class ResultFiles:
    """JSON files under one results folder, by their path relative to it without ``.json`` (a *stem*).

    Args:
        root: the folder (``bench/results`` unless a test gives its own).
    """

    def __init__(self, root: Path = RESULTS) -> None:
        self.root = Path(root)
        self.used: dict[str, str] = {}  # stem -> the page that rendered it
        self.page = "results/index.md"  # the page being rendered; set by the caller before each page
        self._cache: dict[str, Any] = {}

    def path(self, stem: str) -> Path:
        """Where a stem's file is (whether or not it exists)."""
        return self.root / f"{stem}.json"

    def load(self, stem: str) -> Any | None:
        """A file's content, or None when there is no such file (a benchmark not run yet gives no section)."""
        path = self.path(stem)
        if not path.is_file():
            return None
        self.used.setdefault(stem, self.page)
        if stem not in self._cache:
            self._cache[stem] = json.loads(path.read_text(encoding="utf-8"))
        return self._cache[stem]

    def require(self, stem: str) -> Any:
        """A file's content; a missing file is an error naming it (for files a page cannot do without)."""
        found = self.load(stem)
        if found is None:
            raise FileNotFoundError(f"{self.path(stem)}: result file missing (a results page needs it)")
        return found

    def stems(self, pattern: str = "**/*") -> list[str]:
        """Sorted stems of the JSON files matching a glob pattern (without ``.json``) under the root.

        ``*.stats.json`` files are normalisation ranges a benchmark saved for reuse, not results; ``scores.costs.json``
        beside a stress report is a resumable run's cost ledger (``parts.costs.json``: the same for a mix's parts),
        and ``scores.json``/``parts.json`` are such a run's per-row scores as earlier versions kept them.
        """
        skip = ("scores.json", "scores.costs.json", "parts.json", "parts.costs.json")
        found = [
            p
            for p in self.root.glob(f"{pattern}.json")
            if p.is_file() and not p.name.endswith(".stats.json") and p.name not in skip
        ]
        return sorted(str(p.relative_to(self.root).with_suffix("")).replace("\\", "/") for p in found)

    def unused(self) -> list[str]:
        """Stems of every result file no page has read yet."""
        return [stem for stem in self.stems() if stem not in self.used]

    def display(self, stem: str) -> str:
        """The file's path as a reader types it: relative to the repository when it is inside it, else relative
        to the results folder (a folder outside the repository, a test's, is no path a reader can use)."""
        path = self.path(stem)
        try:
            return str(path.relative_to(REPO))
        except ValueError:
            return str(path.relative_to(self.root))
