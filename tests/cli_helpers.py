"""Helpers shared by the command-line tests (test_evaluate_cli, test_compare, test_user_defects)."""

from __future__ import annotations

import pytest

from nlgmetrics.cli import evaluate


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, list[str], list[str]]:
    """``evaluate.main(argv)`` in-process: (exit code, stdout lines, stderr lines)."""
    code = evaluate.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.strip().splitlines(), captured.err.strip().splitlines()
