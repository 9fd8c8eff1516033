"""Scoring and measuring entry point: ``nlgmetrics-evaluate COMMAND ...`` (or ``python evaluate.py`` in a checkout).

Subcommands, one module each in ``nlgmetrics.cli.commands``: score, compare, correlate, adversarial, stress,
stress-report, make-adversarial, robustness, self-bias, devmix, nli-accuracy. Every metric flag comes from the
metric registry (``nlgmetrics.registry``): ``--metric`` takes any registered metric (the toolkit's and those of
installed packages), ``menli+<metric>[+<metric>...]``, or ``py:package.module:function`` for a plain Python callable
``function(hyps, refs, srcs) -> list[float]`` (higher is better).

The last stdout line of every command is one JSON object (machine-readable, sacrebleu-style signature
included); progress bars go to stderr. Bad input exits 1 with one line saying what is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys

from nlgmetrics.cli.commands import COMMANDS
from nlgmetrics.cli.common import check_outputs, finish_parser, json_safe
from nlgmetrics.quiet import silence_libraries

EPILOG = """examples:
  nlgmetrics-evaluate score --metric sescore --hyps examples/hyps.txt --refs examples/refs.txt
  nlgmetrics-evaluate score --metric menli --nli-model packaged:nli-minilm --hyps examples/hyps.txt \\
      --refs examples/refs.txt
  nlgmetrics-evaluate COMMAND --help"""


def make_parser() -> argparse.ArgumentParser:
    """The whole command line: one subparser per module of ``nlgmetrics.cli.commands``."""
    parser = argparse.ArgumentParser(
        prog="nlgmetrics-evaluate",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return finish_parser(parser)


RUNNERS = {command.NAME: command.run for command in COMMANDS}


def main(argv: list[str] | None = None) -> int:
    """Parse, run one subcommand, print its JSON result; the exit code says whether the input was usable."""
    args = make_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        silence_libraries()
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.modelroles import ModelRoleError, check_device
    from nlgmetrics.truncation import summary, track_truncation

    try:
        if getattr(args, "limit", None) is not None and args.limit < 1:
            raise InputError("--limit must be a positive number of items")
        if getattr(args, "skip", 0) < 0:
            raise InputError("--skip must be zero or a positive number of items")
        if getattr(args, "batch_size", 1) < 1:
            raise InputError("--batch-size must be >= 1")
        if getattr(args, "device", None) not in (None, "auto"):
            check_device(args.device)  # before any model loads
        check_outputs(args)
        with track_truncation() as truncated:
            result = RUNNERS[args.command](args)
    except (InputError, ModelRoleError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # a disk that fills up or a folder that vanishes while writing: one line, no traceback
        print(f"error: {error.strerror or error}: {error.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: no result written (outputs are written only when complete)", file=sys.stderr)
        return 130
    if isinstance(result, dict):
        result["truncated"] = truncated
        if summary(truncated):
            print(
                f"warning: {summary(truncated)} (scores saw only the first tokens; see 'truncated' in the JSON)",
                file=sys.stderr,
            )
    print(json.dumps(json_safe(result), ensure_ascii=False, allow_nan=False))
    return 0


def main_exit() -> None:
    """Console-script entry point: ``main`` with its return value as the process exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
