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

from nlgmetrics.inputs import InputError, check_same_length, input_lines, read_input_bytes, validate_texts  # noqa: F401 - re-exported


def read_lines(path: str | Path, what: str = "file") -> list[str]:
    """One segment per line, strict UTF-8; empty files and empty lines are errors (they shift alignments)."""
    lines = input_lines(read_input_bytes(path, what))
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
    """Rows of a JSON Lines file (``.jsonl``, or gzipped ``.jsonl.gz``), or of a ``.json`` file holding one list of
    rows (the form the toolkit's own small sample sets ship in).

    Args:
        path: the file.
        what: what the file is, for error messages.

    Returns:
        The rows, each a dict; an InputError naming the file and line for anything unreadable.
    """
    path = Path(path)
    if path.suffix == ".json":
        return _read_json_rows(path, what)
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


def _read_json_rows(path: Path, what: str) -> list[dict]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise InputError(f"{what} {path}: no such file") from error
    except UnicodeDecodeError as error:
        raise InputError(f"{what} {path}: not valid UTF-8") from error
    except json.JSONDecodeError as error:
        raise InputError(f"{what} {path}: not valid JSON ({error.msg}, line {error.lineno})") from error
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise InputError(f"{what} {path}: expected a JSON list of row objects (or JSON Lines in a .jsonl file)")
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_parts(path: str | Path) -> list[Path]:
    """Delete ``.NAME.<pid>.*.part`` siblings left by killed writers (their process is gone); returns them.

    A live writer's file is kept: its pid is in the name, so two processes never remove each other's work.
    """
    path = Path(path)
    removed = []
    for part in path.parent.glob(f".{path.name}.*.part"):
        pid_text = part.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
                removed.append(part)
    return removed


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temporary sibling, then rename: readers see the old file or the complete new one.

    The finished file gets the mode a plain ``open`` would give (0666 minus the umask), not ``mkstemp``'s 0600,
    and temporary files of killed earlier writers to the same path are removed first.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename makes it the file
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def usable_rows(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Rows that can be scored, and the skipped ones with the reason.

    Judged data sometimes holds empty system outputs; the Python API rejects empty candidates, and ``correlate``
    applies the same policy by leaving such rows out and listing them in its result (never scored silently).
    """
    keep, skipped = [], []
    for row in rows:
        refs = [r for r in row["refs"] if isinstance(r, str) and r.strip()]
        reason = "empty hyp" if not row["hyp"].strip() else ("no non-empty reference" if not refs else None)
        if reason:
            skipped.append(
                {"item_id": row.get("item_id"), "lp": row.get("lp"), "system": row.get("system"), "reason": reason}
            )
        else:
            keep.append(row if len(refs) == len(row["refs"]) else {**row, "refs": refs})
    return keep, skipped
