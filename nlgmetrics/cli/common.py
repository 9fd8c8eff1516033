"""What every console command shares: help that shows defaults, ``--version``, quiet mode, clean exits."""
from __future__ import annotations

import argparse
import logging
import os
import warnings


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Append ``(default: X)`` to an option's help when it has a real default (not None/False/empty)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        empty = default is None or default is False or default == argparse.SUPPRESS or default == []
        if "%(default)" in text or empty or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


def version_string() -> str:
    from nlgmetrics.metaeval.scorer import toolkit_version

    return f"nlgmetrics {toolkit_version()}"


def finish_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Defaults in every (sub)command's help, and ``--version`` on the top-level parser."""
    parser.add_argument("--version", action="version", version=version_string())
    stack = [parser]
    while stack:
        current = stack.pop()
        current.formatter_class = DefaultsHelpFormatter
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
    return parser


def silence_libraries() -> None:
    """``--quiet``: no progress bars or info/warning chatter from transformers, datasets, Lightning, tokenizers.

    Errors still reach stderr; our own one-line warnings (e.g. truncated inputs) are printed by the CLI itself.
    """
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    warnings.filterwarnings("ignore")
    for name in ("transformers", "datasets", "pytorch_lightning", "lightning", "lightning.pytorch",
                 "lightning_fabric", "torch", "huggingface_hub", "sentence_transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
