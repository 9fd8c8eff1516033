"""Metric signatures: one type that writes every metric's signature and reads its fields back.

A signature (sacrebleu's idea) names everything that changes a score: the metric, its models with their weights'
hashes, its settings, a non-default precision and the toolkit's version, as ``name|key:value|...|version:X``.
Score caches, stored ranges and result files are keyed by it, so the text of every existing signature must stay
byte for byte what it was; this type only makes sure each metric writes it the same way (precision before the
version, the version from the installed metadata) and that readers split it the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.modelroles.precision import precision_tag

Part = str | tuple[str, Any]


@dataclass(frozen=True)
class Signature:
    """A metric's signature, written by ``str()``.

    Args:
        name: the metric's name, first.
        parts: ``(key, value)`` pairs written ``key:value``, or a string written as it is (a quantity's name, a
            nested signature such as sacrebleu's own).
        precision: the forward pass's precision; a non-default one adds ``|precision:<p>`` before the version
            (float32 adds nothing, so float32 signatures read as they always have).
        version_key: the key of the toolkit's version at the end (``version``; ``nlgmetrics`` where the metric
            wraps another package that writes its own ``version``); None for no version (a combination whose
            parts carry theirs).
    """

    name: str
    parts: tuple[Part, ...] = ()
    precision: str | None = None
    version_key: str | None = "version"

    def __str__(self) -> str:
        text = "|".join([self.name, *(p if isinstance(p, str) else f"{p[0]}:{p[1]}" for p in self.parts)])
        if self.precision is not None:
            text += precision_tag(self.precision)
        if self.version_key is not None:
            text += f"|{self.version_key}:{toolkit_version()}"
        return text


def signature_fields(signature: str, drop: Iterable[str] = ()) -> dict[str, str]:
    """The ``key:value`` fields of a signature's top level (parts without a colon, such as the metric's name, are
    left out; a value keeps any colon after the first).

    Args:
        signature: a signature's text.
        drop: keys to leave out (for example ``version`` when comparing across releases).

    Returns:
        key -> value, in the signature's order.
    """
    dropped = set(drop)
    fields = (part.split(":", 1) for part in signature.split("|") if ":" in part)
    return {key: value for key, value in fields if key not in dropped}


__all__ = ["Signature", "signature_fields"]
