"""Every `evaluate.py` command the README and docs/ show parses with today's options: a renamed or removed flag fails here
instead of in a reader's shell."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from nlgmetrics.cli.evaluate import make_parser

REPO = Path(__file__).resolve().parents[1]


def readme_commands(path: Path = REPO / "README.md") -> list[str]:
    """Lines that run evaluate.py, continuation lines joined, optional `[...]` parts and comments dropped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    commands, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*(\.venv/bin/)?python evaluate\.py ", line):
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            line = re.sub(r"\s#.*$", "", line)
            while re.search(r"\[[^\[\]]*\]", line):
                line = re.sub(r"\[[^\[\]]*\]", "", line)
            commands.append(line.split("evaluate.py", 1)[1])
        i += 1
    return commands


def test_every_readme_evaluate_command_parses():
    commands = readme_commands()
    assert len(commands) >= 10, commands
    commands += [c for doc in sorted((REPO / "docs").rglob("*.md")) for c in readme_commands(doc)]
    parser = make_parser()
    for command in commands:
        args = parser.parse_args(shlex.split(command))
        assert args.command, command
    summary = [c for c in commands if "--task summarization" in c]
    assert summary and parser.parse_args(shlex.split(summary[0])).task == "summarization"
