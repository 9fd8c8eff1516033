"""One input policy for every metric's Python API, the CLI and the torchmetrics classes.

Unchecked, bad items fail deep inside a tokenizer or a model (``None`` as a hypothesis, a number, a lone UTF-16
surrogate from a broken decoder) or are scored silently (empty strings). Every public entry point calls
``check_pairs`` first, so the error names the list and the position the user has to fix.

The policy, stated once:
- candidates and references are strings; a reference may also be a non-empty list/tuple of strings;
- an empty or whitespace-only string is an error (an empty candidate has no meaning to score; ``evaluate.py
  correlate`` skips such rows of judged data and lists them in its JSON instead);
- text must be encodable as UTF-8 (no lone surrogates);
- sources are strings or ``None``; an empty source is allowed (a reference-based metric ignores it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


class InputError(ValueError):
    """Bad user input (file, line counts, item types); ``evaluate.py`` prints it as one line and exits 1."""


def check_text(name: str, text: Any, allow_empty: bool = False) -> str:
    """``text`` itself if it is a usable string, else an ``InputError`` that starts with ``name``."""
    if not isinstance(text, str):
        raise InputError(f"{name} is {type(text).__name__}, not a string")
    if not allow_empty and not text.strip():
        raise InputError(f"{name} is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InputError(f"{name} has a lone surrogate at character {error.start} (not valid Unicode text)") from None
    return text


def validate_texts(name: str, texts: Sequence[Any], allow_empty: bool = False) -> list[str]:
    """Every item a non-empty string; the error names the list and the first bad position."""
    if texts is None or isinstance(texts, (str, bytes)):
        what = "None" if texts is None else "one string"
        raise InputError(f"{name}: expected a list of strings, got {what}")
    return [check_text(f"{name}[{index}]", text, allow_empty) for index, text in enumerate(texts)]


def check_same_length(**named: Sequence[Any] | None) -> int:
    """All given lists have one length; returns it."""
    lengths = {k: len(v) for k, v in named.items() if v is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise InputError(f"mismatched lengths: {detail}")
    return next(iter(lengths.values()), 0)


def check_references(name: str, refs: Sequence[Any]) -> list[list[str]]:
    """Each item a string or a non-empty list of strings -> one list of references per item."""
    if refs is None or isinstance(refs, (str, bytes)):
        what = "None" if refs is None else "one string"
        raise InputError(f"{name}: expected a list (one reference or list of references per item), got {what}")
    out = []
    for index, item in enumerate(refs):
        if isinstance(item, str):
            out.append([check_text(f"{name}[{index}]", item)])
        elif isinstance(item, (list, tuple)):
            if not item:
                raise InputError(f"{name}[{index}] is an empty list of references")
            out.append([check_text(f"{name}[{index}][{j}]", r) for j, r in enumerate(item)])
        else:
            raise InputError(f"{name}[{index}] is {type(item).__name__}, not a string or a list of strings")
    return out


def check_sources(name: str, srcs: Sequence[Any] | None) -> list[str | None] | None:
    """Sources are optional: ``None`` for the whole list or for single items; empty strings are allowed."""
    if srcs is None:
        return None
    if isinstance(srcs, (str, bytes)):
        raise InputError(f"{name}: expected a list of strings, got one string")
    return [None if s is None else check_text(f"{name}[{index}]", s, allow_empty=True) for index, s in enumerate(srcs)]


def check_pairs(
    hyps: Sequence[Any],
    refs: Sequence[Any],
    srcs: Sequence[Any] | None = None,
    *,
    hyp_name: str = "hyps",
    ref_name: str = "refs",
    src_name: str = "srcs",
) -> tuple[list[str], list[list[str]], list[str | None] | None]:
    """Validate a scoring call: candidates, one reference (list) per candidate, optional sources.

    Returns plain lists (references always as lists) so callers never see tuples, generators or tensors.
    """
    hyp_list = validate_texts(hyp_name, hyps)
    ref_lists = check_references(ref_name, refs)
    src_list = check_sources(src_name, srcs)
    check_same_length(**{hyp_name: hyp_list, ref_name: ref_lists, src_name: src_list})
    return hyp_list, ref_lists, src_list


def positive_int(text: str) -> int:
    """argparse type for counts (``--limit``, ``--devices``): 0 or -3 is a one-line usage error, not a traceback."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def read_input_bytes(path: str | Path, what: str, wanted: str = "") -> bytes:
    """A whole input file, for a reader that judges it line by line (``input_lines``). A missing path, a folder
    or a file of nothing but whitespace is an ``InputError`` naming ``what`` and the path, with ``wanted`` (what
    the file should hold) where that helps the user."""
    path = Path(path)
    hint = f"; {wanted}" if wanted else ""
    try:
        data = path.read_bytes()
    except FileNotFoundError as error:
        raise InputError(f"{what} {path}: no such file") from error
    except IsADirectoryError as error:
        raise InputError(f"{what} {path}: is a directory{hint}") from error
    if not data.strip():
        raise InputError(f"{what} {path}: file is empty{hint}")
    return data


def input_lines(data: bytes) -> list[bytes]:
    """A file's lines as bytes, each decoded by its reader: a UTF-8 byte-order mark is not text and a final
    newline does not start a line."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines
