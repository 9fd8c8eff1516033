"""Judged rows (``{"hyp", "refs", "src", "lp", "item_id", "system", "scores"}``) as the protocols read them.

Shared by the command line, the dev-mix check and the benchmarks, so every caller scores a row the same way.
"""

from __future__ import annotations

from typing import Any, Sequence


def source_text(src: Any) -> str:
    """The source as one string: data-to-text inputs (WebNLG) are lists of triples, one per line.

    Args:
        src: a row's ``src`` field (None, a string, or a list of strings).

    Returns:
        The text ("" for no source).
    """
    if src is None:
        return ""
    if isinstance(src, (list, tuple)):
        return "\n".join(str(part) for part in src)
    return str(src)


def score_rows(scorer: Any, rows: Sequence[dict]) -> list[float]:
    """One score per judged row, in order; identical (hyp, refs, src) triples are scored once.

    Args:
        scorer: any Scorer (``score(hyps, refs, srcs)``).
        rows: dicts with ``hyp``, ``refs`` (a list) and optionally ``src``.

    Returns:
        The rows' scores.
    """
    unique: dict[tuple, int] = {}
    for row in rows:
        unique.setdefault((row["hyp"], tuple(row["refs"]), source_text(row.get("src"))), len(unique))
    triples = list(unique)
    srcs = [t[2] for t in triples]
    scores = scorer.score([t[0] for t in triples], [list(t[1]) for t in triples], srcs if any(srcs) else None)
    return [scores[unique[(r["hyp"], tuple(r["refs"]), source_text(r.get("src")))]] for r in rows]


def one_row_per_item(rows: Sequence[dict], limit: int | None = None) -> list[dict]:
    """The first row of every (lp, item_id) among the first ``limit`` items: stress tests and adversarial
    generation work per item, not per system output.

    Args:
        rows: judged rows.
        limit: the first N items (None: all).

    Returns:
        One row per item, in order.
    """
    from nlgmetrics.metaeval.textio import first_items

    seen: set = set()
    out = []
    for row in first_items(rows, limit):
        key = (row.get("lp"), row.get("item_id"))
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def multi_reference_rows(rows: Sequence[dict], need: int, limit: int | None = None, where: str = "data") -> list[dict]:
    """One row per item among those with more than ``need`` references.

    Args:
        rows: judged rows.
        need: the index of the highest reference the caller will read.
        limit: the first N items (None: all).
        where: the data's name for the error message.

    Returns:
        The usable rows; an InputError when there are none.
    """
    from nlgmetrics.metaeval.textio import InputError

    usable = [r for r in one_row_per_item(rows, limit) if isinstance(r.get("refs"), list) and len(r["refs"]) > need]
    if not usable:
        raise InputError(f"{where}: no item has {need + 1} or more references (field 'refs')")
    return usable
