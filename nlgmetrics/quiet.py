"""Quiet mode shared by the command line and its worker processes: no progress bars, no library chatter."""

from __future__ import annotations

import logging
import os
import warnings


def silence_libraries() -> None:
    """``--quiet``: no progress bars or info/warning chatter from transformers, datasets, Lightning, tokenizers.

    Errors still reach stderr; our own one-line warnings (e.g. truncated inputs) are printed by the CLI itself.
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    warnings.filterwarnings("ignore")
    for name in (
        "transformers",
        "datasets",
        "pytorch_lightning",
        "lightning",
        "lightning.pytorch",
        "lightning_fabric",
        "torch",
        "huggingface_hub",
        "sentence_transformers",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
