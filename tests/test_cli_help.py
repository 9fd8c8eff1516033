"""What ``--help`` promises users: every option explained with its real default, an example per subcommand,
``--version`` everywhere, and one meaning per flag name across the commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from nlgmetrics.cli import evaluate, train
from nlgmetrics.registry import train_commands

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "gen"))
from cli_reference import LIGHTNING, captured_parser, modes_of  # noqa: E402

# what a flag name means wherever it appears, checked on its help text
MEANINGS = {
    "--out": "folder",  # files are --scores (JSONL), --json, --markdown, --rows
    "--quiet": "progress bars",
    "--scores": "JSONL",
}


def evaluate_parsers() -> dict[str, argparse.ArgumentParser]:
    commands = next(a for a in evaluate.make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {f"evaluate {name}": parser for name, parser in commands.choices.items()}


def train_parsers() -> dict[str, argparse.ArgumentParser]:
    out = {}
    for name, command in train_commands().items():
        if name in LIGHTNING:  # LightningCLI's own parser (its --help is Lightning's)
            continue
        for mode in [None, *modes_of(name)]:
            out[f"train {name}" + (f" {mode}" if mode else "")] = captured_parser(command, [mode] if mode else [])
    return out


PARSERS = {**evaluate_parsers(), **train_parsers()}


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_option_says_what_it_does_and_shows_its_real_default(name):
    parser = PARSERS[name]
    undocumented = [a.option_strings[0] for a in _options(parser) if not (a.help or "").strip()]
    assert undocumented == [], f"{name}: options without help"
    text = parser.format_help()
    for action in _options(parser):
        real = action.default
        if real in (None, False, argparse.SUPPRESS, "", []) or isinstance(action, argparse._VersionAction):
            continue
        assert f"(default: {real})" in " ".join(text.split()) or "%(default)" in action.help, (name, action.dest)
    assert "DEFAULT_" not in text, f"{name}: a code constant's name instead of its value"


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_subcommand_shows_an_example(name):
    epilog = PARSERS[name].epilog or ""
    assert "example" in epilog and ("nlgmetrics-evaluate" in epilog or "nlgmetrics-train" in epilog), name


@pytest.mark.parametrize("name", sorted(evaluate_parsers()))
def test_version_answers_on_every_evaluate_subcommand(name, capsys):
    with pytest.raises(SystemExit) as stop:
        evaluate.main([name.split(" ", 1)[1], "--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("nlgmetrics ")


@pytest.mark.parametrize("command", sorted(train_commands()))
def test_version_answers_on_every_train_command(command, capsys):
    assert train.main([command, "--version"]) == 0
    assert capsys.readouterr().out.startswith("nlgmetrics ")


def test_a_flag_name_means_one_thing_everywhere():
    seen: dict[str, list[str]] = {}
    for name, parser in PARSERS.items():
        for action in _options(parser):
            for flag in action.option_strings:
                if flag in MEANINGS:
                    assert MEANINGS[flag] in (action.help or ""), (name, flag, action.help)
                    seen.setdefault(flag, []).append(name)
    assert set(seen) == set(MEANINGS)  # the rule is checked on flags that exist
