"""Every `evaluate.py` and `train.py` command the README and the other Markdown files show parses with today's options:
a renamed or removed flag fails here instead of in a reader's shell."""
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


def readme_commands(path: Path = REPO / "README.md", program: str = "evaluate.py") -> list[str]:
    """Lines that run ``program``, continuation lines joined, optional `[...]` parts and comments dropped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    commands, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(rf"^\s*(\.venv/bin/)?python {re.escape(program)} ", line):
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            line = re.sub(r"\s#.*$", "", line)
            while re.search(r"\[[^\[\]]*\]", line):
                line = re.sub(r"\[[^\[\]]*\]", "", line)
            commands.append(line.split(program, 1)[1])
        i += 1
    return commands


def markdown_files() -> list[Path]:
    """The project's own Markdown (README, docs/, the packages' READMEs), not the virtual environment's.

    The skipped folders are pruned before the walk enters them (an rglob over .venv's site-packages took ~0.5 s)."""
    found = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if d not in {".venv", "runs", ".git"}]
        found += [Path(folder) / f for f in files if f.endswith(".md")]
    return sorted(found)


def test_every_readme_evaluate_command_parses():
    commands = readme_commands()
    assert len(commands) >= 10, commands
    commands += [c for doc in markdown_files() if doc != REPO / "README.md" for c in readme_commands(doc)]
    parser = make_parser()
    for command in commands:
        args = parser.parse_args(shlex.split(command))
        assert args.command, command
    summary = [c for c in commands if "--task summarization" in c]
    assert summary and parser.parse_args(shlex.split(summary[0])).task == "summarization"


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
    with pytest.raises(SystemExit) as stop, contextlib.redirect_stdout(printed), \
            contextlib.redirect_stderr(io.StringIO()):
        fit_main([*argv, "--print_config"])
    return stop.value.code in (0, None) and "trainer:" in printed.getvalue()


def test_every_markdown_train_command_parses(monkeypatch):
    """``train.py nli/synthesize/pack/ensemble`` lines must get past their argparse parser, ``train.py fit`` lines
    past LightningCLI's."""
    from nlgmetrics.cli.train import main

    commands = [c for path in markdown_files() for c in readme_commands(path, "train.py")]
    assert len(commands) >= 8 and {shlex.split(c)[0] for c in commands} >= {"synthesize", "fit", "pack", "ensemble",
                                                                          "nli"}, commands
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
