"""SEScore, MENLI and MARS logged from a Lightning training loop, as torchmetrics objects.

The generator is a toy on purpose, so that the metric plumbing is all there is to read: for each German source
sentence of ``examples/srcs.txt`` it picks one of two English candidates (a terse draft from ``hyps_terse.txt`` or
the full sentence from ``hyps.txt``) by the larger of two learnable logits. It starts out preferring the draft and
is trained with cross-entropy towards the full sentence, so its outputs change from one epoch to the next and the
validation scores move with them.

The pattern (the one the torchmetrics documentation gives for Lightning):

- the metrics are created in ``__init__`` as attributes of the module, so ``.to(device)`` (done by the Trainer)
  moves their state, and they never appear among the parameters, the optimizer or the checkpoint's state_dict;
- ``validation_step`` calls ``metric.update(preds, target)`` on the batch's hypotheses and references;
- ``on_validation_epoch_end`` logs ``metric.compute()`` (which gathers every process's scores under DDP) and then
  calls ``metric.reset()``, so each epoch's value covers that epoch's outputs only, and the Trainer's sanity check
  leaves nothing behind.

Run it on the shipped default models (they load offline from the installed packages; MARS generates with a causal
LM and is the slowest of the three)::

    .venv/bin/python examples/training_loop.py --epochs 2 --limit 4
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytorch_lightning as pl
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

from mars import MARS
from menli import MENLI
from sescore import SEScore

HERE = Path(__file__).resolve().parent
DEFAULT_MARS_CONFIG = "mars/offline.yaml"  # what `evaluate.py score --metric mars` uses (mars.registration)
METRIC_NAMES = ("val/sescore", "val/menli", "val/mars")


@dataclass(frozen=True)
class Item:
    """One source sentence, its human reference and the candidate outputs the toy generator chooses from."""

    source: str
    reference: str
    candidates: tuple[str, ...]
    gold: int  # the candidate the training loss pulls towards


def load_items(folder: Path = HERE, limit: int | None = None) -> list[Item]:
    """The shipped example set: the draft is candidate 0, the full sentence (the training target) candidate 1."""

    def lines(name: str) -> list[str]:
        return (folder / name).read_text(encoding="utf-8").splitlines()

    rows = zip(lines("srcs.txt"), lines("refs.txt"), lines("hyps_terse.txt"), lines("hyps.txt"))
    items = [Item(source, reference, (draft, full), gold=1) for source, reference, draft, full in rows]
    return items[:limit] if limit else items


class ItemDataset(Dataset):
    """Rows as dicts: the default collate turns a batch into index/gold tensors and lists of strings."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        item = self.items[index]
        return {"index": index, "gold": item.gold, "source": item.source, "reference": item.reference}


class ToyTranslator(pl.LightningModule):
    """A generator whose only parameters are one logit per (item, candidate), with the three metrics attached.

    ``sescore_checkpoint``, ``nli_model`` and ``mars_config`` name the metrics' models (None: SEScore's shipped
    checkpoint and MENLI's default NLI model; ``mars_config`` defaults to the packaged offline recipe).
    ``mars_overrides`` are dotted MARS config keys: MARS loads its models on its config's ``device`` ("auto": the
    GPU when there is one), not on the metric's, so a CPU run on a GPU machine should pass ``{"device": "cpu"}``.
    ``prior`` is the starting preference for candidate 0 (the draft); with plain SGD at ``lr`` 1 and a summed loss,
    each item's logits take one step per epoch, and a prior of 2 flips the choice in the second epoch.
    """

    def __init__(
        self,
        items: Sequence[Item],
        *,
        sescore_checkpoint: str | Sequence[str] | None = None,
        nli_model: str | None = None,
        mars_config: str | Path | Mapping[str, Any] = DEFAULT_MARS_CONFIG,
        mars_overrides: Mapping[str, Any] | None = None,
        metric_batch_size: int = 16,
        prior: float = 2.0,
        lr: float = 1.0,
    ) -> None:
        super().__init__()
        widths = {len(item.candidates) for item in items}
        if len(widths) != 1:
            raise ValueError(f"every item needs the same number of candidates, got {sorted(widths)}")
        self.candidates = [list(item.candidates) for item in items]
        self.lr = lr
        logits = torch.zeros(len(items), widths.pop())
        logits[:, 0] = prior
        self.logits = torch.nn.Parameter(logits)
        # Metrics as attributes: Lightning moves them with the module; their models are loaded on first update.
        self.sescore = SEScore(checkpoint=sescore_checkpoint, batch_size=metric_batch_size)
        self.menli = MENLI(model=nli_model, batch_size=metric_batch_size)
        self.mars = MARS(mars_config, overrides={"progress": False, **(mars_overrides or {})})

    def generate(self, indices: torch.Tensor) -> list[str]:
        """The hypothesis for each item: its candidate with the largest logit."""
        choices = self.logits[indices].argmax(dim=-1)
        return [self.candidates[i][j] for i, j in zip(indices.tolist(), choices.tolist())]

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        # summed, not averaged: each item's row then moves by the same step whatever the batch size
        loss = F.cross_entropy(self.logits[batch["index"]], batch["gold"], reduction="sum")
        self.log("train/loss", loss, batch_size=len(batch["index"]))
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        hyps, refs = self.generate(batch["index"]), batch["reference"]
        self.sescore.update(hyps, refs)
        self.menli.update(hyps, refs)
        self.mars.update(hyps, refs)  # MARS also takes srcs= (the story so far) as context for its cloze LM

    def on_validation_epoch_end(self) -> None:
        for name, metric in zip(METRIC_NAMES, (self.sescore, self.menli, self.mars)):
            self.log(name, metric.compute())  # compute() already gathers all processes' scores: no sync_dist
            metric.reset()  # the next epoch (and the first after the sanity check) starts empty

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def fit(
    module: ToyTranslator,
    items: Sequence[Item],
    *,
    epochs: int = 2,
    accelerator: str = "auto",
    batch_size: int = 4,
    log_dir: str | Path = "runs/training_loop",
    **trainer_options: Any,
) -> pl.Trainer:
    """Train and validate ``module`` on ``items`` (both loaders see every item once per epoch); the Trainer.

    Every epoch's metric values are in ``<log_dir>/.../metrics.csv``; the last epoch's also in
    ``trainer.callback_metrics``. ``trainer_options`` go to ``pl.Trainer`` (callbacks, num_sanity_val_steps, ...).
    """
    from pytorch_lightning.loggers import CSVLogger

    options: dict[str, Any] = {"enable_checkpointing": False, "log_every_n_steps": 1, **trainer_options}
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator=accelerator,
        devices=1,
        logger=CSVLogger(str(log_dir), name="training_loop"),
        **options,
    )
    data = ItemDataset(items)
    trainer.fit(module, DataLoader(data, batch_size=batch_size, shuffle=True), DataLoader(data, batch_size=batch_size))
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    from menli.scorer import DEFAULT_NLI
    from sescore.scorer import DEFAULT_CHECKPOINT

    parser = argparse.ArgumentParser(
        description="A toy generator trained with Lightning, validated with SEScore, "
        "MENLI and MARS logged as torchmetrics objects."
    )
    parser.add_argument("--epochs", type=int, default=2, help="training epochs (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N examples (default: all 8)")
    parser.add_argument("--batch-size", type=int, default=4, help="items per batch (default: %(default)s)")
    parser.add_argument(
        "--accelerator", default="auto", help="Lightning accelerator: cpu, gpu, auto (default: %(default)s)"
    )
    parser.add_argument(
        "--sescore-checkpoint",
        default=DEFAULT_CHECKPOINT,
        help="SEScore checkpoint folder (default: the shipped %(default)s)",
    )
    parser.add_argument("--nli-model", default=DEFAULT_NLI, help="MENLI's NLI model (default: %(default)s)")
    parser.add_argument(
        "--mars-config",
        default=DEFAULT_MARS_CONFIG,
        help="MARS YAML config, a path or a packaged name (default: %(default)s)",
    )
    parser.add_argument("--mars-cache", default=None, help="MARS augmentation cache folder (default: the config's)")
    parser.add_argument("--log-dir", default="runs/training_loop", help="CSV logs (default: %(default)s)")
    args = parser.parse_args(argv)

    overrides: dict[str, Any] = {"cache_dir": args.mars_cache} if args.mars_cache else {}
    if args.accelerator == "cpu":
        overrides["device"] = "cpu"  # MARS follows its config's device, not the module's (see ToyTranslator)
    items = load_items(limit=args.limit)
    module = ToyTranslator(
        items,
        sescore_checkpoint=args.sescore_checkpoint,
        nli_model=args.nli_model,
        mars_config=args.mars_config,
        mars_overrides=overrides,
    )
    trainer = fit(
        module,
        items,
        epochs=args.epochs,
        accelerator=args.accelerator,
        batch_size=args.batch_size,
        log_dir=args.log_dir,
    )
    for name in METRIC_NAMES:
        print(f"{name}: {float(trainer.callback_metrics[name]):.4f} (last epoch)")
    print(f"every epoch: {Path(trainer.logger.log_dir) / 'metrics.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
