"""A fixed select/report split of judged items, so recipe and checkpoint choices never see the numbers reported.

Gains picked on a 200-item dev slice have not transferred before: whatever is chosen by looking at scores must be
chosen on one half of the items and reported on the other. Items are ranked by a keyed hash of their key and
the seed and the first half of that ranking is 'select': never dependent on file order or on which systems a
row set holds, and adding items to a file moves only the few items near the cut.
"""

from __future__ import annotations

import hashlib
from typing import Hashable, Sequence

HALVES = ("select", "report")


def item_rank(item: Hashable, seed: int) -> str:
    """A seeded, order-free sort key of one item (hex digest of its key)."""
    return hashlib.blake2b(f"{seed}\x1f{item!r}".encode("utf-8"), digest_size=16).hexdigest()


def split_items(items: Sequence[Hashable], seed: int = 0) -> dict[Hashable, str]:
    """Every distinct item mapped to 'select' or 'report': the first half by seeded hash order is 'select'.

    Exactly balanced (the odd item goes to 'report'), so the two halves carry equal weight.
    """
    distinct = list(dict.fromkeys(items))
    ordered = sorted(distinct, key=lambda item: item_rank(item, seed))
    cut = len(ordered) // 2
    return {item: HALVES[0] if index < cut else HALVES[1] for index, item in enumerate(ordered)}


def rows_in_half(rows: Sequence[dict], half: str | None, seed: int = 0) -> list[dict]:
    """The judged rows whose item ((lp, item_id)) is in ``half``; all rows for ``half=None``."""
    if half is None:
        return list(rows)
    if half not in HALVES:
        raise ValueError(f"half must be one of {', '.join(HALVES)}, got {half!r}")
    keys = [(row.get("lp"), row.get("item_id")) for row in rows]
    halves = split_items(keys, seed)
    return [row for row, key in zip(rows, keys) if halves[key] == half]
