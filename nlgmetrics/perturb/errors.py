"""The one exception every perturbation raises when it cannot do its job on a text.

Returning the input unchanged would make a metric look robust to noise that was never applied (the original
blind-spot code did this for short texts), so callers must see the refusal and count it.
"""

from __future__ import annotations


class NotApplicable(Exception):
    """The perturbation cannot apply to this text (too short, no candidate tokens, missing source...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
