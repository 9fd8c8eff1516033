"""Every command line the README and the other Markdown files show parses with today's options, and the user docs
stay readable by a user: a renamed or removed flag fails here instead of in a reader's shell.

A command is collected in any of the forms the docs use: the console commands after ``pip install``
(``nlgmetrics-evaluate ...``, ``nlgmetrics-train ...``), the same from a checkout's virtual environment
(``.venv/bin/nlgmetrics-evaluate ...``) and the checkout scripts (``python evaluate.py ...``,
``.venv/bin/python train.py ...``)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from nlgmetrics.cli.evaluate import make_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
README_MAX_LINES = 250
# the two programs and the names a Markdown line may call them by
PROGRAMS = {"evaluate": ("evaluate.py", "nlgmetrics-evaluate"), "train": ("train.py", "nlgmetrics-train")}


def _command_start(program: str) -> re.Pattern:
    """A line that runs ``program``: ``[$ ][.venv/bin/]python evaluate.py `` or
    ``[$ ][.venv/bin/]nlgmetrics-evaluate ``."""
    script, console = PROGRAMS[program]
    return re.compile(
        rf"^\s*(?:\$\s+)?(?:(?:\.venv/bin/)?python {re.escape(script)}|(?:\.venv/bin/)?{re.escape(console)})"
        rf"(?=\s)"
    )


def readme_commands(path: Path = README, program: str = "evaluate") -> list[str]:
    """The arguments of every line that runs ``program`` (``evaluate`` or ``train``), continuation lines joined,
    optional ``[...]`` parts and comments dropped."""
    start = _command_start(program)
    lines = path.read_text(encoding="utf-8").splitlines()
    commands, i = [], 0
    while i < len(lines):
        line = lines[i]
        found = start.match(line)
        if found:
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1].rstrip() + " " + lines[i].strip()
            arguments = line[found.end() :]
            arguments = re.sub(r"\s#.*$", "", arguments)
            while re.search(r"\[[^\[\]]*\]", arguments):
                arguments = re.sub(r"\[[^\[\]]*\]", "", arguments)
            arguments = arguments.strip()
            if re.match(r"[a-z]", arguments):  # a subcommand, not a placeholder (COMMAND ...) or --help/--version
                commands.append(arguments)
        i += 1
    return commands


def markdown_files() -> list[Path]:
    """The project's own Markdown (README, docs/, the packages' READMEs), not the virtual environment's.

    The skipped folders are pruned before the walk enters them (an rglob over .venv's site-packages took ~0.5 s)."""
    found = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if d not in {".venv", "runs", ".git", "site"}]
        found += [Path(folder) / f for f in files if f.endswith(".md")]
    return sorted(found)


def test_commands_are_collected_in_every_form(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "\n".join(
            [
                "nlgmetrics-evaluate score --metric chrf --hyps h.txt --refs r.txt [--scores s.jsonl]  # a comment",
                ".venv/bin/nlgmetrics-evaluate compare --metric bleu --hyps a.txt b.txt \\",
                "    --refs r.txt",
                "$ python evaluate.py correlate --metric chrf --data judged.jsonl",
                ".venv/bin/python evaluate.py adversarial --metric menli --data adv.jsonl",
                "nlgmetrics-train pack --checkpoint a --out b",
                "`nlgmetrics-evaluate score` in prose is not a command line; nor is nlgmetrics-evaluate-something",
                "nlgmetrics-evaluate COMMAND --help",
                "nlgmetrics-train --version",
            ]
        ),
        encoding="utf-8",
    )
    assert readme_commands(doc, "evaluate") == [
        "score --metric chrf --hyps h.txt --refs r.txt",
        "compare --metric bleu --hyps a.txt b.txt --refs r.txt",
        "correlate --metric chrf --data judged.jsonl",
        "adversarial --metric menli --data adv.jsonl",
    ]
    assert readme_commands(doc, "train") == ["pack --checkpoint a --out b"]


OWN_METRIC_GUIDE = REPO / "docs" / "guides" / "own-metric.md"


def documented_files(path: Path = OWN_METRIC_GUIDE) -> dict[str, str]:
    """The files a guide shows whole: each fenced block whose introducing paragraph starts with a file name in
    backticks (`` `pyproject.toml`: ``)."""
    text = path.read_text(encoding="utf-8")
    files = {}
    for block in re.finditer(r"^```[a-z]*\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        paragraph = text[: block.start()].rstrip().split("\n\n")[-1]
        named = re.match(r"`([\w./-]+\.(?:py|toml))`", paragraph)
        if named:
            files[named.group(1)] = block.group(1)
    return files


@pytest.fixture
def documented_plugin(tmp_path, monkeypatch):
    """The metric package of the own-metric guide, written out from its code blocks and registered as its
    pyproject.toml declares, as if pip-installed: the guide's commands then parse, and its code runs."""
    import importlib
    import sys

    import tomllib

    from nlgmetrics import registry

    files = documented_files()
    assert {
        "pyproject.toml",
        "word_overlap_metric/__init__.py",
        "word_overlap_metric/registration.py",
        "word_overlap_metric/scorer.py",
    } <= set(files), sorted(files)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    entry_points = tomllib.loads(files["pyproject.toml"])["project"]["entry-points"][registry.ENTRY_POINT_GROUP]
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [m for m in sys.modules if m.startswith("word_overlap_metric")]:
        monkeypatch.delitem(sys.modules, module)
    specs = {}
    for value in entry_points.values():
        module, _, attribute = value.partition(":")
        spec = getattr(importlib.import_module(module), attribute)
        specs[spec.name] = spec
    built_in = registry._registered()
    monkeypatch.setattr(registry, "_registered", lambda: {**built_in, **specs})
    return specs


def test_the_documented_metric_package_works(documented_plugin):
    from nlgmetrics import list_metrics, load_metric

    assert "word-overlap" in list_metrics()
    metric = load_metric("word-overlap", min_word_length=4)
    assert metric.score(["The cat sat on the mat."], [["A cat sat on a mat.", "The cat is on the mat."]]) == [1.0]
    assert metric.signature() == "word-overlap|case:lower|min-len:4|v:0.1.0"
    assert load_metric("word-overlap", case_sensitive=True).score(["The cat"], ["the cat"]) == [0.5]


def test_every_markdown_evaluate_command_parses(documented_plugin):
    readme = readme_commands()
    assert len(readme) >= 5, readme
    assert any(c.startswith("score ") for c in readme) and any(c.startswith("stress ") for c in readme), readme
    commands = readme + [c for doc in markdown_files() if doc != README for c in readme_commands(doc)]
    parser = make_parser()
    for command in commands:
        args = parser.parse_args(shlex.split(command))
        assert args.command, command
    summary = [c for c in commands if "--task summarization" in c]
    assert summary and parser.parse_args(shlex.split(summary[0])).task == "summarization"
    assert {shlex.split(c)[0] for c in commands} >= {
        "score",
        "compare",
        "correlate",
        "adversarial",
        "stress",
        "stress-report",
        "make-adversarial",
        "robustness",
        "self-bias",
    }


class _Parsed(Exception):
    """Raised by the patched argparse once a command line parsed: the test stops there, before any work starts."""


def _stop_after_parsing(monkeypatch) -> None:
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)


def _fit_parses(argv: list[str]) -> bool:
    """LightningCLI's ``--print_config`` parses the whole recipe, overrides included, prints it and exits."""
    from sescore.regressor.cli import fit_main

    printed = io.StringIO()
    with (
        pytest.raises(SystemExit) as stop,
        contextlib.redirect_stdout(printed),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        fit_main([*argv, "--print_config"])
    return stop.value.code in (0, None) and "trainer:" in printed.getvalue()


def test_every_markdown_train_command_parses(monkeypatch, tmp_path):
    """``train.py nli/synthesize/pack/ensemble`` lines must get past their argparse parser, ``train.py fit`` lines
    past LightningCLI's."""
    from nlgmetrics.cli.train import main

    # options files name ${NLGMETRICS_DATA}, expanded before parsing: any existing folder will do to parse
    monkeypatch.setenv("NLGMETRICS_DATA", str(tmp_path))

    commands = [c for path in markdown_files() for c in readme_commands(path, "train")]
    assert len(commands) >= 8 and {shlex.split(c)[0] for c in commands} >= {
        "synthesize",
        "fit",
        "pack",
        "ensemble",
        "nli",
    }, commands
    assert any(c.startswith("fit ") for c in readme_commands(README, "train")), "the README shows a fit"
    for command in commands:
        argv = shlex.split(command)
        if argv[0] == "fit":
            assert _fit_parses(argv[1:]), command
            continue
        with monkeypatch.context() as patch:
            _stop_after_parsing(patch)
            with pytest.raises(_Parsed):
                main(argv)


def test_the_train_command_check_fails_on_a_flag_that_does_not_exist(monkeypatch):
    """The checks above can fail: a removed flag stops argparse or LightningCLI with exit 2 instead of parsing."""
    from nlgmetrics.cli.train import main

    _stop_after_parsing(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        main(["pack", "--checkpoint", "a", "--out", "b", "--no-such-flag"])
    assert stop.value.code == 2
    assert not _fit_parses(["--config", "configs/sescore/fit_offline.yaml", "--trainer.no_such_option", "4"])


def test_the_evaluate_command_check_fails_on_a_flag_that_does_not_exist():
    with pytest.raises(SystemExit) as stop, contextlib.redirect_stderr(io.StringIO()):
        make_parser().parse_args(shlex.split(readme_commands()[0]) + ["--no-such-flag"])
    assert stop.value.code == 2


# -- the user docs ------------------------------------------------------------------------------------------------
def test_the_readme_is_a_short_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


def home_page(readme: str) -> str:
    """docs/index.md is the README with its links made relative to docs/ (the site's home page)."""
    return readme.replace("](docs/", "](")


HOME = REPO / "docs" / "index.md"


def test_the_home_page_is_the_readme():
    """One front door: the site's home page says what the README says. After editing the README, or after a script
    filled its generated tables, ``python tests/test_readme_commands.py`` writes docs/index.md again."""
    assert HOME.read_text(encoding="utf-8") == home_page(README.read_text(encoding="utf-8")), (
        "docs/index.md differs from the README: run python tests/test_readme_commands.py"
    )


def test_the_readme_marks_its_generated_tables():
    """The metric and results tables are rendered from bench/results/*.json between these markers."""
    text = README.read_text(encoding="utf-8")
    for name in ("metrics-table", "headline-results"):
        start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        assert text.count(start) == 1 and text.count(end) == 1 and text.index(start) < text.index(end), name
        assert "|---" in text[text.index(start) : text.index(end)], f"{name}: the markers hold no table"


# Words a user cannot know: the project's data folder beside the checkout, tracker and work-log references, and
# time- or machine-relative statements that are wrong for every reader but the author.
INTERNAL = {
    "the project's shared data folder (say: your judged JSONL, or examples/)": re.compile(r"\.\./shared"),
    "an issue number": re.compile(r"\bissue\s+#?\d+", re.IGNORECASE),
    "a work-log stop number": re.compile(r"\bstop\s+#?\d+", re.IGNORECASE),
    "'this machine'": re.compile(r"\bthis machine\b", re.IGNORECASE),
    "'today'": re.compile(r"\btoday\b", re.IGNORECASE),
}
# Pages other people are still moving into the generated results and reference pages; each is expected to fail
# (strict: once a page is clean, its entry must go, so the check covers it again).
PENDING = {}


def user_docs() -> list[Path]:
    """README.md and every page under docs/ but the changelog (history may name its dates)."""
    pages = sorted((REPO / "docs").rglob("*.md"))
    return [README] + [p for p in pages if p != REPO / "docs" / "changelog.md"]


def internal_words(text: str) -> list[str]:
    return [f"{what}: {found.group(0)!r}" for what, pattern in INTERNAL.items() for found in pattern.finditer(text)]


def test_the_internal_word_check_finds_what_it_looks_for():
    assert len(internal_words("See issue 13, stop 34 and ../shared/data: today on this machine.")) == 5
    assert internal_words("The issue is the stop sign; shared data; a machine of today's kind.") == ["'today': 'today'"]


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(
            p,
            id=str(p.relative_to(REPO)),
            marks=(
                [pytest.mark.xfail(strict=True, reason=PENDING[str(p.relative_to(REPO))])]
                if str(p.relative_to(REPO)) in PENDING
                else []
            ),
        )
        for p in user_docs()
    ],
)
def test_user_docs_use_no_internal_words(page):
    found = internal_words(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(REPO)}: {found}"


# -- citations of README sections ---------------------------------------------------------------------------------
# README, "The shipped default" / README's "SEScore" section / (`README.md`, "Cost ...") - a quoted section name
README_CITATION = re.compile(r"README(?:\.md`?)?(?:'s)?,?\s+(?:section\s+)?\"([^\"]+)\"")
# a link into the README or into the site's copy of it: README.md#anchor, ../README.md#anchor, index.md#anchor
README_LINK = re.compile(r"\]\((?:\.\./)*(?:README|index)\.md#([^)\s]+)\)")


def readme_headings(readme: str | None = None) -> set[str]:
    """The README's section headings, as written (backticks dropped, whitespace collapsed)."""
    text = README.read_text(encoding="utf-8") if readme is None else readme
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)  # a '# comment' in code is no heading
    return {" ".join(m.group(1).replace("`", "").split()) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def heading_anchors(headings: set[str]) -> set[str]:
    """The anchors a heading gets: the site's (Python-Markdown toc) and GitHub's (which keeps repeated hyphens)."""
    anchors = set()
    for heading in headings:
        words = re.sub(r"[^\w\s-]", "", heading).strip().lower()
        anchors |= {re.sub(r"[-\s]+", "-", words), words.replace(" ", "-")}
    return anchors


def broken_readme_citations(text: str, headings: set[str]) -> list[str]:
    """Quoted README section names and README anchors in ``text`` that the README does not have."""
    anchors = heading_anchors(headings)
    cited = [" ".join(m.group(1).split()) for m in README_CITATION.finditer(text)]
    bad = [f'README, "{name}"' for name in cited if name not in headings]
    return bad + [f"README#{m.group(1)}" for m in README_LINK.finditer(text) if m.group(1) not in anchors]


def test_the_readme_citation_check_finds_what_it_looks_for():
    headings = readme_headings("# Tool\n\n## Quick start\n\n```bash\n# not a heading\n```\n### `fit` options\n")
    assert headings == {"Tool", "Quick start", "fit options"}
    text = (
        'See README, "Quick start", the README\'s "fit options" section, (README, "The shipped\ndefault"), '
        "[a](../index.md#quick-start), [b](README.md#fit-options) and [c](index.md#how-they-were-built)."
    )
    assert broken_readme_citations(text, headings) == ['README, "The shipped default"', "README#how-they-were-built"]


@pytest.mark.parametrize("page", [pytest.param(p, id=str(p.relative_to(REPO))) for p in user_docs()])
def test_user_docs_cite_only_readme_sections_that_exist(page):
    """A page that sends the reader to a README section (by name or by link) names one the README has: the README
    became a short front door, and what its old sections held now lives on the documentation pages."""
    bad = broken_readme_citations(page.read_text(encoding="utf-8"), readme_headings())
    assert not bad, f"{page.relative_to(REPO)} cites README sections that do not exist: {bad}"


if __name__ == "__main__":  # write the site's home page from the README
    HOME.write_text(home_page(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {HOME.relative_to(REPO)}")
