"""``python train.py fit --config configs/sescore/fit_offline.yaml [--section.key value ...]`` via LightningCLI.

Every constructor argument of ``SEScoreModule`` (``--model.*``), ``SEScoreDataModule`` (``--data.*``), the
Trainer (``--trainer.*``) and the export callback (``--export.*``) is a command-line override of the YAML.
Defaults keep Lightning's pickled ``.ckpt`` files off; the exported folder is the checkpoint. The full training
state is saved every ``--resume.every_n_train_steps`` steps as safetensors (``nlgmetrics.resume``); an interrupted
run continues with ``--ckpt_path <log dir>/resume/last.safetensors`` and the same arguments otherwise.
Logging: CSV by default; ``--trainer.logger pytorch_lightning.loggers.WandbLogger --trainer.logger.project P``
for Weights & Biases (``WANDB_MODE=offline`` works without network).
"""

from __future__ import annotations

import sys
import warnings
from typing import Sequence

from pytorch_lightning import Trainer
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI
from pytorch_lightning.plugins.io import CheckpointIO

from nlgmetrics.resume import ResumeState, SafetensorsCheckpointIO
from sescore.regressor.datamodule import SEScoreDataModule
from sescore.regressor.export import ExportBest
from sescore.regressor.module import SEScoreModule

TRAINER_DEFAULTS = {
    "enable_checkpointing": False,  # Lightning .ckpt files are pickles; ExportBest writes safetensors + YAML
    "num_sanity_val_steps": 0,
    "logger": {
        "class_path": "pytorch_lightning.loggers.CSVLogger",
        "init_args": {"save_dir": "runs", "name": "sescore"},
    },
}


class SEScoreCLI(LightningCLI):
    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_lightning_class_args(ExportBest, "export")
        parser.add_lightning_class_args(ResumeState, "resume")

    def instantiate_trainer(self, **kwargs: object) -> Trainer:
        """Every Lightning checkpoint of this CLI (resume state, ``--ckpt_path``) is read and written as safetensors."""
        plugins = self._get(self.config_init, "trainer", default={}).get("plugins")
        plugins = [] if plugins is None else list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
        if not any(isinstance(p, CheckpointIO) for p in plugins):
            plugins.append(SafetensorsCheckpointIO())
        return super().instantiate_trainer(plugins=plugins, **kwargs)


def fit_main(argv: Sequence[str]) -> int:
    """Run ``fit`` with the given arguments (everything after ``train.py fit``).

    A ``--config`` that is neither a file nor a packaged recipe is one ``error:`` line and exit 2 (the same as an
    unknown option in LightningCLI), not a traceback."""
    try:
        argv = _packaged_config(argv)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with warnings.catch_warnings():
        # train.py hands over sys.argv explicitly; LightningCLI warns about that combination
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        _run(argv)
    return 0


def _packaged_config(argv: Sequence[str]) -> list[str]:
    """``--config NAME`` / ``--config=NAME`` resolved through the packaged recipes (pip users have no configs/)."""
    from nlgmetrics.resources import config_path

    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--config" and i + 1 < len(out):
            out[i + 1] = str(config_path(out[i + 1]))
        elif arg.startswith("--config="):
            out[i] = "--config=" + str(config_path(arg.split("=", 1)[1]))
    return out


def _run(argv: Sequence[str]) -> None:
    SEScoreCLI(
        SEScoreModule,
        SEScoreDataModule,
        args=["fit", *argv],
        trainer_defaults=TRAINER_DEFAULTS,
        seed_everything_default=13,
        auto_configure_optimizers=False,
        save_config_kwargs={"overwrite": True},
        parser_kwargs={"fit": {"default_env": False}},
    )
