"""The documentation's results pages and the README's generated blocks, rendered from ``bench/results/**/*.json``.

Why: a number typed into two pages drifts apart. A number lives in its JSON, the file the benchmark
wrote; this script renders every results page (``docs/results/*.md``) and the README's ``metrics-table`` and
``headline-results`` blocks from those files. The pages are committed, so they read on GitHub and a changed number
shows in a diff, and ``tests/test_docs_generated.py`` fails when one differs from what this renders now. Figures
are not committed: the docs build draws them (``docs/gen/hooks.py``).

    python docs/gen/results_pages.py --write        # rewrite docs/results/*.md and the README's blocks
    python docs/gen/results_pages.py --readme       # only the README's blocks
    python docs/gen/results_pages.py --check        # exit 1 naming what is stale (what the test checks)
    python docs/gen/results_pages.py --out /tmp/r   # pages and figures into a folder, for a look without MkDocs
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(HERE), str(HERE.parents[1])) if p not in sys.path]

import results_mars  # noqa: E402
import results_menli  # noqa: E402
import results_quality  # noqa: E402
import results_sescore  # noqa: E402
import results_speed  # noqa: E402
import results_stress  # noqa: E402
from results_markdown import Lines, Page, collapsible, figure_path, generic, validate  # noqa: E402
from results_store import REPO, ResultFiles  # noqa: E402

DOCS = REPO / "docs"
README = REPO / "README.md"
# which results page tells a metric's story (default: the dev-mix quality page)
METRIC_PAGES = {"sescore": "sescore", "menli": "menli", "mars": "mars", "lm-ratio": "menli", "lm-likelihood": "speed"}
PAGE_TITLES = {
    "quality": "Quality on the dev mix",
    "speed": "Speed",
    "stress": "Blind spots",
    "menli": "MENLI",
    "sescore": "SEScore",
    "mars": "MARS",
}


def page_link(prefix: str) -> Callable[[str], str]:
    """metric -> the link to its results page, ``prefix`` being the path from the linking Markdown to docs/results/
    (``""`` on a results page, ``docs/results/`` in the README)."""
    return lambda metric: f"{prefix}{METRIC_PAGES.get(metric, 'quality')}.md"


def metrics_table(files: ResultFiles, prefix: str) -> Lines:
    """Every registered metric: what it measures, for which languages and under which licences (its registry
    declaration), its default setting's CPU speed (the speed benchmarks) and its results page.

    Args:
        files: the result files.
        prefix: where the results pages are, relative to the Markdown the table goes into.
    """
    from nlgmetrics.registry import list_metrics, metric_spec

    link = page_link(prefix)

    lines = [
        "| metric | what it measures | languages | licence (default models) | CPU speed (default setting, 2 threads) "
        "| results |",
        "|---|---|---|---|---|---|",
    ]
    sources = {}
    for name in list_metrics():
        spec = metric_spec(name)
        speed = results_speed.metric_speed(files, name)
        if speed:
            sources.setdefault(speed[1], []).append(name)
        page = METRIC_PAGES.get(name, "quality")
        measured = speed[0] if speed else "not measured"
        lines.append(
            f"| `{name}` | {spec.summary} | {spec.languages} | {spec.licence} | {measured} | "
            f"[{PAGE_TITLES[page]}]({link(name)}) |"
        )
    if sources:
        lines += [
            "",
            "Speeds are wall-clock throughput on a shared 2-core CPU, from "
            + "; ".join(f"`bench/results/{stem}.json` ({', '.join(names)})" for stem, names in sources.items())
            + f". Files from different sessions and texts do not compare: the [speed page]({prefix}speed.md) "
            "sets each metric against a peer measured in the same run.",
        ]
    return lines


def readme_blocks(files: ResultFiles) -> dict[str, str]:
    """The README's generated blocks (links relative to the repository root)."""
    link = page_link("docs/results/")
    headline = results_quality.headline_table(files, link)
    headline += [
        "",
        "Report half of the dev mix (nothing was chosen on it); each difference is the metric minus "
        "BERTScore-MiniLM on the same rows with a 95% paired item-bootstrap interval. More in "
        "[the results](docs/results/index.md).",
    ]
    return {"metrics-table": _wrapped(metrics_table(files, "docs/results/")), "headline-results": _wrapped(headline)}


def _wrapped(lines: Lines) -> str:
    """Table rows as they are, prose wrapped to the README's line length."""
    return "\n".join(
        line
        if line.startswith("|") or not line
        else textwrap.fill(line, width=118, break_long_words=False, break_on_hyphens=False)
        for line in lines
    )


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def readme_block(readme: str, name: str) -> str | None:
    """What the README holds between a block's markers (None when it has no such block)."""
    start, end = (re.escape(m) for m in _markers(name))
    found = re.search(f"{start}\n?(.*?)\n?{end}", readme, flags=re.S)
    return found.group(1) if found else None


def with_blocks(readme: str, blocks: dict[str, str]) -> str:
    """The README with every block it has replaced by its rendering; blocks it lacks are left out, not added."""
    for name, text in blocks.items():
        start, end = _markers(name)
        pattern = re.compile(f"{re.escape(start)}.*?{re.escape(end)}", flags=re.S)
        readme = pattern.sub(lambda _: f"{start}\n{text}\n{end}", readme)
    return readme


def _index(files: ResultFiles, pages: list[Page]) -> Page:
    """The results overview: the headline, the metrics, the pages, and (in the raw-data appendix) where every
    result file is shown (files no page claims are rendered there, so a new benchmark is on the site before anyone
    writes a section for it)."""
    page = Page("results/index.md")
    files.page = page.path
    link = page_link("")
    page.add(
        "# Results",
        "",
        "How well each metric agrees with people, how fast it runs and which deliberate errors it misses. Every "
        "number here was measured by one of the benchmarks in `bench/` and is read from the file it wrote; the "
        "figures are drawn from the same files.",
        "",
        "## Headline",
        "",
    )
    headline = results_quality.headline_table(files, link)
    if headline:
        from sescore.shipped import DEFAULT_NAME

        page.require_row(f"[SEScore (default checkpoint `{DEFAULT_NAME}`)", "metric (default setting)")
    page.add(
        headline,
        "",
        "The default metrics on the report half of the dev mix, each minus BERTScore-MiniLM on the same rows "
        "with a 95% paired item-bootstrap interval: [quality on the dev mix](quality.md) has every set and "
        "every comparison.",
        "",
        "## The metrics",
        "",
    )
    page.add(metrics_table(files, ""), "", "## The pages", "")
    page.add([f"- [{PAGE_TITLES[p.path.split('/')[-1][:-3]]}]({p.path.split('/')[-1]})" for p in pages], "")
    page.appendix("Which page shows each result file, and the files no page presents yet, as they are.")
    unused = files.unused()
    if unused:
        page.add("Result files no page presents yet, rendered as they are:", "")
        for stem in unused:
            page.add(collapsible(f"{stem}.json", generic(files.load(stem))))
    rows = [
        f"| `{files.display(stem)}` | [{PAGE_TITLES.get(shown.split('/')[-1][:-3], 'Results')}]"
        f"({shown.split('/')[-1]}) |"
        for stem, shown in sorted(files.used.items())
    ]
    page.add(
        collapsible(f"where each of the {len(rows)} result files is shown", ["| file | page |", "|---|---|", *rows])
    )
    return page


def render_pages(files: ResultFiles | None = None) -> list[Page]:
    """Every results page, the index first (rendered last: it lists what the others read), each checked by
    ``results_markdown.validate``.

    Raises:
        results_markdown.PageError: a page fails a check (the message names the page and the line).
    """
    files = files or ResultFiles()
    renderers = {
        "quality": lambda f: results_quality.render(f, page_link("")),
        "speed": results_speed.render,
        "stress": results_stress.render,
        "menli": results_menli.render,
        "sescore": results_sescore.render,
        "mars": results_mars.render,
    }
    pages = []
    for name, render in renderers.items():
        files.page = f"results/{name}.md"  # the reads that follow are shown on this page
        pages.append(render(files))
    pages = [_index(files, pages), *pages]
    for page in pages:  # a malformed table, a missing figure, a local path or a missing default fails here
        validate(page)
    return pages


def stale(pages: list[Page], readme: Path = README, blocks: dict[str, str] | None = None) -> list[str]:
    """The committed files that differ from a fresh rendering (pages, and README blocks the README has)."""
    out = [page.path for page in pages if _read(DOCS / page.path) != page.text()]
    text = _read(readme)
    for name, block in (blocks or {}).items():
        if text is not None and readme_block(text, name) not in (None, block):
            out.append(f"README.md block {name}")
    return out


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def write(
    pages: list[Page], blocks: dict[str, str] | None, root: Path = DOCS, readme: Path = README, figures: bool = False
) -> list[str]:
    """Write the pages (and their figures, for a preview) under ``root`` and the blocks into the README; returns
    what changed."""
    changed = []
    for page in pages:
        path = root / page.path
        if _read(path) != page.text():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page.text(), encoding="utf-8")
            changed.append(page.path)
        if figures:
            for name, draw in page.figures.items():
                image = path.parent / figure_path(name)
                image.parent.mkdir(parents=True, exist_ok=True)
                image.write_bytes(draw())
    if blocks is not None and readme.is_file():
        text = readme.read_text(encoding="utf-8")
        new = with_blocks(text, blocks)
        if new != text:
            readme.write_text(new, encoding="utf-8")
            changed.append("README.md")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite docs/results/*.md and the README's blocks")
    action.add_argument("--readme", action="store_true", help="rewrite only the README's generated blocks")
    action.add_argument("--check", action="store_true", help="exit 1 when a page or README block is stale")
    action.add_argument("--out", type=Path, help="write the pages with their figures under this folder instead")
    args = parser.parse_args(argv)
    files = ResultFiles()
    if args.readme:
        changed = write([], readme_blocks(files))
    elif args.out:
        changed = write(render_pages(files), None, root=args.out, figures=True)
    else:
        pages = render_pages(files)
        blocks = readme_blocks(files)
        if args.check:
            found = stale(pages, blocks=blocks)
            for name in found:
                print(f"stale: {name} (run python docs/gen/results_pages.py --write)")
            return 1 if found else 0
        changed = write(pages, blocks)
    print("changed: " + (", ".join(changed) if changed else "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
