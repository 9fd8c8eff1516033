"""Options files: a YAML of one ``nlgmetrics-train`` command's options, so every step of a recipe is a packaged file.

Why: ``fit`` reads its whole recipe from ``--config`` (LightningCLI), but the other SEScore steps (``synthesize
sentences``, ``synthesize``, ``pack``) took their corpus, sizes and folders as flags only, so a recipe such as the
shipped default's lived in a script instead of in ``configs/``. An options file gives those commands the same
shape: keys are the command's option names (``min_words`` for ``--min-words``), values are what the flag would
take (a list for a repeatable or multi-value flag, true/false for a switch), and every option on the command line
wins over the file's. The values go through the command's own argparse checks, so a bad one fails as a bad flag.

A value may start with ``${NLGMETRICS_DATA}``: the folder the toolkit reads judged data and corpora from
(``$NLGMETRICS_DATA``, else ``../shared/data``; ``nlgmetrics.resources.data_root``), which is never shipped, so a
packaged recipe can name a corpus without naming a machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from nlgmetrics.resources import DATA_PLACEHOLDER


class OptionsFileError(ValueError):
    """An options file that cannot be read or names an option its command does not have; the message names both."""


WHERE_REQUIRED = "on the command line or in the --config options file"


class OptionsFileParser(argparse.ArgumentParser):
    """The parser of a command whose ``--config`` is an options file (``synthesize``, ``synthesize sentences``,
    ``pack``).

    Why: an option the command cannot run without (``--input``, ``--out`` ...) may come from the options file, so
    argparse's ``required=True`` would make the usage line and ``--help`` claim it must be typed, while
    ``pack --config configs/sescore/mpnet_v2_pack.yaml`` alone is a complete command. Options added with
    :meth:`add_required_option` show as optional in the usage, say in their help where they may come from, and are
    checked once the options file has been put into the arguments: a missing one stops with argparse's usage error
    (exit status 2), as ``required=True`` would.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._required_options: list[argparse.Action] = []

    def add_required_option(self, *flags: str, **kwargs: Any) -> argparse.Action:
        """``add_argument`` for an option that must be given, on the command line or by the options file.

        Args:
            *flags: the option's flags (``--input``).
            **kwargs: what ``add_argument`` takes, but ``required``.

        Returns:
            The option's action.
        """
        text = kwargs.get("help") or ""
        kwargs["help"] = f"{text} (required: {WHERE_REQUIRED})" if text else f"required: {WHERE_REQUIRED}"
        action = self.add_argument(*flags, **kwargs)
        self._required_options.append(action)
        return action

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        missing = [a for a in self._required_options if getattr(parsed, a.dest, None) is None]
        if missing:
            flags = ", ".join("/".join(a.option_strings) for a in missing)
            self.error(f"the following arguments are required: {flags} ({WHERE_REQUIRED})")
        return parsed, extras


def read_options_file(path: str | Path) -> tuple[dict[str, Any], Path]:
    """The mapping an options file holds and the path it was read from (a packaged recipe's name works too)."""
    from nlgmetrics.recipes import RecipeError, read_yaml

    try:
        values, where = read_yaml(path)
    except RecipeError as error:
        raise OptionsFileError(str(error)) from error
    if not isinstance(values, dict):
        raise OptionsFileError(
            f"options file {where}: expected a mapping of option names to values, got {type(values).__name__}"
        )
    return values, where


def _options_by_name(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's optional arguments by destination name (``min_words``), help excluded."""
    return {
        action.dest: action
        for action in parser._actions  # noqa: SLF001 - argparse has no public listing
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    }  # noqa: SLF001


def _given(action: argparse.Action, argv: Sequence[str]) -> bool:
    """Whether ``argv`` sets this option itself (``--take 5`` or ``--take=5``): then the file's value is dropped,
    which for a repeatable option means replaced, not extended."""
    return any(token == flag or token.startswith(flag + "=") for token in argv for flag in action.option_strings)


def _expand(value: Any, where: Path) -> str:
    """One value as a command-line word, ``${NLGMETRICS_DATA}`` replaced by the data folder."""
    from nlgmetrics.resources import expand_data

    try:
        return expand_data(str(value))
    except FileNotFoundError as error:
        raise OptionsFileError(f"options file {where} names {DATA_PLACEHOLDER} ({value}): {error}") from error


def _words(action: argparse.Action, value: Any, where: Path) -> list[str]:
    """The command-line words that give ``action`` this value (nothing for null, which means the default)."""
    flag = action.option_strings[-1]
    if value is None:
        return []
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):  # noqa: SLF001
        if not isinstance(value, bool):
            raise OptionsFileError(f"options file {where}: '{action.dest}' is a switch; write true or false")
        return [flag] if value == isinstance(action, argparse._StoreTrueAction) else []  # noqa: SLF001
    values = value if isinstance(value, list) else [value]
    if isinstance(action, argparse._AppendAction):  # noqa: SLF001 - repeatable: one flag per value
        return [word for item in values for word in (flag, _expand(item, where))]
    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return [flag, *(_expand(item, where) for item in values)]
    if isinstance(value, (list, dict)):
        raise OptionsFileError(f"options file {where}: '{action.dest}' takes one value, got {value!r}")
    return [flag, _expand(value, where)]


def options_file_argv(
    parser: argparse.ArgumentParser, path: str | Path, argv: Sequence[str], skip: Sequence[str] = ()
) -> list[str]:
    """``argv`` with the options of the file at ``path`` put in front, as the words the command line would use.

    Args:
        parser: the command's parser (its options decide which keys exist and how each is spelt).
        path: the options file, or a packaged recipe's name (``configs/sescore/mpnet_v2_pack.yaml``).
        argv: the rest of the command line; an option given there is not taken from the file.
        skip: option names the caller handles itself (e.g. ``config`` of the file that is being expanded).

    Returns:
        The argument list to parse: the file's words, then ``argv``.

    Raises:
        OptionsFileError: the file cannot be read, is not a mapping, or has a key that is not an option of the
            command (all unknown keys are named, with the known ones).
    """
    values, where = read_options_file(path)
    options = _options_by_name(parser)
    unknown = sorted(str(key) for key in values if key not in options or key in skip)
    if unknown:
        known = ", ".join(sorted(name for name in options if name not in skip))
        raise OptionsFileError(
            f"options file {where}: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} for {parser.prog}; known: {known}"
        )
    words: list[str] = []
    for name, value in values.items():
        if not _given(options[name], argv):
            words += _words(options[name], value, where)
    return [*words, *argv]


def pop_option(argv: Sequence[str], flag: str) -> tuple[list[str], list[str]]:
    """``argv`` without every ``flag VALUE`` / ``flag=VALUE``, and those values in order."""
    rest, found, index = [], [], 0
    argv = list(argv)
    while index < len(argv):
        token = argv[index]
        if token == flag and index + 1 < len(argv):
            found.append(argv[index + 1])
            index += 2
            continue
        if token.startswith(flag + "="):
            found.append(token.split("=", 1)[1])
        else:
            rest.append(token)
        index += 1
    return rest, found


def with_options_file(parser: argparse.ArgumentParser, argv: Sequence[str], flag: str = "--config") -> list[str]:
    """``argv`` with the options file named by ``flag`` expanded in place of it (the commands whose ``--config``
    is always an options file: ``synthesize sentences``, ``pack``); several files apply in order, later ones
    winning like later flags; without ``flag`` the arguments come back unchanged."""
    rest, files = pop_option(argv, flag)
    for path in reversed(files):
        rest = options_file_argv(parser, path, rest, skip=(flag.lstrip("-").replace("-", "_"),))
    return rest


__all__ = [
    "DATA_PLACEHOLDER",
    "OptionsFileError",
    "OptionsFileParser",
    "options_file_argv",
    "pop_option",
    "read_options_file",
    "with_options_file",
]
