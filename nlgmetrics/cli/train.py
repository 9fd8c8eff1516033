"""Training entry point: ``nlgmetrics-train COMMAND ...`` (or ``python train.py`` in a checkout).

The subcommands are declared by the packages that own them (``nlgmetrics.registry.TrainCommand`` in the entry-point
group ``nlgmetrics.train_commands``: ``nli`` by ``nlgmetrics.nli``, ``synthesize``, ``fit``, ``ensemble`` and
``pack`` by ``sescore``), so this layer imports no metric package.
"""

from __future__ import annotations

import sys

from nlgmetrics.cli.common import version_string
from nlgmetrics.registry import TrainCommand, train_commands

USAGE_HEAD = "usage: nlgmetrics-train COMMAND [options]   (or python train.py ... in a checkout)\n\n"
USAGE_TAIL = """
'nlgmetrics-train COMMAND --help' shows each command's options and an example; --version prints the toolkit
version. Commands are declared by the packages that own them (entry-point group nlgmetrics.train_commands).
"""


def usage(commands: dict[str, TrainCommand]) -> str:
    """The command list with each command's one-line summary."""
    width = max((len(name) for name in commands), default=0) + 3
    return USAGE_HEAD + "".join(f"  {name:<{width}}{c.summary}\n" for name, c in commands.items()) + USAGE_TAIL


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = train_commands()
    if argv and argv[0] in ("-h", "--help"):
        print(usage(commands), end="")
        return 0
    if "--version" in argv:  # every subcommand answers it, LightningCLI's fit included
        print(version_string())
        return 0
    if not argv or argv[0] not in commands:
        problem = f"unknown command '{argv[0]}'\n" if argv else ""
        print(problem + usage(commands), end="", file=sys.stderr)
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except SystemExit as stop:
        # Lightning turns SIGTERM into a SystemExit without a code, which would end the process with status 0 as if
        # training had finished; schedulers must see it was not (143 = 128 + SIGTERM). Imported here: a SystemExit
        # from argparse (--help, bad flags) must not wait for Lightning to load.
        from pytorch_lightning.utilities.exceptions import SIGTERMException

        if isinstance(stop, SIGTERMException):
            print(
                "terminated (SIGTERM): rerun the same command to resume (fit: --ckpt_path, nli: --resume, with the "
                "last resume state it printed)",
                file=sys.stderr,
            )
            return 143
        raise
    except Exception as error:
        from nlgmetrics.resume import PieceEnded  # Lightning loads only when a command raised

        if isinstance(error, PieceEnded):  # a fit in pieces (--resume.stop_after_minutes): not done, not failed
            print(str(error), file=sys.stderr)
            return PieceEnded.EXIT_STATUS
        raise
    except KeyboardInterrupt:
        print(
            "interrupted: rerun the same command to resume (synthesize); for fit add --ckpt_path with the last "
            "'resume state' file it printed",
            file=sys.stderr,
        )
        return 130


def main_exit() -> None:
    """Console-script entry point: ``main`` with its return value as the process exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
