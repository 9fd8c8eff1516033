"""Training entry point: ``nlgmetrics-train COMMAND ...`` (or ``python train.py`` in a checkout).

The subcommands are declared by the packages that own them (``nlgmetrics.registry.TrainCommand`` in the entry-point
group ``nlgmetrics.train_commands``: ``nli`` by ``nlgmetrics.nli``, ``synthesize``, ``fit``, ``ensemble`` and
``pack`` by ``sescore``), so this layer imports no metric package.
"""

from __future__ import annotations

import os
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


M_TRIM_THRESHOLD, M_ARENA_MAX = -1, -8  # glibc's mallopt parameters (malloc.h)


def bound_malloc(arenas: int = 2, trim_threshold: int = 128 * 2**20) -> bool:
    """Keep a long CPU fit's memory flat: at most ``arenas`` glibc malloc arenas, and freed memory above
    ``trim_threshold`` bytes handed back to the system.

    Why: batches of ever-different shapes (length-bucketed text) leave freed blocks scattered over one arena per
    thread, so a multi-hour fit's resident memory keeps growing (an EmbeddingGemma fit reached 19 GB by step 420
    of 730 on a 24 GB machine) while two arenas and a trim threshold keep it at a few GB. Skipped when the user
    set ``MALLOC_ARENA_MAX`` or ``MALLOC_TRIM_THRESHOLD_`` (theirs win), with ``NLGMETRICS_MALLOC=default``, and
    off glibc.

    Returns:
        Whether both settings were applied.
    """
    if os.environ.get("NLGMETRICS_MALLOC") == "default" or not sys.platform.startswith("linux"):
        return False
    if "MALLOC_ARENA_MAX" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # musl and other C libraries: nothing to tune
        return False
    return bool(mallopt(M_ARENA_MAX, arenas)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))


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
    bound_malloc()  # before any model or thread exists
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
