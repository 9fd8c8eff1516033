"""The command-line reference (``docs/reference/cli.md``), rendered from the parsers the two console commands build.

Why from the parsers: every flag, its help and its default are declared once (the metric registry's options, the
subcommands' ``add_parser``), and a reference typed by hand would drift from them. ``nlgmetrics-evaluate``'s
subcommands come from ``nlgmetrics.cli.evaluate.make_parser()``; ``nlgmetrics-train``'s from the entry-point group
its packages declare (``nlgmetrics.registry.train_commands()``), each a ``main(argv)`` that builds its own parser:
that parser is caught at its ``parse_known_args`` call, before the command does anything. The page is committed and
``tests/test_docs_generated.py`` checks it is current.

    python docs/gen/cli_reference.py --write     # rewrite docs/reference/cli.md
    python docs/gen/cli_reference.py --check     # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(HERE), str(HERE.parents[1])) if p not in sys.path]

from results_markdown import Lines, Page  # noqa: E402

PAGE = "reference/cli.md"
WIDTH = "90"  # argparse wraps usage lines to the terminal: a fixed width that fits the page's code blocks
# train commands whose parser is LightningCLI's (built on Lightning's import, ~20 s): described, not captured
LIGHTNING = {
    "fit": (
        "LightningCLI builds this command's options from the SEScore model's and data module's "
        "constructor arguments and Lightning's `Trainer` (hundreds of flags, most of them Lightning's). "
        "Give a recipe with `--config NAME.yaml` (a path, or a packaged recipe such as "
        "`sescore/fit_offline_v2.yaml`) and override single values as `--model.KEY VALUE`; "
        "`nlgmetrics-train fit --help` prints every option. The [SEScore training guide]"
        "(../guides/sescore-training.md) walks through a run."
    )
}
# modes a train command dispatches on its first argument before parsing (each builds its own parser)
MODES = {"synthesize": ["merge", "calibrate", "sentences"]}


class _Captured(BaseException):
    """Carries a parser out of a command's ``main`` (a BaseException, so a command's ``except Exception`` cannot
    swallow it)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def captured_parser(run: Callable[[list[str]], Any], argv: list[str]) -> argparse.ArgumentParser:
    """The parser a command's ``main(argv)`` builds, caught when it parses (nothing after that runs).

    Args:
        run: the command's entry point.
        argv: its arguments (a mode name for commands with modes; ``[]`` otherwise).

    Returns:
        The parser.
    """

    def grab(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise _Captured(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", grab):
        try:
            run(argv)
        except _Captured as caught:
            return caught.parser
    raise RuntimeError(f"{run!r} {argv}: returned without parsing its arguments with argparse")


def _escape(text: str) -> str:
    """Help text safe in a Markdown table cell: no raw HTML (``<metric>``), no pipes, no stray emphasis."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("*", "\\*")
        .replace("\n", " ")
    )


def _display(prog: str) -> str:
    return re.sub(r"^train\.py\b", "nlgmetrics-train", prog)


def options_tables(parser: argparse.ArgumentParser) -> Lines:
    """One table per argument group: the flag as ``--help`` shows it, its help with the default it appends."""
    formatter = parser._get_formatter()
    lines: Lines = []
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
        ]
        if not actions:
            continue
        lines += [f"**{group.title}**", "", "| option | what it does |", "|---|---|"]
        for action in actions:
            invocation = formatter._format_action_invocation(action)
            text = formatter._expand_help(action) if action.help else ""
            lines.append(f"| `{invocation}` | {_escape(text)} |")
        lines.append("")
    return lines


def parser_section(parser: argparse.ArgumentParser, heading: str, prog: str) -> Lines:
    """A command's section: description, usage, options, and its example epilog."""
    parser.prog = prog
    lines = [heading, ""]
    if parser.description:
        lines += [_escape(" ".join(parser.description.split())), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    lines += options_tables(parser)
    if parser.epilog:
        lines += ["```text", parser.epilog.strip("\n"), "```", ""]
    return lines


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """name -> (subparser, its one-line help) of a parser's subcommands."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")


def evaluate_section() -> Lines:
    """``nlgmetrics-evaluate``: the command list, then every subcommand."""
    from nlgmetrics.cli.evaluate import make_parser

    parser = make_parser()
    commands = _subcommands(parser)
    lines = [
        "## nlgmetrics-evaluate",
        "",
        _escape(" ".join((parser.description or "").split())),
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{name}`](#evaluate-{_anchor(name)}) | {_escape(text)} |" for name, (_, text) in commands.items()]
    lines.append("")
    if parser.epilog:
        lines += ["```text", parser.epilog.strip("\n"), "```", ""]
    for name, (sub, _) in commands.items():
        lines += parser_section(sub, f"### {name} {{#evaluate-{_anchor(name)}}}", f"nlgmetrics-evaluate {name}")
    return lines


def train_section() -> Lines:
    """``nlgmetrics-train``: the declared commands, each with the parser its ``main`` builds."""
    from nlgmetrics.registry import train_commands

    commands = train_commands()
    lines = [
        "## nlgmetrics-train",
        "",
        "Training commands, declared by the packages that own them (entry-point group `nlgmetrics.train_commands`).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{name}`](#train-{_anchor(name)}) | {_escape(c.summary)} |" for name, c in commands.items()]
    lines.append("")
    for name, command in commands.items():
        heading = f"### {name} {{#train-{_anchor(name)}}}"
        if name in LIGHTNING:
            lines += [heading, "", _escape(command.summary) + ".", "", LIGHTNING[name], ""]
            continue
        lines += parser_section(captured_parser(command, []), heading, f"nlgmetrics-train {name}")
        for mode in MODES.get(name, []):
            parser = captured_parser(command, [mode])
            if not parser.prog.endswith(f" {mode}"):
                raise RuntimeError(
                    f"nlgmetrics-train {name} {mode}: no such mode any more (got {parser.prog}); "
                    "update MODES in docs/gen/cli_reference.py"
                )
            lines += parser_section(
                parser, f"#### {name} {mode} {{#train-{_anchor(name)}-{mode}}}", _display(parser.prog)
            )
    return lines


def models_section() -> Lines:
    """``nlgmetrics-models``: weights that are fetched rather than pip-installed."""
    from nlgmetrics.cli.models import make_parser

    parser = make_parser()
    lines = ["## nlgmetrics-models", "", parser.description + ".", ""]
    if parser.epilog:
        lines += ["```text", parser.epilog.strip("\n"), "```", ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines += parser_section(sub, f"### {name} {{#models-{_anchor(name)}}}", f"nlgmetrics-models {name}")
    return lines


def render() -> Page:
    """The command-line reference page."""
    page = Page(PAGE, script="cli_reference.py", source="the command-line parsers")
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        page.add(
            "# Command line",
            "",
            "Three console commands, installed with the package: `nlgmetrics-evaluate` scores and measures, "
            "`nlgmetrics-train` trains (in a checkout, `python evaluate.py` and `python train.py` are the "
            "same), `nlgmetrics-models` fetches the weights that pip cannot install. Every command prints its own "
            "`--help`; this page is rendered from the same parsers. The "
            "metric options (`--encoder`, `--nli-model`, ...) come from the metrics' declarations in the "
            "registry, so the same words are the keyword arguments of `nlgmetrics.load_metric` "
            "([Python API](api.md)); the metric each option applies to is in brackets.",
            "",
        )
        page.add(evaluate_section(), train_section(), models_section())
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"rewrite docs/{PAGE}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when docs/{PAGE} is stale")
    args = parser.parse_args(argv)
    path = HERE.parent / PAGE
    text = render().text()
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if args.check:
        if current != text:
            print(f"stale: docs/{PAGE} (run python docs/gen/cli_reference.py --write)")
            return 1
        return 0
    if current != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"docs/{PAGE}: {'written' if current != text else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
