"""Lightning DataModule: synthetic pairs split by reference, plus human-judged dev pairs for selection.

Batches are plain text (the model tokenises with its own tokenizer), so the data side does not depend on the
encoder. Validation has up to two loaders: the held-out synthetic pairs (``val_loss``) and the dev judgments
(``val_tau_like``). Both keep rows that share texts together, longest first (``grouped_longest_first``);
training batches are length-bucketed in a seeded order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, RandomSampler

from nlgmetrics.resume import ResumableDataLoader
from sescore.regressor.sampler import LengthBucketBatchSampler
from sescore.regressor.sources import LABELS, load_dev_judgments, load_dev_mix, load_judged_pairs, load_synthesis
from sescore.regressor.split import split_by_reference
from sescore.synthesis.store import synthesis_language

DEFAULT_DEV_JUDGMENTS = "${NLGMETRICS_DATA}/judgments/mt_mqm_wmt21_ted_zhen.jsonl"


def group_by_reference(records: Sequence[dict[str, Any]], group_size: int) -> list[dict[str, Any]]:
    """Scored rows -> groups {reference, candidates, scores} of at most ``group_size`` variants of one reference.

    A within-reference ranking loss needs the variants of a reference in the same batch; making the group the
    dataset item keeps every sampler (length buckets, Lightning's DistributedSampler) unchanged. A reference
    with more variants than ``group_size`` is cut into consecutive chunks, so each row is seen once per epoch.
    Groups come in first-appearance order of their reference, variants in row order: a pure function of the rows.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    by_reference: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_reference.setdefault(record["reference"], []).append(record)
    groups = []
    for reference, rows in by_reference.items():
        for start in range(0, len(rows), group_size):
            chunk = rows[start : start + group_size]
            groups.append(
                {
                    "reference": reference,
                    "candidates": [r["candidate"] for r in chunk],
                    "scores": [r["score"] for r in chunk],
                }
            )
    return groups


def collate_pairs(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Texts as lists, numbers as tensors; dev records also carry row, item, set and human score; judged
    pairs carry ``better`` and ``worse`` candidates instead of one scored candidate; reference groups are
    flattened into rows with a ``group`` index (position of the group in the batch)."""
    if "better" in records[0]:
        return {key: [r[key] for r in records] for key in ("reference", "better", "worse")}
    if "candidates" in records[0]:
        return {
            "candidate": [c for r in records for c in r["candidates"]],
            "reference": [r["reference"] for r in records for _ in r["candidates"]],
            "score": torch.tensor([s for r in records for s in r["scores"]], dtype=torch.float32),
            "group": torch.tensor([g for g, r in enumerate(records) for _ in r["candidates"]], dtype=torch.long),
        }
    batch: dict[str, Any] = {
        "candidate": [r["candidate"] for r in records],
        "reference": [r["reference"] for r in records],
    }
    if "score" in records[0]:
        batch["score"] = torch.tensor([r["score"] for r in records], dtype=torch.float32)
    if "human" in records[0]:
        batch["human"] = torch.tensor([r["human"] for r in records], dtype=torch.float64)
        batch["row"] = torch.tensor([r["row"] for r in records], dtype=torch.long)
        batch["item"] = torch.tensor([r["item"] for r in records], dtype=torch.long)
        batch["set"] = torch.tensor([r.get("set", 0) for r in records], dtype=torch.long)
    return batch


def _pair_length(record: dict[str, Any]) -> int:
    if "candidates" in record:
        return sum(len(c) + len(record["reference"]) for c in record["candidates"])
    if "better" in record:
        return len(record["better"]) + len(record["worse"]) + len(record["reference"])
    return len(record["candidate"]) + len(record["reference"])


def _longest_first(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=_pair_length, reverse=True)


def _text_group(record: dict[str, Any]) -> tuple:
    """Rows that share texts: one dev item's candidates and references, or one reference's variants."""
    if "item" in record:
        return ("item", record.get("set", 0), record["item"])
    return ("reference", record["reference"])


def grouped_longest_first(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validation order: rows sharing texts (``_text_group``) next to each other, groups longest first by their
    longest row, rows within a group longest first; ties keep input order (a pure function of the rows).

    Validation encodes each distinct text of a batch once (``SEScoreRegressor.forward`` with ``distinct``), so a
    batch that holds whole items encodes each reference once instead of once per candidate; sorting by the longest
    row keeps padding as low as the plain longest-first order did.
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(_text_group(record), []).append(record)
    ordered = sorted(groups.values(), key=lambda rows: max(_pair_length(r) for r in rows), reverse=True)
    return [record for rows in ordered for record in _longest_first(rows)]


class SEScoreDataModule(pl.LightningDataModule):
    """Synthesis dataset or human-judged pairs -> train/val by reference; dev judgments -> tau-like selection.

    Args:
        dataset: folder of a synthesis dataset (``datasets.save_to_disk``) with reference, candidate, score.
            Give ``dataset`` or ``judged``, not both.
        judged: human judgments to fine-tune on (``sources.load_judged_pairs``): WMT DARR pairs or scored rows;
            trained with the pairwise loss of ``SEScoreModule``.
        judged_score: the ``scores`` key of scored rows (DARR needs none).
        judged_limit: a seeded random subset of this many pairs (None = all).
        judged_min_gap: scored rows: pairs whose human scores differ by more than this.
        val_fraction: share of distinct references held out for ``val_loss`` (0 turns it off).
        split_seed: key of the reference hash that decides each reference's side.
        batch_size: training pairs per step (paper: 8); with ``group_variants``, reference groups per step.
        eval_batch_size: pairs per validation step.
        bucket_pool: batches pooled per length sort (1 = nearly random batches, large = nearly sorted).
        shuffle_seed: seed of the training order (and of the batch order within a pool).
        limit: keep only the first N synthetic rows (smoke runs).
        dev_judgments: judged rows for selection (JSON Lines, or a ``.json`` list: ``sources.read_judged_rows``;
            schema in the documentation's "Judged data" page); None or "" disables ``val_tau_like``.
        dev_score: which ``scores`` key is the human score.
        dev_items: use the first N items of the dev file (None = all).
        dev_mix: a dev-mix YAML (``configs/devmix/default.yaml``; your own domain's sets in the same format);
            replaces ``dev_judgments``: selection is the mean tau-like over its sets, on ``dev_half`` only.
        dev_half: which half of each mix set selection sees (``select``; never select on ``report``).
        dev_items_per_set: at most this many items of each set's half (validation cost).
        dev_max_refs: at most this many references per dev row.
        num_workers: DataLoader worker processes.
        labels: ``severity`` (the synthesis scores) or ``uniform`` (every applied edit -1: the paper's
            "w/o severity" ablation; needs the ``num_applied`` column).
        group_variants: 0 = one training item per row (regression only); N > 0 = each training item is a group
            of up to N variants of one reference (``group_by_reference``), which the module's within-reference
            ranking loss (``model.rank_weight``) needs. Validation rows stay ungrouped.
    """

    def __init__(
        self,
        dataset: str | None = None,
        val_fraction: float = 0.05,
        split_seed: int = 13,
        batch_size: int = 8,
        eval_batch_size: int = 64,
        bucket_pool: int = 50,
        shuffle_seed: int = 13,
        limit: int | None = None,
        dev_judgments: str | None = DEFAULT_DEV_JUDGMENTS,
        dev_score: str = "mqm",
        dev_items: int | None = 200,
        num_workers: int = 0,
        labels: str = "severity",
        judged: str | None = None,
        judged_score: str | None = None,
        judged_limit: int | None = None,
        judged_min_gap: float = 0.0,
        dev_mix: str | None = None,
        dev_half: str = "select",
        dev_items_per_set: int | None = 40,
        dev_max_refs: int | None = 2,
        group_variants: int = 0,
    ) -> None:
        super().__init__()
        if bool(dataset) == bool(judged):
            raise ValueError(
                "give exactly one training source: data.dataset (synthesis) or data.judged (human judgments)"
            )
        if dev_half != "select":
            raise ValueError(f"dev_half must be 'select' (the report half is for reported numbers), got {dev_half!r}")
        if batch_size < 1 or eval_batch_size < 1:
            raise ValueError(f"batch sizes must be >= 1 (batch_size {batch_size}, eval_batch_size {eval_batch_size})")
        if group_variants < 0:
            raise ValueError(f"group_variants must be >= 0, got {group_variants}")
        if group_variants and judged:
            raise ValueError(
                "group_variants groups synthesis rows by reference; judged pairs are already ranked "
                "pairs (set data.group_variants 0 with data.judged)"
            )
        self.save_hyperparameters()
        self.group_variants = group_variants
        self.dataset = dataset
        self.val_fraction, self.split_seed = val_fraction, split_seed
        self.batch_size, self.eval_batch_size, self.bucket_pool = batch_size, eval_batch_size, bucket_pool
        self.shuffle_seed, self.limit, self.num_workers = shuffle_seed, limit, num_workers
        if labels not in LABELS:
            raise ValueError(f"labels must be one of {', '.join(LABELS)}, got {labels!r}")
        self.labels = labels
        self.dev_judgments, self.dev_score, self.dev_items = dev_judgments or None, dev_score, dev_items
        self.judged, self.judged_score, self.judged_limit = judged or None, judged_score, judged_limit
        self.judged_min_gap = judged_min_gap
        self.dev_mix, self.dev_half = dev_mix or None, dev_half
        self.dev_items_per_set, self.dev_max_refs = dev_items_per_set, dev_max_refs
        self.train_records: list[dict[str, Any]] = []
        self.val_records: list[dict[str, Any]] = []
        self.dev_records: list[dict[str, Any]] = []

    def setup(self, stage: str | None = None) -> None:
        if self.train_records or self.val_records:
            return
        if self.judged:
            records = load_judged_pairs(
                self.judged, self.judged_score, self.judged_limit or self.limit, self.shuffle_seed, self.judged_min_gap
            )
        else:
            records = load_synthesis(self.dataset, self.limit, self.labels)
        train, val = split_by_reference([r["reference"] for r in records], self.val_fraction, self.split_seed)
        if not train:
            raise ValueError(
                f"training data {self.dataset or self.judged}: every reference fell into validation; "
                f"lower val_fraction ({self.val_fraction}) or add references"
            )
        self.train_records = [records[i] for i in train]
        if self.group_variants:
            self.train_records = group_by_reference(self.train_records, self.group_variants)
        self.val_records = grouped_longest_first([records[i] for i in val])
        if self.dev_mix:
            self.dev_records = grouped_longest_first(
                load_dev_mix(self.dev_mix, self.dev_half, self.dev_items_per_set, max_refs=self.dev_max_refs)
            )
        elif self.dev_judgments:
            self.dev_records = grouped_longest_first(
                load_dev_judgments(self.dev_judgments, self.dev_score, self.dev_items)
            )
        if not self.val_records and not self.dev_records:
            raise ValueError("no validation data for model selection: set val_fraction > 0 or give dev_judgments")

    def describe(self) -> dict[str, Any]:
        """What the data was, for the checkpoint's training record."""
        return {
            "dataset": str(Path(self.dataset)) if self.dataset else None,
            "language": synthesis_language(self.dataset) if self.dataset else None,
            "judged": self.judged,
            "judged_score": self.judged_score,
            "judged_limit": self.judged_limit,
            "dev_mix": self.dev_mix,
            "dev_half": self.dev_half if self.dev_mix else None,
            "dev_items_per_set": self.dev_items_per_set if self.dev_mix else None,
            "train_pairs": sum(len(r.get("candidates", (r,))) for r in self.train_records),
            "train_groups": len(self.train_records) if self.group_variants else None,
            "val_pairs": len(self.val_records),
            "dev_judgments": self.dev_judgments,
            "dev_score": self.dev_score,
            "dev_items": self.dev_items,
            "dev_pairs": len(self.dev_records),
            "val_fraction": self.val_fraction,
            "split_seed": self.split_seed,
            "labels": self.labels,
            "group_variants": self.group_variants,
        }

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(self.shuffle_seed)
        sampler = LengthBucketBatchSampler(
            RandomSampler(self.train_records, generator=generator),
            self.batch_size,
            False,
            lengths=[_pair_length(r) for r in self.train_records],
            pool=self.bucket_pool,
            seed=self.shuffle_seed,
        )
        # own generators everywhere: no loader draws from the global random state, so dropout after a resume
        # (nlgmetrics.resume) sees the same draws as the uninterrupted run
        return ResumableDataLoader(
            self.train_records,
            batch_sampler=sampler,
            collate_fn=collate_pairs,
            num_workers=self.num_workers,
            generator=torch.Generator().manual_seed(self.shuffle_seed + 1),
        )

    def val_dataloader(self) -> list[DataLoader]:
        loaders = []
        for records in (self.val_records, self.dev_records):
            if records:
                loaders.append(
                    DataLoader(
                        records,
                        batch_size=self.eval_batch_size,
                        shuffle=False,
                        collate_fn=collate_pairs,
                        num_workers=self.num_workers,
                        generator=torch.Generator().manual_seed(0),
                    )
                )
        return loaders
