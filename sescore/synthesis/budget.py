"""The stratification table: which token positions a later edit may still touch.

SEScore labels every step with the severity of that step's error alone, which is only meaningful if no later
edit rewrites an earlier one. The paper keeps, per token, how many untouched tokens follow it, draws a start
uniformly, accepts the draw only when that budget covers the span, and after each edit clips budgets on its
left and zeroes the edited positions.

This module keeps the same information in the form it is derived from: a flag per current token (touched by an
edit or not) and a flag per gap between tokens (a deletion happened here). ``budget()`` is the paper's table:
the number of consecutive untouched tokens starting at each position without crossing an earlier edit.
The table is immutable; every operation returns a new one, which makes it trivial to property-test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPERATIONS: tuple[str, ...] = ("insert", "replace", "delete", "swap")


@dataclass(frozen=True)
class BudgetTable:
    """``touched[i]``: token i was produced or moved by an edit. ``barrier[g]``: gap g (before token g) is a
    deletion point, so no later span may run across it (len(barrier) == len(touched) + 1)."""

    touched: tuple[bool, ...]
    barrier: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.barrier) != len(self.touched) + 1:
            raise ValueError(f"barrier needs {len(self.touched) + 1} gaps, got {len(self.barrier)}")

    @classmethod
    def fresh(cls, num_tokens: int) -> "BudgetTable":
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        return cls((False,) * num_tokens, (False,) * (num_tokens + 1))

    @property
    def size(self) -> int:
        return len(self.touched)

    def budget(self) -> np.ndarray:
        """Per position: untouched tokens from here on (itself included) before an edited token or deletion."""
        n = self.size
        out = np.zeros(n, dtype=np.int64)
        run = 0
        for i in range(n - 1, -1, -1):
            if self.touched[i]:
                run = 0
            else:
                run = 1 + (0 if self.barrier[i + 1] else run)
            out[i] = run
        return out

    def accepts(self, operation: str, start: int, length: int) -> bool:
        """Would this edit stay inside untouched text?

        ``length`` is the number of existing tokens the edit covers: the span for replace/delete, the distance
        between the two swapped tokens for swap, and 0 for insert (which goes into the gap before ``start``).
        """
        n = self.size
        if not 0 <= start < n:
            return False
        budget = self.budget()
        if operation in ("replace", "delete"):
            if length < 1 or budget[start] < length:
                return False
            return operation == "replace" or n - length >= 1  # never delete the whole sentence
        if operation == "insert":
            # both neighbours untouched and not at a deletion point: the new words abut no earlier edit
            left_ok = start == 0 or not self.touched[start - 1]
            return budget[start] >= 1 and not self.barrier[start] and left_ok
        if operation == "swap":
            return length >= 1 and start + length < n and budget[start] >= length + 1
        raise ValueError(f"unknown operation '{operation}'; operations are {', '.join(OPERATIONS)}")

    def apply(self, operation: str, start: int, length: int, new_tokens: int = 0) -> "BudgetTable":
        """The table after an accepted edit; ``new_tokens`` is how many tokens an insert/replace produced."""
        if not self.accepts(operation, start, length):
            raise ValueError(f"{operation} at {start} (length {length}) is not allowed by the budget table")
        touched, barrier = list(self.touched), list(self.barrier)
        if operation == "swap":
            touched[start] = touched[start + length] = True
            return BudgetTable(tuple(touched), tuple(barrier))
        end = start + (length if operation in ("replace", "delete") else 0)
        produced = new_tokens if operation in ("insert", "replace") else 0
        if produced < 0:
            raise ValueError(f"new_tokens must be >= 0, got {new_tokens}")
        # gaps start..end collapse; an empty replacement is a deletion and leaves a deletion point
        new_touched = touched[:start] + [True] * produced + touched[end:]
        if produced == 0:
            joined_gap = [True] if end > start else [barrier[start]]
        else:
            joined_gap = [barrier[start]] + [False] * (produced - 1) + [barrier[end]]
        new_barrier = barrier[:start] + joined_gap + barrier[end + 1 :]
        return BudgetTable(tuple(new_touched), tuple(new_barrier))


__all__ = ["OPERATIONS", "BudgetTable"]
