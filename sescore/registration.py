"""SEScore's declaration for the metric registry (``nlgmetrics.registry``).

Importing this module loads no model and no torch: the command line reads it for ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nlgmetrics.registry import (
    MetricSpec,
    TrainCommand,
    batch_size_option,
    device_option,
    lang_option,
    option,
    precision_option,
    progress_option,
)
from sescore.shipped import checkpoint_folder


@dataclass
class SEScoreOptions:
    checkpoint: list[str] | None = option(
        None,
        "sescore: checkpoint folder or shipped name (default: mpnet-v2, for German references me5-de; in a "
        "menli+...+sescore mix: minilm-v2, "
        "the model the packaged mix recipe was fitted with), or several: the mean of their scores (e.g. the "
        "training seeds of one recipe; train.py ensemble packs them into one folder)",
        metavar="CHECKPOINT",
    )
    batch_size: int = batch_size_option()
    device: str | None = device_option()
    precision: str = precision_option()
    progress: bool = progress_option()
    lang: str | None = lang_option()


def build_sescore(options: SEScoreOptions) -> Any:
    from sescore.scorer import DEFAULT_CHECKPOINT, SEScoreScorer

    folders = [checkpoint_folder(c) for c in options.checkpoint] if options.checkpoint else DEFAULT_CHECKPOINT
    return SEScoreScorer(
        folders,
        options.batch_size,
        options.device,
        progress=options.progress,
        precision=options.precision,
        lang=options.lang,
        follow_language=not options.checkpoint,
    )


SESCORE = MetricSpec(
    "sescore",
    "a regressor trained on synthetic errors graded by NLI severity (SEScore)",
    SEScoreOptions,
    build_sescore,
    languages="English (mpnet-v2) and German (me5-de), chosen by the references' language; other languages are refused",
    licence="Apache-2.0 (MPNet), MIT (me5-small); trained on research-use text, severities from an NLI adapter "
    "whose data includes SICK (CC BY-NC-SA 3.0)",
)


# train.py's SEScore subcommands (entry-point group nlgmetrics.train_commands), run only when called
SYNTHESIZE = TrainCommand(
    "synthesize",
    "SEScore stratified error synthesis: run (default), sentences, merge, calibrate",
    "sescore.synthesis.cli:main",
)
FIT = TrainCommand(
    "fit",
    "train the SEScore regressor (LightningCLI): fit --config CONFIG.yaml [overrides]",
    "sescore.regressor.cli:fit_main",
)
ENSEMBLE = TrainCommand(
    "ensemble",
    "pack exported SEScore checkpoints into one folder that scores as their mean",
    "sescore.regressor.pack_cli:ensemble_main",
)
PACK = TrainCommand(
    "pack",
    "copy one exported SEScore checkpoint into a new folder, weights stored as float16",
    "sescore.regressor.pack_cli:pack_main",
)
