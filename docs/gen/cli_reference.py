"""The command-line reference (``docs/reference/cli.md``), rendered from the parsers the three console commands build.

Why from the parsers: every flag, its help and its default are declared once (the metric registry's options, the
subcommands' ``add_parser``), and a reference typed by hand would drift from them. ``nlgmetrics-evaluate``'s
subcommands come from ``nlgmetrics.cli.evaluate.make_parser()``, ``nlgmetrics-models``' from
``nlgmetrics.cli.models.make_parser()``; ``nlgmetrics-train``'s from the entry-point group its packages declare
(``nlgmetrics.registry.train_commands()``), each a ``main(argv)`` that builds its own parser: that parser is caught
at its ``parse_known_args`` call, before the command does anything. ``fit`` is a LightningCLI: its jsonargparse
parser is caught the same way, at ``LightningCLI.parse_arguments`` (Lightning's import makes that the slow part of
a render, some 8 s on 2 cores). Its table shows the options the toolkit declares (the SEScore model's, the data
module's, the export and resume callbacks') from the parser, beside the value in the recipe of the shipped default;
Lightning's own ``Trainer`` options are listed only where the toolkit's recipes set them, without Lightning's help
text, so the page does not change with the installed Lightning version. The page is committed and
``tests/test_docs_generated.py`` checks it is current.

    python docs/gen/cli_reference.py --write     # rewrite docs/reference/cli.md
    python docs/gen/cli_reference.py --check     # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Callable
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path[:0] = [p for p in (str(HERE), str(HERE.parents[1])) if p not in sys.path]

from results_markdown import Lines, Page  # noqa: E402

PAGE = "reference/cli.md"
WIDTH = "90"  # argparse wraps usage lines to the terminal: a fixed width that fits the page's code blocks
# the train command whose parser is LightningCLI's (jsonargparse), and the recipes whose values its table shows
LIGHTNING = {"fit"}
FIT_RECIPE = "sescore/mpnet_v2_fit.yaml"  # the shipped default's fit (step 4 of its recipe)
START_RECIPE = "sescore/mpnet_v2_start.yaml"  # layered on it for the run's start (step 3)
# the fit's own options (not a section's), in the toolkit's words: LightningCLI's help for them is Lightning's
FIT_OPTIONS = {
    "help": "show the help, every Lightning option included, and exit",
    "config": "a recipe YAML: a path, or a packaged recipe (`sescore/mpnet_v2_fit.yaml`); repeat it to layer "
    "recipes, a later file winning (`--config sescore/mpnet_v2_fit.yaml --config sescore/mpnet_v2_start.yaml`)",
    "print_config": "print the configuration the recipes and options add up to, and exit without training",
    "seed_everything": "seed of the model's initialisation and dropout (the data order has its own seeds)",
    "ckpt_path": "continue an interrupted fit from its resume state (`<resume.dirpath>/last.safetensors`); "
    "the other options must be the interrupted run's",
}
# sections of the fit's parser by prefix, and what each is: the toolkit's sections are rendered with their help,
# Lightning's Trainer only by the options the recipes set (its help is in `nlgmetrics-train fit --help`)
FIT_SECTIONS = {
    "model": "the SEScore regressor (`sescore.regressor.module.SEScoreModule`)",
    "data": "training data, held-out pairs and the dev set that selects the export (`SEScoreDataModule`)",
    "export": "which validation run's weights are exported, and where",
    "resume": "the training state saved for resuming",
    "trainer": "Lightning's `Trainer`",
}
# data folders that exist only on the developers' machines (never shipped): a default path into one is said so
DEVELOPERS_DATA = ("${NLGMETRICS_DATA}/", "../shared/data/")  # how recipes name the judged-data folder
# train commands that dispatch on a first word before parsing, each mode with its own parser: the module whose
# ``MODES`` lists them (the default mode, ``run``, is the command's own section)
MODE_TABLES = {"synthesize": "sescore.synthesis.cli"}


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


CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _escape_plain(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|").replace("*", "\\*")


def _code(text: str) -> str:
    """A code span a table cell can hold: an HTML one, with the pipe as an entity, when the text has a pipe or a
    backtick (a pipe would end the cell on GitHub, and an escaped one shows its backslash on the site)."""
    if "|" in text or "`" in text:
        entities = {"&": "&amp;", "<": "&lt;", "|": "&#124;", "\\": "&#92;", "`": "&#96;"}  # Markdown drops a backslash
        return "<code>" + "".join(entities.get(c, c) for c in text) + "</code>"
    return f"`{text}`"


def _escape(text: str) -> str:
    """Help text safe in a Markdown table cell: no raw HTML (``<metric>``), no pipes, no stray emphasis; its code
    spans (``name``, as docstrings write them) stay code."""
    text = text.replace("\n", " ")
    out, position = [], 0
    for span in CODE_SPAN.finditer(text):
        out += [_escape_plain(text[position : span.start()]), _code(span.group(2))]
        position = span.end()
    return "".join([*out, _escape_plain(text[position:])])


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


def modes_of(name: str) -> list[str]:
    """The modes of a train command (``synthesize sentences`` ...), from the ``MODES`` of the module that dispatches
    them, the default mode left out."""
    if name not in MODE_TABLES:
        return []
    import importlib

    return [mode for mode in importlib.import_module(MODE_TABLES[name]).MODES if mode != "run"]


def lightning_parser(run: Callable[[list[str]], Any]) -> Any:
    """The ``fit`` subcommand's parser that LightningCLI builds in ``run([])``, caught before it parses (nothing is
    instantiated, no data is read)."""
    from pytorch_lightning.cli import LightningCLI

    def grab(self: Any, parser: Any, args: Any) -> Any:
        raise _Captured(parser)

    with mock.patch.object(LightningCLI, "parse_arguments", grab), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run([])
        except _Captured as caught:
            root = caught.parser
        else:
            raise RuntimeError(f"{run!r}: returned without LightningCLI parsing its arguments")
    subcommands = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    return subcommands.choices["fit"]


def _plain(value: Any) -> Any:
    """A parser default or recipe value as plain YAML data (jsonargparse Namespaces and tuples included)."""
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _value_cell(value: Any) -> str:
    """One value as the recipe YAML would write it, as code unless it holds a pipe or backtick."""
    value = _plain(value)
    for prefix in DEVELOPERS_DATA:
        if isinstance(value, str) and value.startswith(prefix):
            return f"`{value[len(prefix) :]}` in the developers' data folder (not shipped)"
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dict, list)):
        import yaml

        text = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip()
    else:
        text = str(value) if value != "" else '""'
    return _code(text)


_ABSENT = object()


def _lookup(tree: Any, dest: str) -> Any:
    for key in dest.split("."):
        if not isinstance(tree, dict) or key not in tree:
            return _ABSENT
        tree = tree[key]
    return tree


def _recipe(name: str) -> dict:
    import yaml

    from nlgmetrics.resources import config_path

    return yaml.safe_load(config_path(name).read_text(encoding="utf-8")) or {}


def _flags(action: argparse.Action) -> str:
    return ", ".join(flag for flag in action.option_strings if not flag.endswith("+"))


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


def fit_section(run: Callable[[list[str]], Any], heading: str, summary: str) -> Lines:
    """``nlgmetrics-train fit``: usage, the option tables (from the LightningCLI parser) and examples.

    The toolkit's sections (``--model.*``, ``--data.*``, ``--export.*``, ``--resume.*``) are every option of the
    parser with its help and default; Lightning's ``Trainer`` section only the options the default's recipes or the
    toolkit's Trainer defaults set. Two columns give the values of the shipped default's recipes."""
    from sescore.regressor.cli import TRAINER_DEFAULTS

    parser = lightning_parser(run)
    defaults = parser.get_defaults()
    fit, start = _recipe(FIT_RECIPE), _recipe(START_RECIPE)
    by_dest: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.option_strings and not action.option_strings[0].endswith(".help"):
            by_dest.setdefault(action.dest, action)
    missing = [dest for dest in FIT_OPTIONS if dest not in by_dest]
    unknown = sorted({d.split(".")[0] for d in by_dest if "." in d} - set(FIT_SECTIONS))
    if missing or unknown:
        raise RuntimeError(
            f"nlgmetrics-train fit: options {missing} are gone, sections {unknown} are new; "
            "update FIT_OPTIONS / FIT_SECTIONS in docs/gen/cli_reference.py"
        )
    header = [
        f"| option | default | `{Path(FIT_RECIPE).name}` | `{Path(START_RECIPE).name}` | what it does |",
        "|---|---|---|---|---|",
    ]

    def row(dest: str, default: str, text: str) -> str:
        values = [_lookup(fit, dest), _lookup(start, dest)] if dest not in FIT_SECTIONS else [_ABSENT, _ABSENT]
        cells = [_value_cell(v) if v is not _ABSENT else "" for v in values]
        return f"| `{_flags(by_dest[dest])}` | {default} | {cells[0]} | {cells[1]} | {_escape(text)} |"

    def parser_default(dest: str) -> str:
        value = defaults.get(dest, None) if by_dest[dest].default != argparse.SUPPRESS else argparse.SUPPRESS
        return "" if value == argparse.SUPPRESS else _value_cell(value)

    lines = [heading, "", _escape(summary) + ".", ""]
    usage = "usage: nlgmetrics-train fit "
    parts = ["[-h]", "[-c CONFIG]", "[--print_config]", "[--seed_everything SEED_EVERYTHING]"]
    parts += [f"[--{prefix}.KEY VALUE]" for prefix in FIT_SECTIONS] + ["[--ckpt_path CKPT_PATH]"]
    rows = [usage]
    for part in parts:
        if len(rows[-1]) + len(part) > int(WIDTH) and rows[-1].strip():
            rows.append(" " * len(usage))
        rows[-1] += part + " "
    lines += ["```text", "\n".join(row.rstrip() for row in rows), "```", ""]
    lines += [
        "LightningCLI builds this command's options from the SEScore model's and data module's constructor "
        "arguments, the export and resume callbacks and Lightning's `Trainer`. A recipe gives their values "
        "(`--config`) and one option overrides one value (`--model.encoder packaged:minilm`); "
        "`nlgmetrics-train fit --help` prints every option with Lightning's own help. *default* is the value when "
        f"neither a recipe nor the command line sets one; the next two columns are the recipes of the shipped default "
        f"`mpnet-v2`: its fit (`{FIT_RECIPE}`, step 4) and its start (`{START_RECIPE}`, step 3, given after the fit's "
        "recipe); an empty cell is a value that recipe leaves as it was. The [SEScore training guide]"
        "(../guides/sescore-training.md) walks through all five steps.",
        "",
        "**options**",
        "",
        *header,
    ]
    lines += [row(dest, parser_default(dest), text) for dest, text in FIT_OPTIONS.items()]
    lines.append("")
    for prefix, what in FIT_SECTIONS.items():
        dests = [d for d in by_dest if d.startswith(prefix + ".")]
        if prefix == "trainer":
            chosen = {*TRAINER_DEFAULTS, "devices", "strategy"}
            for tree in (fit, start):
                chosen |= set((tree.get("trainer") or {}))
            dests = [d for d in dests if d.split(".", 1)[1] in chosen]
            if len(dests) != len(chosen):
                raise RuntimeError(f"nlgmetrics-train fit: no --trainer option for {sorted(chosen)}")
        lines += [f"**`--{prefix}.*`: {what}**", "", *header]
        if prefix in by_dest:
            lines.append(row(prefix, "", f"a YAML file of this section's values (`{prefix}:` of a recipe)"))
        for dest in dests:
            if prefix == "trainer":
                key = dest.split(".", 1)[1]
                default = _value_cell(TRAINER_DEFAULTS[key]) if key in TRAINER_DEFAULTS else "Lightning's"
                lines.append(row(dest, default, f"Lightning's `Trainer({key}=...)`"))
            else:
                lines.append(row(dest, parser_default(dest), _first_paragraph(by_dest[dest].help)))
        lines.append("")
    lines += [
        "Every other argument of Lightning's `Trainer` is an option too (`--trainer.KEY VALUE`).",
        "",
        "```text",
        "examples:",
        f"  nlgmetrics-train fit --config configs/{FIT_RECIPE} --config configs/{START_RECIPE}",
        f"  nlgmetrics-train fit --config configs/{FIT_RECIPE}",
        f"  nlgmetrics-train fit --config configs/{FIT_RECIPE} --trainer.devices 4 --trainer.strategy ddp",
        "```",
        "",
    ]
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
            lines += fit_section(command, heading, command.summary)
            continue
        lines += parser_section(captured_parser(command, []), heading, f"nlgmetrics-train {name}")
        for mode in modes_of(name):
            parser = captured_parser(command, [mode])
            if not parser.prog.endswith(f" {mode}"):
                raise RuntimeError(
                    f"nlgmetrics-train {name} {mode}: no such mode any more (got {parser.prog}); "
                    f"update MODES in {MODE_TABLES[name]}"
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
