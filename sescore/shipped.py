"""The checkpoints that ship inside the package, found by name (``mpnet-v2``, ``me5-de``, ``minilm-v2``, ...).

Its own module, importing nothing heavy: the registry declaration (read for ``--help``) and the scorer both need it.
"""

from __future__ import annotations

from pathlib import Path

SHIPPED = Path(__file__).resolve().parent / "checkpoints"
DEFAULT_NAME = "mpnet-v2"  # the shipped default checkpoint (sescore.scorer.DEFAULT_CHECKPOINT is its folder)
# the shipped checkpoint that scores references in another language when no checkpoint is named
LANGUAGE_DEFAULTS = {"de": "me5-de"}


def default_for(lang: str | None) -> str:
    """The folder of the shipped checkpoint for references in ``lang`` when none is named: the language's own
    (``LANGUAGE_DEFAULTS``) when it ships, else the English default (which then refuses the text in one line).

    Args:
        lang: an ISO 639-1 code, ``und`` or None (not known yet: the English default).

    Returns:
        A checkpoint folder inside the package.
    """
    name = LANGUAGE_DEFAULTS.get(lang or "", DEFAULT_NAME)
    return str(SHIPPED / (name if (SHIPPED / name / "hparams.yaml").is_file() else DEFAULT_NAME))


def checkpoint_folder(value: str) -> str:
    """A checkpoint value as a folder: an existing path as it is, else a shipped checkpoint's name
    (``mpnet-v2``, ``minilm-v2``, ``minilm-news``); anything else is left for the loader to report."""
    if Path(value).exists() or not (SHIPPED / value).is_dir():
        return value
    return str(SHIPPED / value)
