"""What every console command shares: help that shows defaults, ``--version``, quiet mode, clean exits."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any, Callable

from nlgmetrics.helpformat import DefaultsHelpFormatter


def version_string() -> str:
    from nlgmetrics.metaeval.scorer import toolkit_version

    return f"nlgmetrics {toolkit_version()}"


def finish_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Defaults in every (sub)command's help, and ``--version`` on the top-level parser."""
    version = version_string()
    parser.add_argument("--version", action="version", version=version)
    stack = [parser]
    while stack:
        current = stack.pop()
        current.formatter_class = DefaultsHelpFormatter
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    child.add_argument("--version", action="version", version=version)
                    stack.append(child)
    return parser


def add_devices_option(parser: argparse.ArgumentParser) -> None:
    """``--devices N``: score in N processes (identical scores), for the subcommands that score many rows."""
    from nlgmetrics.inputs import positive_int

    parser.add_argument(
        "--devices",
        type=positive_int,
        default=1,
        help="score in N processes (one per GPU with --device cuda, else CPU processes); the scores "
        "are identical to one process's",
    )


def json_safe(value: Any) -> Any:
    """NaN (e.g. a correlation over constant scores) becomes null: strict JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_report(report: dict, json_path: str | None, markdown_path: str | None, render: Callable[[dict], str]) -> None:
    """The result as indented JSON and as Markdown (``render``), each written atomically, when asked for; the
    JSON without this machine's paths (``nlgmetrics.resources.portable``): results are read on other machines."""
    from nlgmetrics.metaeval import atomic_write
    from nlgmetrics.resources import portable

    if json_path:
        with atomic_write(json_path) as handle:
            handle.write(json.dumps(json_safe(portable(report)), indent=1, ensure_ascii=False) + "\n")
    if markdown_path:
        with atomic_write(markdown_path) as handle:
            handle.write(render(report))


OUTPUT_OPTIONS = ("out", "json", "markdown", "scores", "rows")  # argparse dests that name files or folders to write


def unwritable_reason(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be written (created, with its missing parent folders), or None when it can.

    Checked before any model loads, so a typo in an output path costs a second, not the scoring run.
    """
    target = Path(path).expanduser()
    if target.exists():
        return None if os.access(target, os.W_OK) else f"{target} is not writable"
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, so {target} cannot be created under it"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {target}: the folder {parent} is not writable"
    return None


def check_outputs(args: argparse.Namespace) -> None:
    """Raise ``InputError`` naming the first output option (``--out``, ``--json``, ...) that cannot be written."""
    from nlgmetrics.metaeval import InputError

    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)) and value:
            reason = unwritable_reason(value)
            if reason:
                raise InputError(f"--{dest}: {reason}")
