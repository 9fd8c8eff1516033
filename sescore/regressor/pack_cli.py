"""``train.py ensemble`` and ``train.py pack``: new checkpoint folders from exported SEScore checkpoints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

STORED_DTYPES = ("float32", "float16")  # sescore.regressor.checkpoint.STORED_DTYPES; a test keeps the two equal


def _parser(
    prog: str, description: str, example: str, kind: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.ArgumentParser:
    from nlgmetrics.helpformat import DefaultsHelpFormatter

    return kind(
        prog=f"nlgmetrics-train {prog}",
        description=description,
        formatter_class=DefaultsHelpFormatter,
        epilog=f"example:\n  {example}",
    )


def ensemble_main(argv: list[str]) -> int:
    """Pack SEScore checkpoints into an ensemble folder usable wherever one checkpoint folder is."""
    parser = _parser(
        "ensemble",
        "Copy exported SEScore checkpoints into one folder (ensemble.yaml + a sub-folder "
        "each); evaluate --checkpoint FOLDER and load_metric('sescore', checkpoint=[FOLDER]) "
        "then score with the mean of the members' scores.",
        "nlgmetrics-train ensemble --members runs/seed13 runs/seed14 --out runs/ensemble",
    )
    parser.add_argument("--members", nargs="+", required=True, help="exported checkpoint folders (two or more)")
    parser.add_argument("--names", nargs="+", help="sub-folder name per member (default: each folder's name)")
    parser.add_argument("--out", required=True, help="new folder to create (an existing one is never overwritten)")
    parser.add_argument("--note", default="", help="free text stored in ensemble.yaml (e.g. how it was chosen)")
    parser.add_argument(
        "--dtype",
        choices=STORED_DTYPES,
        default="float32",
        help="how the members' weights are stored (float16: half the size; loaded as float32)",
    )
    args = parser.parse_args(argv)

    from sescore.regressor.checkpoint import pack_ensemble

    return _write_checkpoint(
        lambda: pack_ensemble(args.members, args.out, args.names, args.note, args.dtype),
        f"ensemble of {len(args.members)} checkpoints written to {{out}}",
    )


def pack_main(argv: list[str]) -> int:
    """Copy one SEScore checkpoint into a new folder with its weights stored as float16 (or float32), optionally
    moved part of the way back to its run's initialisation first (``--start``/``--weight``, how the default was
    made); ``--config`` reads these options from a YAML (``sescore.options_file``)."""
    from sescore.options_file import OptionsFileError, OptionsFileParser, with_options_file

    parser = _parser(
        "pack",
        "Copy an exported SEScore checkpoint into a new folder, weights stored as --dtype "
        "(float16 halves a LoRA checkpoint on a base-size encoder; scoring loads them as "
        "float32), with machine paths removed from its record and its model card rendered. "
        "With --start and --weight the copy holds the weights that fraction of the way from "
        "the run's initialisation (an export of the same fit run for one step with learning "
        "rates 0) to the checkpoint (WiSE-FT), as the shipped default was made.",
        "nlgmetrics-train pack --checkpoint runs/sescore/best --out my-sescore\n"
        "  nlgmetrics-train pack --config configs/sescore/mpnet_v2_pack.yaml",
        OptionsFileParser,
    )
    parser.add_required_option("--checkpoint", help="exported checkpoint folder")
    parser.add_required_option("--out", help="new folder to create (an existing one is never overwritten)")
    parser.add_argument("--dtype", choices=STORED_DTYPES, default="float16", help="how the weights are stored")
    parser.add_argument(
        "--note", default="", help="free text stored in the record and the model card (e.g. how it was chosen)"
    )
    parser.add_argument(
        "--start",
        help="the export of the same fit's initialisation: store the weights --weight of "
        "the way from it to --checkpoint instead of --checkpoint's own",
    )
    parser.add_argument(
        "--weight", type=float, help="with --start: 0 = the start, 1 = --checkpoint (the shipped default: 0.5)"
    )
    parser.add_argument(
        "--config",
        help="options file: these options as YAML keys (checkpoint, start, weight, "
        "dtype, out, note), e.g. configs/sescore/mpnet_v2_pack.yaml; options on the "
        "command line win",
    )
    try:
        argv = with_options_file(parser, argv)
    except OptionsFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if (args.start is None) != (args.weight is None):
        parser.error("--start and --weight go together: the start folder and how far from it to go")

    from sescore.regressor.checkpoint import pack_checkpoint, pack_interpolated

    if args.start is not None:
        return _write_checkpoint(
            lambda: pack_interpolated(args.start, args.checkpoint, args.weight, args.out, args.dtype, args.note),
            f"checkpoint {args.weight:g} of the way from {args.start} to {args.checkpoint} written to {{out}} "
            f"({args.dtype} weights)",
        )
    return _write_checkpoint(
        lambda: pack_checkpoint(args.checkpoint, args.out, args.dtype, args.note),
        f"checkpoint written to {{out}} ({args.dtype} weights)",
    )


def _write_checkpoint(write: Callable[[], Path], done: str) -> int:
    """Run a checkpoint writer: ``done`` (with ``{out}``) on success, one ``error:`` line and exit 2 on a
    CheckpointError (nothing is left behind: the writers build beside their output and rename at the end)."""
    from sescore.regressor.checkpoint import CheckpointError

    try:
        out = write()
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(done.format(out=out))
    return 0
