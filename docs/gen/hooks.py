"""MkDocs hooks: check that the generated pages are current, and draw the results pages' figures into the site.

Why here: the generated pages (``docs/results/*.md``, ``docs/reference/cli.md``) are committed, so the build reads
them like any page; what the build adds is (1) a failure when a results page fails its generator's checks
(``results_markdown.validate``: a malformed table, a figure marked but not drawn, a local path, a default's row
missing), (2) a warning, which ``--strict`` turns into a failure, when one differs from what its generator renders
now, and (3) the figures, which are never committed: each page marks its figures with a comment, and the build
draws them and puts an image in the marker's place.

Drawing every figure takes some 15 CPU seconds, so figures are cached under ``.cache/docs-figures/`` by a hash of
the generator code and the result files the page read: an unchanged page costs nothing on the next build.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [p for p in (str(HERE), str(REPO)) if p not in sys.path]

import cli_reference  # noqa: E402
import results_pages  # noqa: E402
from results_markdown import FIGURE, Page, PageError, figure_path  # noqa: E402
from results_store import ResultFiles  # noqa: E402

log = logging.getLogger("mkdocs.hooks.generated")
CACHE = REPO / ".cache" / "docs-figures"
# code a figure depends on besides docs/gen: the benchmarks' plot functions and the self-bias plot
FIGURE_CODE = [*sorted((REPO / "bench").glob("*.py")), REPO / "nlgmetrics" / "cli" / "commands" / "selfbias.py"]
_pages: dict[str, Page] = {}
# Sphinx roles in docstrings (``:func:`load_metric` ``) that mkdocstrings leaves as text before the code span
SPHINX_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):(?=<code>)")


def _code_hash() -> str:
    digest = hashlib.sha256()
    for path in [*sorted(HERE.glob("*.py")), *FIGURE_CODE]:
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _page_hash(code: str, files: ResultFiles, page: Page) -> str:
    """What a page's figures depend on: the code and the content of every result file the page read."""
    digest = hashlib.sha256(code.encode())
    for stem in sorted(s for s, shown in files.used.items() if shown == page.path):
        digest.update(stem.encode() + files.path(stem).read_bytes())
    return digest.hexdigest()[:16]


def _figures(page: Page, key: str) -> dict[str, bytes]:
    """The page's figures, from the cache when the same code drew them from the same files."""
    folder = CACHE / page.path.replace("/", "_") / key
    if folder.parent.is_dir():  # figures of earlier code or data are never read again
        for old in folder.parent.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    out = {}
    for name, draw in page.figures.items():
        cached = folder / f"{name}.png"
        if cached.is_file():
            out[name] = cached.read_bytes()
            continue
        out[name] = draw()
        folder.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(out[name])
    return out


def _stale(page: Page, docs_dir: Path, command: str) -> None:
    path = docs_dir / page.path
    if not path.is_file() or path.read_text(encoding="utf-8") != page.text():
        log.warning(f"{page.path} is not what its generator renders now: run `{command}` and commit the result")


def on_files(files: Any, config: Any) -> Any:
    """Render the generated pages, warn about stale ones, and add the results pages' figures to the site."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    docs_dir = Path(config["docs_dir"])
    results = ResultFiles()
    try:
        pages = results_pages.render_pages(results)  # validates every page: a defect fails the build here
    except PageError as error:
        raise PluginError(f"a generated results page fails its checks:\n{error}") from error
    for page in pages:
        _stale(page, docs_dir, "python docs/gen/results_pages.py --write")
    _stale(cli_reference.render(), docs_dir, "python docs/gen/cli_reference.py --write")
    code = _code_hash()
    _pages.clear()
    for page in pages:
        _pages[page.path] = page
        folder = page.path.rsplit("/", 1)[0]
        for name, png in _figures(page, _page_hash(code, results, page)).items():
            files.append(File.generated(config, f"{folder}/{figure_path(name)}", content=png))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put each figure in place of its marker comment (on GitHub the marker stays an invisible comment)."""
    if page.file.src_uri not in _pages:
        return markdown
    return FIGURE.sub(lambda m: f"![{m.group(2)}]({figure_path(m.group(1))})", markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Drop the Sphinx role prefixes the docstrings carry, so the API page reads ``load_metric``, not
    ``:func: load_metric``."""
    return SPHINX_ROLE.sub("", html)
