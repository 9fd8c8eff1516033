"""Reading segments and judged data with errors a user can act on, and writing outputs atomically.

Every failure names the file and line. Outputs are written to a temporary file and renamed only when complete,
so an interrupted run never leaves a half-written file that looks finished.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence


class InputError(ValueError):
    """Bad user input (file, line counts, item types); ``evaluate.py`` prints it as one line and exits 1."""


def validate_texts(name: str, texts: Sequence[Any], allow_empty: bool = False) -> list[str]:
    """Every item a non-empty string; the error names the list and the first bad position."""
    if isinstance(texts, str):
        raise InputError(f"{name}: expected a list of strings, got one string")
    out = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"{name}[{index}] is {type(text).__name__}, not a string")
        if not allow_empty and not text.strip():
            raise InputError(f"{name}[{index}] is empty")
        out.append(text)
    return out


def check_same_length(**named: Sequence[Any] | None) -> int:
    """All given lists have one length; returns it."""
    lengths = {k: len(v) for k, v in named.items() if v is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise InputError(f"mismatched lengths: {detail}")
    return next(iter(lengths.values()), 0)


def read_lines(path: str | Path, what: str = "file") -> list[str]:
    """One segment per line, strict UTF-8; empty files and empty lines are errors (they shift alignments)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as error:
        raise InputError(f"{what} {path}: no such file") from error
    except IsADirectoryError as error:
        raise InputError(f"{what} {path}: is a directory") from error
    if not raw.strip():
        raise InputError(f"{what} {path}: file is empty")
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for number, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as error:
            raise InputError(f"{what} {path}:{number}: not valid UTF-8 (byte {error.start})") from error
        if not text.strip():
            raise InputError(f"{what} {path}:{number}: empty line")
        out.append(text)
    return out


def read_jsonl(path: str | Path, what: str = "data") -> list[dict]:
    path = Path(path)
    rows = []
    opener = gzip.open if path.suffix == ".gz" else open  # the DARR pairs ship gzipped
    try:
        handle = opener(path, "rt", encoding="utf-8")
    except FileNotFoundError as error:
        raise InputError(f"{what} {path}: no such file") from error
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise InputError(f"{what} {path}:{number}: not valid JSON ({error.msg})") from error
                if not isinstance(row, dict):
                    raise InputError(f"{what} {path}:{number}: expected a JSON object")
                rows.append(row)
        except UnicodeDecodeError as error:
            raise InputError(f"{what} {path}: not valid UTF-8") from error
        except (OSError, EOFError) as error:  # a truncated or non-gzip .gz file
            raise InputError(f"{what} {path}: cannot be read ({error})") from error
    if not rows:
        raise InputError(f"{what} {path}: no rows")
    return rows


def first_items(rows: Sequence[dict], limit: int | None, skip: int = 0) -> list[dict]:
    """The rows of the first ``limit`` distinct items (in file order) after skipping ``skip`` items, with all
    their systems. ``skip`` keeps a dev slice used for model selection out of the numbers reported."""
    if skip < 0:
        raise InputError(f"cannot skip a negative number of items ({skip})")
    if limit is None and not skip:
        return list(rows)
    order: dict = {}
    for row in rows:
        order.setdefault((row.get("lp"), row.get("item_id")), len(order))
    stop = len(order) if limit is None else skip + limit
    return [r for r in rows if skip <= order[(r.get("lp"), r.get("item_id"))] < stop]


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temporary sibling, then rename: readers see the old file or the complete new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
