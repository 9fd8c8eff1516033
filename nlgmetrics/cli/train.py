"""Training entry point: ``python train.py {nli,synthesize,fit,ensemble,pack} ...``.

Each sub-command composes the metric packages; the packages never import this file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from nlgmetrics.cli.common import DefaultsHelpFormatter, version_string

# sescore.regressor.checkpoint.STORED_DTYPES, written out: importing it would load the model stack for every --help
STORED_DTYPES = ("float32", "float16")

USAGE = """usage: train.py {nli,synthesize,fit,ensemble,pack} [options]   (or nlgmetrics-train ...)

  nli          fine-tune the offline NLI cross-encoder (MENLI's model, SEScore's severity labeller)
  synthesize   SEScore stratified error synthesis: run (default), merge, calibrate
  fit          train the SEScore regressor (LightningCLI): fit --config CONFIG.yaml [overrides]
  ensemble     pack exported SEScore checkpoints into one folder that scores as their mean
  pack         copy one exported SEScore checkpoint into a new folder, weights stored as float16

'train.py COMMAND --help' shows each command's options; --version prints the toolkit version.
"""


def _nli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="train.py nli", description="Fine-tune the offline NLI cross-encoder.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--config", required=True, help="YAML recipe, e.g. configs/nli/minilm_lora.yaml")
    parser.add_argument("--output", help="checkpoint folder (overrides the config)")
    parser.add_argument("--limit", type=int, help="train on a random subset of N pairs (smoke runs)")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--commercial-only", action="store_true", help="leave out non-commercial data (SICK, ANLI)")
    parser.add_argument("--resume", metavar="STATE", help="continue an interrupted run from the last.safetensors it "
                        "printed (same config and options otherwise)")
    parser.add_argument("--wandb", action="store_true", help="log to Weights & Biases (WANDB_MODE=offline works)")
    args = parser.parse_args(argv)

    import yaml
    from pytorch_lightning.loggers import CSVLogger, WandbLogger

    from nlgmetrics.nli.training import NLITrainConfig, train_nli

    overrides = {k: v for k, v in {"output": args.output, "limit": args.limit, "epochs": args.epochs,
                                   "resume_from": args.resume}.items() if v}
    if args.commercial_only:
        overrides["commercial_only"] = True
    try:
        config = NLITrainConfig.from_yaml(args.config, overrides)
    except (FileNotFoundError, ValueError, TypeError, yaml.YAMLError) as error:  # the recipe the user named
        return _error(error)
    logger = WandbLogger(project="nlgmetrics-nli") if args.wandb else CSVLogger("runs", name="nli")
    report = train_nli(config, logger=logger, recipe=(args.config,))
    print(json.dumps(report))
    return 0


def _synthesize(argv: list[str]) -> int:
    """SEScore error synthesis: ``run`` (default), ``merge`` and ``calibrate``; see sescore/synthesis/cli.py."""
    from sescore.synthesis.cli import main as synthesize_main

    return synthesize_main(argv)


def _fit(argv: list[str]) -> int:
    """Train the SEScore regressor with LightningCLI: ``--config configs/sescore/fit_offline.yaml`` plus overrides."""
    from sescore.regressor.cli import fit_main

    return fit_main(argv)


def _ensemble(argv: list[str]) -> int:
    """Pack SEScore checkpoints into an ensemble folder usable wherever one checkpoint folder is."""
    parser = argparse.ArgumentParser(
        prog="train.py ensemble", formatter_class=DefaultsHelpFormatter,
        description="Copy exported SEScore checkpoints into one folder (ensemble.yaml + a sub-folder each); "
                    "evaluate.py --checkpoint FOLDER and sescore.SEScore(checkpoint=FOLDER) then score with the "
                    "mean of the members' scores.")
    parser.add_argument("--members", nargs="+", required=True, help="exported checkpoint folders (two or more)")
    parser.add_argument("--names", nargs="+", help="sub-folder name per member (default: each folder's name)")
    parser.add_argument("--out", required=True, help="new folder to create (an existing one is never overwritten)")
    parser.add_argument("--note", default="", help="free text stored in ensemble.yaml (e.g. how it was chosen)")
    parser.add_argument("--dtype", choices=STORED_DTYPES, default="float32",
                        help="how the members' weights are stored (float16: half the size; loaded as float32)")
    args = parser.parse_args(argv)

    from sescore.regressor.checkpoint import pack_ensemble

    return _write_checkpoint(lambda: pack_ensemble(args.members, args.out, args.names, args.note, args.dtype),
                             f"ensemble of {len(args.members)} checkpoints written to {{out}}")


def _pack(argv: list[str]) -> int:
    """Copy one SEScore checkpoint into a new folder with its weights stored as float16 (or float32)."""
    parser = argparse.ArgumentParser(
        prog="train.py pack", formatter_class=DefaultsHelpFormatter,
        description="Copy an exported SEScore checkpoint into a new folder, weights stored as --dtype (float16 "
                    "halves a LoRA checkpoint on a base-size encoder; scoring loads them as float32), with "
                    "machine paths removed from its record and its model card rendered.")
    parser.add_argument("--checkpoint", required=True, help="exported checkpoint folder")
    parser.add_argument("--out", required=True, help="new folder to create (an existing one is never overwritten)")
    parser.add_argument("--dtype", choices=STORED_DTYPES, default="float16")
    parser.add_argument("--note", default="", help="free text stored in the record and the model card (e.g. how it "
                                                     "was chosen)")
    args = parser.parse_args(argv)

    from sescore.regressor.checkpoint import pack_checkpoint

    return _write_checkpoint(lambda: pack_checkpoint(args.checkpoint, args.out, args.dtype, args.note),
                             f"checkpoint written to {{out}} ({args.dtype} weights)")


def _write_checkpoint(write: Callable[[], Path], done: str) -> int:
    """Run a checkpoint writer: ``done`` (with ``{out}``) on success, one ``error:`` line and exit 2 on a
    CheckpointError (nothing is left behind: the writers build beside their output and rename at the end)."""
    from sescore.regressor.checkpoint import CheckpointError

    try:
        out = write()
    except CheckpointError as error:
        return _error(error)
    print(done.format(out=out))
    return 0


def _error(error: Exception) -> int:
    """A user's input problem: one ``error:`` line on stderr and exit status 2, never a traceback."""
    print(f"error: {error}", file=sys.stderr)
    return 2


COMMANDS = {"nli": _nli, "synthesize": _synthesize, "fit": _fit, "ensemble": _ensemble, "pack": _pack}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    if argv and argv[0] == "--version":
        print(version_string())
        return 0
    if not argv or argv[0] not in COMMANDS:
        problem = f"unknown command '{argv[0]}'\n" if argv else ""
        print(problem + USAGE, end="", file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except SystemExit as stop:
        # Lightning turns SIGTERM into a SystemExit without a code, which would end the process with status 0 as if
        # training had finished; schedulers must see it was not (143 = 128 + SIGTERM). Imported here: a SystemExit
        # from argparse (--help, bad flags) must not wait for Lightning to load.
        from pytorch_lightning.utilities.exceptions import SIGTERMException

        if isinstance(stop, SIGTERMException):
            print("terminated (SIGTERM): rerun the same command to resume (fit: --ckpt_path, nli: --resume, with the "
                  "last resume state it printed)", file=sys.stderr)
            return 143
        raise
    except KeyboardInterrupt:
        print("interrupted: rerun the same command to resume (synthesize); for fit add --ckpt_path with the last "
              "'resume state' file it printed", file=sys.stderr)
        return 130


def main_exit() -> None:
    """Console-script entry point: ``main`` with its return value as the process exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
