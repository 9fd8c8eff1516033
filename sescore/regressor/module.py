"""Lightning shell around ``SEScoreRegressor``: MSE on synthesis scores, tau-like selection on human judgments.

All modelling lives in ``model.py`` and the optimiser recipe in ``optim.py``; this class wires them to
Lightning's loop (logging, schedules, DDP) and nothing else. Every constructor argument is a hyper-parameter
that ``train.py fit`` exposes as ``--model.<name>``.
"""

from __future__ import annotations

import math
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from sescore.regressor.checkpoint import load_trainable
from sescore.regressor.config import DEFAULT_LORA_TARGETS, LoraSettings, RegressorConfig
from sescore.regressor.model import build_regressor
from sescore.regressor.optim import GROUP_KIND, freeze_factor, param_groups
from sescore.regressor.optim import freeze_embeddings as freeze_embedding_tables
from sescore.regressor.scale import describe, to_target
from sescore.regressor.selection import DevTauLike


def within_group_rank_loss(
    preds: torch.Tensor, target: torch.Tensor, group: torch.Tensor, scale: float
) -> torch.Tensor:
    """Mean logistic loss over ordered pairs (i, j) of one group with ``target[i] > target[j]``.

    ``softplus(-(preds[i] - preds[j]) / scale)``: the better variant should score higher. Pairs with equal
    targets carry no order and are left out; a batch without any ordered pair gives a zero that still depends on
    ``preds`` (so every parameter keeps a gradient under DDP).
    """
    same = group[:, None] == group[None, :]
    ordered = same & (target[:, None] > target[None, :])
    if not bool(ordered.any()):
        return preds.sum() * 0.0
    margin = preds[:, None] - preds[None, :]
    return F.softplus(-margin[ordered] / scale).mean()


class SEScoreModule(pl.LightningModule):
    """Train the SEScore regressor.

    Args:
        encoder: encoder role value (``packaged:minilm``, a local folder, ``roberta-large``...).
        layer_mix: learned softmax mix of all hidden layers before pooling (released v1) instead of the last layer.
        hidden_sizes: feed-forward head widths (paper: 2048, 1024).
        dropout: head dropout (paper 0.15, v2 0.1).
        max_length: token cap per sentence.
        output_scale: ``unit`` trains on (25 + s) / 25 in [0, 1]; ``raw`` on s in [-25, 0]. Stored in the
            checkpoint; scores come out on this scale.
        encoder_lr: learning rate of the top encoder block (v1: 1e-5).
        head_lr: learning rate of head and layer mix (v1: 3.1e-5).
        layerwise_decay: lr factor per block going down (v1: 0.95; 1.0 = off).
        encoder_freeze_fraction: the encoder stays still for this fraction of the first epoch (v1: 0.3).
        freeze_embeddings: never update the embedding tables (v1: true).
        weight_decay: AdamW weight decay (v1: 0).
        lora_r: rank of LoRA adapters on the encoder; None = full fine-tuning. Small checkpoints when set.
        lora_alpha, lora_dropout, lora_target_modules: the rest of the LoRA shape.
        alignment: add BERTScore-style greedy token alignment (P, R, F1) to the head's input, with a linear skip
            to the output that starts as F1 (see ``model.py``).
        init_from: an exported SEScore checkpoint folder to start from (its architecture replaces the shape
            arguments above): the second stage of synthetic pre-training then human-judgment fine-tuning.
        pair_scale: temperature of the pairwise logistic loss on judged pairs,
            ``softplus(-(s(better) - s(worse)) / pair_scale)``; score gaps of a few ``pair_scale`` count as
            settled (scores live in [0, 1], so 0.05 asks for gaps of ~0.1). The within-reference ranking loss
            uses the same temperature.
        rank_weight: weight of a within-reference ranking loss added to the regression loss (0 = off, the
            paper's pure regression). Human judgments rank candidates of one reference against each other, which
            plain MSE never asks for directly: every pair of variants of one reference in the batch whose
            synthetic scores differ adds ``softplus(-(s(better) - s(worse)) / pair_scale)``, averaged over the
            batch's pairs. Needs ``data.group_variants > 0`` so that variants of a reference share a batch.
        layer_mix_last_logit: start the layer mix with this extra logit on the last layer (0 = the plain average
            of all layers, v1's start). With ``alignment`` the untrained model is F1 on the mixed states, so a large
            value starts it near BERTScore on the last layer, the baseline it has to beat. Initialisation only:
            the trained weights are in the checkpoint.
        lexical: text-level features added to the head's input and to the alignment skip (weight 0 at the
            start), from ``model.LEXICAL_FEATURES`` (``chrf``); needs ``alignment``. A learned combination of
            SEScore with chrF trained on the synthetic triples only.
        nli: an NLI model (role value, e.g. ``packaged:nli-minilm``) whose entailment and contradiction
            probabilities, both directions, join the head's input and the alignment skip like ``lexical``; needs
            ``alignment``. The NLI model stays frozen; the checkpoint names it and the hash of its weights.
    """

    def __init__(
        self,
        encoder: str = "packaged:minilm",
        layer_mix: bool = False,
        hidden_sizes: tuple[int, ...] = (2048, 1024),
        dropout: float = 0.1,
        max_length: int = 256,
        output_scale: str = "unit",
        encoder_lr: float = 1.0e-5,
        head_lr: float = 3.1e-5,
        layerwise_decay: float = 0.95,
        encoder_freeze_fraction: float = 0.3,
        freeze_embeddings: bool = True,
        weight_decay: float = 0.0,
        lora_r: int | None = None,
        lora_alpha: int = 16,
        lora_dropout: float = 0.1,
        lora_target_modules: str = DEFAULT_LORA_TARGETS,
        alignment: bool = False,
        init_from: str | None = None,
        pair_scale: float = 0.05,
        rank_weight: float = 0.0,
        layer_mix_last_logit: float = 0.0,
        lexical: tuple[str, ...] = (),
        nli: str | None = None,
    ) -> None:
        super().__init__()
        if not 0.0 <= encoder_freeze_fraction <= 1.0:
            raise ValueError(f"encoder_freeze_fraction must be in [0, 1], got {encoder_freeze_fraction}")
        if pair_scale <= 0:
            raise ValueError(f"pair_scale must be > 0, got {pair_scale}")
        if not (rank_weight >= 0 and math.isfinite(rank_weight)):
            raise ValueError(f"rank_weight must be a finite number >= 0, got {rank_weight}")
        self.save_hyperparameters()
        if init_from:
            if layer_mix_last_logit:
                raise ValueError("layer_mix_last_logit initialises a new model; init_from keeps its trained mix")
            self.regressor = load_trainable(init_from)
            self.config = self.regressor.config
        else:
            lora = LoraSettings(lora_r, lora_alpha, lora_dropout, lora_target_modules) if lora_r else None
            self.config = RegressorConfig(
                encoder,
                layer_mix,
                tuple(hidden_sizes),
                dropout,
                max_length,
                output_scale,
                lora,
                alignment,
                tuple(lexical),
                nli,
            )
            self.regressor = build_regressor(self.config)
            if layer_mix_last_logit:
                if self.regressor.layer_mix is None:
                    raise ValueError("layer_mix_last_logit needs layer_mix: true")
                with torch.no_grad():
                    self.regressor.layer_mix.weights[-1] = float(layer_mix_last_logit)
        if freeze_embeddings:
            freeze_embedding_tables(self.regressor.encoder)
        self.dev_tau = DevTauLike()
        # optimizer steps with the encoder still; set from the epoch length in configure_optimizers
        self.frozen_steps = 1 if encoder_freeze_fraction > 0 else 0

    # ----------------------------------------------------------------------------------------------- steps
    def encoder_frozen(self) -> bool:
        return self.global_step < self.frozen_steps

    def pair_loss(
        self, batch: dict[str, Any], encoder_grad: bool, distinct: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logistic loss and accuracy of judged pairs: both candidates in one batched pass (``distinct``:
        validation, each distinct text encoded once, see ``SEScoreRegressor.forward``)."""
        n = len(batch["better"])
        preds = self.regressor(
            batch["better"] + batch["worse"], batch["reference"] * 2, encoder_grad=encoder_grad, distinct=distinct
        )
        margin = preds[:n] - preds[n:]
        loss = F.softplus(-margin / self.hparams.pair_scale).mean()
        return loss, (margin > 0).float().mean()

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        # while frozen, a single process skips the encoder's backward graph; under DDP every parameter must get
        # a gradient, so the graph stays and the zero learning rate alone keeps the encoder still
        encoder_grad = not self.encoder_frozen() or self.trainer.world_size > 1
        if "better" in batch:
            loss, accuracy = self.pair_loss(batch, encoder_grad)
            self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["better"]))
            self.log("train_pair_acc", accuracy, batch_size=len(batch["better"]))
            return loss
        preds = self.regressor(batch["candidate"], batch["reference"], encoder_grad=encoder_grad)
        target = to_target(batch["score"].to(preds.device, preds.dtype), self.config.output_scale)
        loss = F.mse_loss(preds, target)
        if self.hparams.rank_weight > 0:
            if "group" not in batch:
                raise ValueError(
                    "model.rank_weight > 0 needs batches of reference groups: set data.group_variants "
                    "(e.g. 10) so that variants of one reference share a batch"
                )
            rank = within_group_rank_loss(preds, target, batch["group"].to(preds.device), self.hparams.pair_scale)
            self.log("train_mse", loss, batch_size=len(preds))
            self.log("train_rank_loss", rank, batch_size=len(preds))
            loss = loss + self.hparams.rank_weight * rank
        self.log("train_loss", loss, prog_bar=True, batch_size=len(preds))
        self.log("encoder_frozen", float(self.encoder_frozen()), batch_size=len(preds))
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int, dataloader_idx: int = 0) -> None:
        if "better" in batch:
            loss, accuracy = self.pair_loss(batch, encoder_grad=False, distinct=True)
            size = len(batch["better"])
            self.log("val_loss", loss, batch_size=size, sync_dist=True, add_dataloader_idx=False, prog_bar=True)
            self.log("val_pair_acc", accuracy, batch_size=size, sync_dist=True, add_dataloader_idx=False)
            return
        preds = self.regressor(batch["candidate"], batch["reference"], encoder_grad=False, distinct=True)
        if "human" in batch:
            self.dev_tau.update(preds, batch["row"], batch["human"], batch["item"], batch.get("set"))
        else:
            target = to_target(batch["score"].to(preds.device, preds.dtype), self.config.output_scale)
            self.log(
                "val_loss",
                F.mse_loss(preds, target),
                batch_size=len(preds),
                sync_dist=True,
                add_dataloader_idx=False,
                prog_bar=True,
            )

    def on_validation_epoch_end(self) -> None:
        if self.dev_tau.update_called:
            value = float(self.dev_tau.compute())  # gathers every rank's pairs first
            self.log("val_tau_like", value, prog_bar=True, sync_dist=True)  # NaN when no pair differs in human score
        self.dev_tau.reset()

    # --------------------------------------------------------------------------------------- optimisation
    def configure_optimizers(self) -> dict[str, Any]:
        hp = self.hparams
        groups = param_groups(
            self.regressor.encoder,
            [m for m in (self.regressor.layer_mix, self.regressor.head, self.regressor.align_skip) if m is not None],
            hp.encoder_lr,
            hp.head_lr,
            self.regressor.num_layers,
            hp.layerwise_decay,
            hp.weight_decay,
        )
        optimizer = torch.optim.AdamW(groups)
        self.frozen_steps = self._freeze_steps()
        factors = [freeze_factor(g[GROUP_KIND], lambda: self.frozen_steps) for g in groups]
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factors)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def _freeze_steps(self) -> int:
        """``encoder_freeze_fraction`` of one epoch's optimizer steps (0 when there is no trainer or no data)."""
        fraction = float(self.hparams.encoder_freeze_fraction)
        trainer = getattr(self, "_trainer", None)
        if fraction <= 0 or trainer is None:
            return 0
        trainer.fit_loop.setup_data()
        batches = trainer.num_training_batches
        if not math.isfinite(batches):
            return 0
        return int(fraction * batches / max(1, trainer.accumulate_grad_batches))

    # ------------------------------------------------------------------------------------------ identity
    def output_scale(self) -> dict[str, Any]:
        return describe(self.config.output_scale)
