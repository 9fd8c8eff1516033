"""docs/gen/cli_reference.py: every command of both console commands gets a section, parsers are caught without
running the command, and help text cannot break the Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))

import cli_reference  # noqa: E402


def test_every_command_has_a_section():
    from nlgmetrics.cli.evaluate import make_parser
    from nlgmetrics.registry import train_commands

    text = cli_reference.render().text()
    commands = next(a for a in make_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name in commands:
        assert f"### {name} {{#evaluate-{name}}}" in text
    for name in train_commands():
        assert f"### {name} {{#train-{name}}}" in text
    assert "#### synthesize merge {#train-synthesize-merge}" in text
    assert "| `--nli-model NLI_MODEL` |" in text and "(default: packaged:nli-mpnet)" in text


def test_a_parser_is_caught_before_the_command_runs():
    ran = []

    def main(argv: list[str]) -> int:
        parser = argparse.ArgumentParser(prog="x")
        parser.add_argument("--flag", help="a <metric> | b*")
        parser.parse_args(argv)
        ran.append(argv)
        return 0

    parser = cli_reference.captured_parser(main, [])
    assert parser.prog == "x" and ran == []
    assert "| `--flag FLAG` | a &lt;metric&gt; \\| b\\* |" in cli_reference.options_tables(parser)
    with pytest.raises(RuntimeError, match="without parsing"):
        cli_reference.captured_parser(lambda argv: 0, [])
