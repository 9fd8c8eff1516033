"""Counting inputs that a model window cut, so a result never silently hides that it scored part of a text.

Tokenizers truncate quietly (MENLI's NLI window is 128 tokens: most reference-summary pairs of a summarisation
set are longer). Model code reports each batch here; nothing is counted unless a caller opened
``track_truncation()`` (the CLI does, and writes the counts into its JSON and a warning to stderr), so library
users pay nothing. Only rows that fill the window are re-tokenised to tell "exactly at the limit" from "cut".
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

_SINK: ContextVar[dict[str, dict[str, int]] | None] = ContextVar("nlgmetrics_truncation", default=None)


@contextlib.contextmanager
def track_truncation() -> Iterator[dict[str, dict[str, int]]]:
    """Collect ``{where: {"truncated": n, "of": total, "limit": tokens}}`` for the code run inside."""
    counts: dict[str, dict[str, int]] = {}
    token = _SINK.set(counts)
    try:
        yield counts
    finally:
        _SINK.reset(token)


def tracking() -> bool:
    return _SINK.get() is not None


def note(where: str, truncated: int, total: int, limit: int) -> None:
    """Add one batch's counts under ``where`` (no-op when nobody tracks)."""
    counts = _SINK.get()
    if counts is None:
        return
    entry = counts.setdefault(where, {"truncated": 0, "of": 0, "limit": int(limit)})
    entry["truncated"] += int(truncated)
    entry["of"] += int(total)


def note_batch(
    where: str,
    tokenizer: Any,
    used_lengths: Sequence[int],
    limit: int,
    texts: Sequence[str],
    pairs: Sequence[str] | None = None,
) -> None:
    """Count rows of one tokenised batch whose full encoding is longer than ``limit``.

    ``used_lengths`` are the encoded lengths after truncation (attention-mask sums); only rows that reached
    ``limit`` can have been cut, and only those are tokenised again without truncation.
    """
    if _SINK.get() is None:
        return
    full = [i for i, n in enumerate(used_lengths) if int(n) >= limit]
    cut = 0
    if full:
        encoded = tokenizer(
            [texts[i] for i in full],
            None if pairs is None else [pairs[i] for i in full],
            truncation=False,
            add_special_tokens=True,
            verbose=False,
        )
        cut = sum(len(ids) > limit for ids in encoded["input_ids"])
    note(where, cut, len(used_lengths), limit)


def summary(counts: dict[str, dict[str, int]]) -> str:
    """One line for stderr, e.g. ``173 of 240 NLI pairs longer than 128 tokens were truncated``."""
    parts = [
        f"{c['truncated']} of {c['of']} {where} longer than {c['limit']} tokens"
        for where, c in counts.items()
        if c["truncated"]
    ]
    return "; ".join(parts) + " were truncated" if parts else ""
