"""The Python API page (docs/reference/api.md) documents what it lists: every object named there has a docstring,
and each docstring's Returns section reads as one return value.

mkdocstrings renders the page with griffe, which reads the source without importing it; these tests read the same
way, so they are fast and need no model. Why the Returns check: in a Google-style docstring a Returns line at the
section's own indentation starts a new returned value, so a wrapped description that is not indented further
renders as two rows, and a description starting ``Word :role:`` is read as a value named ``Word``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")

REPO = Path(__file__).resolve().parents[1]
API_PAGE = REPO / "docs" / "reference" / "api.md"


def documented_names(text: str) -> list[str]:
    """The dotted names the page renders: each ``::: name`` directive, or its ``members:`` list when it has one."""
    names = []
    for directive in re.finditer(r"^::: (\S+)\n((?:[ \t]+.*\n?)*)", text, re.MULTILINE):
        members = re.findall(r"^\s+- (\S+)\s*$", directive.group(2), re.MULTILINE)
        names += [f"{directive.group(1)}.{member}" for member in members] or [directive.group(1)]
    return names


class Source:
    """griffe objects by dotted name, each module read once (griffe reads the source; nothing is imported)."""

    def __init__(self) -> None:
        logging.getLogger("griffe").setLevel(logging.ERROR)
        self.loader = griffe.GriffeLoader(search_paths=[str(REPO)], docstring_parser=griffe.Parser.google)
        self.modules: dict[str, object] = {}

    def find(self, name: str):
        """The longest prefix of ``name`` that is a module of the checkout, then its members."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            base = REPO.joinpath(*parts[:cut])
            if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
                if module not in self.modules:
                    self.modules[module] = self.loader.load(module)
                found = self.modules[module]
                for part in parts[cut:]:
                    found = found.members[part]
                return found
        raise LookupError(name)


@pytest.fixture(scope="module")
def source() -> Source:
    return Source()


def rendered(obj):
    """The object and, for a class, its public methods (mkdocstrings shows those that have a docstring)."""
    yield obj
    if obj.is_class:
        for name, member in obj.members.items():
            if not name.startswith("_") and member.is_function and member.docstring is not None:
                yield member


def return_problems(obj) -> list[str]:
    problems = []
    for section in obj.docstring.parse(griffe.Parser.google) if obj.docstring else []:
        if section.kind.value not in ("returns", "yields"):
            continue
        if len(section.value) > 1:
            problems.append(f"{obj.path}: {section.kind.value} split into {len(section.value)} rows")
        problems += [f"{obj.path}: {section.kind.value} named {r.name!r}" for r in section.value if r.name]
    return problems


def test_the_page_lists_what_it_renders():
    text = "::: a.b.f\n\n::: a.mod\n    options:\n      members:\n        - g\n        - h\n\n::: a.c\n"
    assert documented_names(text) == ["a.b.f", "a.mod.g", "a.mod.h", "a.c"]
    names = documented_names(API_PAGE.read_text(encoding="utf-8"))
    assert len(names) >= 60 and "nlgmetrics.metaeval.correlation.kendall_b" in names


NAMES = documented_names(API_PAGE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_every_object_on_the_api_page_has_a_docstring(source, name):
    obj = source.find(name)
    assert obj.docstring is not None and obj.docstring.value.strip(), (
        f"{name} is on {API_PAGE.name} without a docstring"
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_returns_section_on_the_api_page_is_one_value(source, name):
    problems = [p for obj in rendered(source.find(name)) for p in return_problems(obj)]
    assert not problems, problems


def test_the_returns_check_finds_split_and_named_returns(tmp_path):
    (tmp_path / "sample_docstrings.py").write_text(
        'def split():\n    """Split.\n\n    Returns:\n        The names; wrapped\n        badly.\n    """\n\n\n'
        'def named():\n    """Named.\n\n    Returns:\n        Its :class:`X`.\n    """\n\n\n'
        'def fine():\n    """Fine.\n\n    Returns:\n        The names; wrapped\n            well.\n    """\n',
        encoding="utf-8",
    )
    module = griffe.GriffeLoader(search_paths=[str(tmp_path)], docstring_parser=griffe.Parser.google).load(
        "sample_docstrings"
    )
    assert return_problems(module["split"]) == ["sample_docstrings.split: returns split into 2 rows"]
    assert return_problems(module["named"]) == ["sample_docstrings.named: returns named 'Its'"]
    assert return_problems(module["fine"]) == []
