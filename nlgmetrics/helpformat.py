"""argparse help that shows every option's real default: shared by the console commands and the packages'
own command parsers (``train.py``'s subcommands), which must not import the command-line layer."""

from __future__ import annotations

import argparse
import sys
from typing import Any


class DefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Append ``(default: X)`` to an option's help when it has a real default (not None/False/empty); descriptions
    and example epilogs keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        empty = default is None or default is False or default == argparse.SUPPRESS or default in ([], "")
        if "%(default)" in text or empty or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class _RenamedFlag(argparse.Action):
    """A flag's former name: still accepted, hidden from --help, and named on stderr once used."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"note: {option_string} is now {self.new} (the old name still works)", file=sys.stderr)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def add_renamed_flag(parser: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """Keep ``old`` working for commands people already wrote, as a hidden alias of ``new`` (same ``dest``).

    Why: one flag name means one thing across every subcommand (``--out`` is always a folder), so flags that meant
    something else were renamed; scripts written against the old names keep running.
    """
    parser.add_argument(old, dest=dest, action=_RenamedFlag, new=new, help=argparse.SUPPRESS, **kwargs)
