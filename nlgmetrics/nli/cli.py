"""``train.py nli``: fine-tune the offline NLI cross-encoder (MENLI's model, SEScore's severity labeller)."""

from __future__ import annotations

import argparse
import json
import sys

from nlgmetrics.registry import TrainCommand

EPILOG = """example:
  nlgmetrics-train nli --config configs/nli/minilm_lora.yaml --output runs/nli/mine --subset 2000"""


def main(argv: list[str]) -> int:
    """Parse ``train.py nli``'s options, train, print the training report as JSON; exit 2 on a bad recipe."""
    from nlgmetrics.helpformat import DefaultsHelpFormatter, add_renamed_flag

    parser = argparse.ArgumentParser(
        prog="nlgmetrics-train nli",
        description="Fine-tune the offline NLI cross-encoder.",
        formatter_class=DefaultsHelpFormatter,
        epilog=EPILOG,
    )
    parser.add_argument(
        "--config", required=True, help="YAML recipe, e.g. configs/nli/minilm_lora.yaml (a path or a packaged name)"
    )
    parser.add_argument("--output", help="checkpoint folder (default: the recipe's output)")
    parser.add_argument(
        "--subset",
        type=int,
        metavar="N",
        help="train on a seeded random subset of N pairs (smoke runs; the recipe's seed picks them)",
    )
    add_renamed_flag(parser, "--limit", "--subset", "subset", type=int)
    parser.add_argument("--epochs", type=int, help="training epochs (default: the recipe's)")
    parser.add_argument("--commercial-only", action="store_true", help="leave out non-commercial data (SICK, ANLI)")
    parser.add_argument(
        "--resume",
        metavar="STATE",
        help="continue an interrupted run from the last.safetensors it printed (same config and options otherwise)",
    )
    parser.add_argument(
        "--tests-only",
        action="store_true",
        help="train nothing: evaluate the exported adapter in --output (or the recipe's output) on the recipe's"
        " test sets and rewrite its report and model card (finishes a run stopped during evaluation)",
    )
    parser.add_argument("--wandb", action="store_true", help="log to Weights & Biases (WANDB_MODE=offline works)")
    args = parser.parse_args(argv)

    import yaml
    from pytorch_lightning.loggers import CSVLogger, WandbLogger

    from nlgmetrics.nli.training import NLITrainConfig, train_nli

    overrides = {
        k: v
        for k, v in {
            "output": args.output,
            "limit": args.subset,
            "epochs": args.epochs,
            "resume_from": args.resume,
        }.items()
        if v
    }
    if args.commercial_only:
        overrides["commercial_only"] = True
    try:
        config = NLITrainConfig.from_yaml(args.config, overrides)
    except (FileNotFoundError, ValueError, TypeError, yaml.YAMLError) as error:  # the recipe the user named
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.tests_only:
        from nlgmetrics.modelroles import ModelRoleError
        from nlgmetrics.nli.training import finish_tests

        try:
            report = finish_tests(config, recipe=(args.config,))
        except (FileNotFoundError, ModelRoleError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(json.dumps(report))
        return 0
    logger = WandbLogger(project="nlgmetrics-nli") if args.wandb else CSVLogger("runs", name="nli")
    report = train_nli(config, logger=logger, recipe=(args.config,))
    print(json.dumps(report))
    return 0


COMMAND = TrainCommand(
    "nli", "fine-tune the offline NLI cross-encoder (MENLI's model, SEScore's severity labeller)", main
)
