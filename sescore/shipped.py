"""The checkpoints that ship inside the package, found by name (``mpnet-v2``, ``minilm-v2``, ``minilm-news``).

Its own module, importing nothing heavy: the registry declaration (read for ``--help``) and the scorer both need it.
"""

from __future__ import annotations

from pathlib import Path

SHIPPED = Path(__file__).resolve().parent / "checkpoints"
DEFAULT_NAME = "mpnet-v2"  # the shipped default checkpoint (sescore.scorer.DEFAULT_CHECKPOINT is its folder)


def checkpoint_folder(value: str) -> str:
    """A checkpoint value as a folder: an existing path as it is, else a shipped checkpoint's name
    (``mpnet-v2``, ``minilm-v2``, ``minilm-news``); anything else is left for the loader to report."""
    if Path(value).exists() or not (SHIPPED / value).is_dir():
        return value
    return str(SHIPPED / value)
