"""Fine-tune an encoder into a 3-way NLI cross-encoder with LoRA (no pretrained NLI model exists offline).

The recipe lives in a YAML config (``configs/nli/*.yaml``) read into ``NLITrainConfig``. Lightning runs the loop
(CPU here, any number of GPUs for users); evaluation, temperature fitting and export are plain functions.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nlgmetrics.nli.checkpoint import AdapterConfig, LoraShape, build_classifier, save_adapter, wrap_with_lora
from nlgmetrics.nli.distill import NO_LABEL
from nlgmetrics.nli.labels import CANONICAL

NONCOMMERCIAL_SOURCES = ("sick", "anli")
NONCOMMERCIAL_MARKS = ("xnli",)  # found anywhere in ``source`` (XNLI rows name the file they came from)
FILE_KEYS = ("path", "splits", "langs", "limit", "subset_seed")


@dataclass
class NLITrainConfig:
    base: str = "packaged:minilm"
    # a file is a path, or a mapping {path, splits, langs, limit, subset_seed} (``read_nli_file``)
    train_files: list[str | dict] = field(default_factory=lambda: ["${NLGMETRICS_DATA}/nli/train.jsonl"])
    test_files: dict[str, str | dict] = field(default_factory=dict)
    commercial_only: bool = False
    dev_size: int = 1000
    max_length: int = 128
    batch_size: int = 32
    epochs: int = 3
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.06
    seed: int = 13
    order_seed: int | None = None  # data order only (default: seed); the dev split always follows ``seed``
    limit: int | None = None
    lora: LoraShape = field(default_factory=LoraShape)
    output: str = "runs/nli/adapter"
    init_from: str | None = None  # continue from an adapter folder (same base and LoRA shape)
    accelerator: str = "auto"
    devices: str | int = "auto"
    num_threads: int | None = None
    precision: str = "32-true"  # Lightning precision; "bf16-mixed" autocasts on CPUs with bf16 units and on GPUs
    resume_every: int = 200  # optimizer steps between saves of the full training state (0: off)
    resume_dir: str | None = None  # default: "<output>.resume"; the file is last.safetensors in it
    resume_from: str | None = None  # a last.safetensors to continue an interrupted run from (same config)
    teacher: str | None = None  # NLI model (e.g. packaged:nli-mpnet) whose probabilities are learned too (distill.py)
    teacher_files: list[str] = field(default_factory=list)  # extra pairs without gold labels: the teacher's only
    teacher_splits: list[str] | None = None  # keep only rows of teacher_files with these ``split`` values
    distill_weight: float = 0.5  # loss = w * KL(teacher || model) + (1 - w) * cross-entropy on gold labels
    teacher_cache: str = "runs/nli/teacher_cache"  # teacher probabilities, kept across runs

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> "NLITrainConfig":
        """A recipe from a YAML file (``configs/nli/*.yaml``) through the toolkit's recipe loader.

        Args:
            path: the recipe file, or a packaged recipe's name (``nli/minilm_lora.yaml``).
            overrides: top-level (or dotted, ``lora.r``) values that win over the file, e.g. ``train.py nli`` flags.

        Returns:
            The config; an unknown key is a ``RecipeError`` (a ValueError) naming the file and the key.
        """
        from nlgmetrics.recipes import load_recipe

        return load_recipe(cls, path, overrides, label="NLI training recipe")


def read_nli_jsonl(path: str | Path, commercial_only: bool = False, limit: int | None = None) -> list[dict]:
    """Rows with premise, hypothesis, label (0 e, 1 n, 2 c), source; optionally without non-commercial sources."""
    from nlgmetrics.resources import expand_data

    path = expand_data(str(path))
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in (0, 1, 2):
                raise ValueError(f"{path}:{number}: label must be 0, 1 or 2, got {row.get('label')!r}")
            if commercial_only and is_noncommercial(row):
                continue
            rows.append(row)
            if limit is not None and len(rows) >= limit:
                break
    return rows


def is_noncommercial(row: dict) -> bool:
    """True for rows whose source carries non-commercial terms (SICK, ANLI, XNLI)."""
    source = str(row.get("source", "")).lower()
    return source.startswith(NONCOMMERCIAL_SOURCES) or any(mark in source for mark in NONCOMMERCIAL_MARKS)


def file_label(spec: str | dict) -> str:
    """A file spec as one short string for model cards: the path and any filters."""
    if isinstance(spec, str):
        return spec
    filters = [f"{key}={spec[key]}" for key in FILE_KEYS[1:] if spec.get(key) is not None]
    return f"{spec['path']} ({', '.join(filters)})" if filters else str(spec["path"])


def read_nli_file(spec: str | dict, commercial_only: bool = False) -> list[dict]:
    """The rows a file spec selects: all rows of a path, or a mapping's filtered, seeded subset.

    XNLI keeps dev and test of 15 languages in one file, so training on its dev half and reporting per language
    on its test half needs filters. A mapping takes ``path`` and optionally ``splits`` and ``langs`` (rows whose
    ``split`` / ``lang`` field is listed), ``limit`` (a seeded random subset of that many rows, kept in file order)
    and ``subset_seed`` (default 0). XNLI's languages are translations row by row, so the same limit and seed pick
    the same items in every language.

    Args:
        spec: a path, or the mapping above.
        commercial_only: leave out rows under non-commercial terms (``is_noncommercial``), before the subset.

    Returns:
        The rows, in file order.

    Raises:
        ValueError: an unknown key, a missing path, or split/language filters that select no row (naming the
            spec); a file left empty by ``commercial_only`` is no error.
    """
    if isinstance(spec, (str, Path)):
        return read_nli_jsonl(spec, commercial_only)
    if not isinstance(spec, dict) or "path" not in spec:
        raise ValueError(f"an NLI file is a path or a mapping with a 'path' key, got {spec!r}")
    unknown = sorted(set(spec) - set(FILE_KEYS))
    if unknown:
        raise ValueError(f"NLI file {spec['path']}: unknown key(s) {', '.join(unknown)}; known: {', '.join(FILE_KEYS)}")
    rows = read_nli_jsonl(spec["path"])
    for key, field_name in (("splits", "split"), ("langs", "lang")):
        wanted = spec.get(key)
        if wanted is not None:
            wanted = {wanted} if isinstance(wanted, str) else set(wanted)
            rows = [r for r in rows if r.get(field_name) in wanted]
    if not rows:
        raise ValueError(f"NLI file {file_label(spec)} selects no rows")
    if commercial_only:  # after the check: a non-commercial file is left out, not an error
        rows = [r for r in rows if not is_noncommercial(r)]
    limit = spec.get("limit")
    if limit is not None and limit < len(rows):
        rng = np.random.default_rng(int(spec.get("subset_seed") or 0))
        rows = [rows[i] for i in sorted(rng.choice(len(rows), size=int(limit), replace=False))]
    return rows


def split_dev(rows: Sequence[dict], dev_size: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Hold out ``dev_size`` rows (by premise, so no premise is on both sides) for selection and temperature."""
    rng = np.random.default_rng(seed)
    premises = sorted({r["premise"] for r in rows})
    rng.shuffle(premises)
    dev_premises: set[str] = set()
    count = 0
    by_premise: dict[str, int] = {}
    for r in rows:
        by_premise[r["premise"]] = by_premise.get(r["premise"], 0) + 1
    for p in premises:
        if count >= dev_size:
            break
        dev_premises.add(p)
        count += by_premise[p]
    train = [r for r in rows if r["premise"] not in dev_premises]
    dev = [r for r in rows if r["premise"] in dev_premises]
    return train, dev


def expected_calibration_error(prob: np.ndarray, correct: np.ndarray, bins: int = 15) -> float:
    """ECE over equal-width bins: how far predicted probability is from observed frequency."""
    prob = np.asarray(prob, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(prob, edges[1:-1]), 0, bins - 1)
    ece = 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            ece += mask.mean() * abs(prob[mask].mean() - correct[mask].mean())
    return float(ece)


def nli_report(probs: np.ndarray, labels: Sequence[int]) -> dict[str, float]:
    """Accuracy, plus calibration of P(entailment) as a yes/no forecast (what SEScore's 0.9 threshold uses)."""
    labels = np.asarray(labels)
    is_entail = (labels == 0).astype(np.float64)
    p_e = probs[:, 0]
    return {
        "accuracy": float((probs.argmax(1) == labels).mean()),
        "entailment_ece": expected_calibration_error(p_e, is_entail),
        "entailment_brier": float(np.mean((p_e - is_entail) ** 2)),
        "n": int(len(labels)),
    }


def fit_temperature(logits: np.ndarray, labels: Sequence[int]) -> float:
    """One scalar T minimising held-out NLL of softmax(logits / T): calibrates without changing accuracy."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    labels = np.asarray(labels)

    def nll(log_t: float) -> float:
        lp = log_softmax(logits / math.exp(log_t), axis=1)
        return float(-lp[np.arange(len(labels)), labels].mean())

    result = minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded")
    return float(math.exp(result.x))


def _lightning_module(model: Any, config: NLITrainConfig, total_steps: int) -> Any:
    import pytorch_lightning as pl
    import torch

    class NLIClassifierModule(pl.LightningModule):
        """Cross-entropy on the classifier; only LoRA, pooler and head are trainable."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, batch: dict) -> Any:
            return self.model(**{k: v for k, v in batch.items() if k not in ("labels", "soft")}).logits

        def training_step(self, batch: dict, batch_idx: int) -> Any:
            logits = self(batch)
            return self._loss(logits, batch)

        def _loss(self, logits: Any, batch: dict) -> Any:
            """Cross-entropy on gold labels; with a teacher, plus KL to its probabilities (``distill_weight``)."""
            functional = torch.nn.functional
            labels = batch["labels"]
            has_gold = bool((labels != NO_LABEL).any())
            ce = functional.cross_entropy(logits, labels, ignore_index=NO_LABEL) if has_gold else logits.sum() * 0
            if "soft" not in batch:
                self.log("train_loss", ce, prog_bar=True)
                return ce
            kl = functional.kl_div(functional.log_softmax(logits, dim=-1), batch["soft"], reduction="batchmean")
            weight = config.distill_weight if has_gold else 1.0
            loss = weight * kl + (1 - weight) * ce
            self.log_dict({"train_loss": loss, "train_kl": kl}, prog_bar=True)
            return loss

        def validation_step(self, batch: dict, batch_idx: int) -> None:
            logits = self(batch)
            self.log("val_loss", torch.nn.functional.cross_entropy(logits, batch["labels"]), prog_bar=True)
            self.log("val_acc", (logits.argmax(-1) == batch["labels"]).float().mean(), prog_bar=True)

        def configure_optimizers(self) -> Any:
            params = [p for p in self.model.parameters() if p.requires_grad]
            decay = [p for p in params if p.ndim >= 2]
            no_decay = [p for p in params if p.ndim < 2]
            optimizer = torch.optim.AdamW(
                [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                lr=config.lr,
            )
            warmup = max(1, int(config.warmup_ratio * total_steps))

            def schedule(step: int) -> float:
                if step < warmup:
                    return (step + 1) / warmup
                return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

            scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    return NLIClassifierModule()


def length_grouped_order(
    lengths: Sequence[int], batch_size: int, rng: np.random.Generator, pool: int = 50
) -> list[list[int]]:
    """Shuffled batches of similar length: shuffle, sort inside pools of ``pool`` batches, shuffle the batches.

    Random batches pad every pair to the longest in the batch; grouping by length cuts the padded compute on
    2 CPU cores by a third or more while every epoch still sees the data in a seeded random order.
    """
    order = rng.permutation(len(lengths))
    batches: list[list[int]] = []
    span = batch_size * pool
    for start in range(0, len(order), span):
        chunk = sorted(order[start : start + span], key=lambda i: lengths[i])
        batches += [list(map(int, chunk[i : i + batch_size])) for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


class LengthGroupedSampler:
    """Batch sampler over ``length_grouped_order``; a new seeded order every epoch, sharded across DDP ranks.

    Every rank draws the same global order and keeps every ``world_size``-th batch (the list is cut to a multiple
    of ``world_size`` so all ranks take the same number of steps). Lightning's own distributed sampler is turned
    off for this loader, so single-process and multi-GPU runs see the same batches overall.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, seed: int, rank: int | None = None, world_size: int | None = None
    ) -> None:
        self.lengths, self.batch_size, self.seed, self.epoch = list(lengths), batch_size, seed, 0
        self._rank, self._world_size = rank, world_size

    def _shard(self) -> tuple[int, int]:
        if self._rank is not None and self._world_size is not None:
            return self._rank, self._world_size
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    skip_next = 0  # batches the next epoch leaves out at its start (nlgmetrics.resume: a resumed run saw them)

    def random_state(self) -> dict[str, int]:
        return {"epoch": self.epoch}

    def set_random_state(self, state: dict[str, int]) -> None:
        self.epoch = int(state["epoch"])

    def __iter__(self):
        rng = np.random.default_rng([self.seed, self.epoch])
        self.epoch += 1
        rank, world = self._shard()
        batches = length_grouped_order(self.lengths, self.batch_size, rng)
        batches = batches[: len(batches) - len(batches) % world] if world > 1 else batches
        skip, self.skip_next = self.skip_next, 0
        return iter(batches[rank::world][skip:])

    def __len__(self) -> int:
        _, world = self._shard()
        total = (len(self.lengths) + self.batch_size - 1) // self.batch_size
        return total // world


def _collate(tokenizer: Any, max_length: int):
    import torch

    def collate(rows: list[dict]) -> dict:
        encoded = tokenizer(
            [r["premise"] for r in rows],
            [r["hypothesis"] for r in rows],
            truncation="longest_first",
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        encoded["labels"] = torch.tensor([r["label"] for r in rows])
        if all("soft" in r for r in rows):
            encoded["soft"] = torch.tensor([r["soft"] for r in rows], dtype=torch.float32)
        return dict(encoded)

    return collate


def model_logits(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict],
    max_length: int,
    batch_size: int = 128,
    precision: str = "32-true",
    desc: str | None = None,
) -> np.ndarray:
    """Raw logits in the model's label order (here canonical: training writes e, n, c) for evaluation.

    ``precision``: a Lightning precision string; ``bf16-*`` evaluates under bfloat16 autocast, as it trained.
    ``desc``: label of a progress bar on stderr (none when None).
    """
    import torch
    from tqdm.auto import tqdm

    from nlgmetrics.modelroles.batching import length_sorted_batches
    from nlgmetrics.modelroles.precision import forward_precision

    model.eval()
    out = np.zeros((len(rows), model.config.num_labels), dtype=np.float64)
    lengths = [len(r["premise"]) + len(r["hypothesis"]) for r in rows]
    device = next(model.parameters()).device
    scoring = forward_precision(device, "bfloat16" if precision.startswith("bf16") else "float32")
    with torch.inference_mode(), scoring:
        for batch in tqdm(length_sorted_batches(lengths, batch_size), desc=desc, disable=desc is None, unit="batch"):
            encoded = tokenizer(
                [rows[i]["premise"] for i in batch],
                [rows[i]["hypothesis"] for i in batch],
                truncation="longest_first",
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            ).to(device)
            out[batch] = model(**encoded).logits.float().cpu().numpy()
    return out


def _load_adapter_weights(peft_model: Any, folder: str, base_hash: str) -> None:
    """Start from a previous adapter's weights: continued training keeps its history in ``init_from``."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from nlgmetrics.modelroles import ModelRoleError
    from nlgmetrics.nli.checkpoint import WEIGHTS_NAME, read_adapter_config

    previous = read_adapter_config(folder)
    if previous.base_hash != base_hash:
        raise ModelRoleError(f"init_from {folder} was trained on another base (hash {previous.base_hash})")
    state = {k: v.to(torch.float32) for k, v in load_file(str(Path(folder) / WEIGHTS_NAME)).items()}
    set_peft_model_state_dict(peft_model, state)


def _previous_history(folder: str) -> list[dict]:
    """Stages that produced the adapter we continue from (their recipe and test accuracy), oldest first."""
    from nlgmetrics.nli.checkpoint import read_adapter_config

    record = read_adapter_config(folder).record
    previous = record.get("report", {})
    stage = {
        "config": record.get("config", {}),
        "train_seconds": previous.get("train_seconds"),
        "tests": {k: v["raw"]["accuracy"] for k, v in previous.get("tests", {}).items()},
    }
    return list(previous.get("history", [])) + [stage]


def _add_teacher_labels(config: NLITrainConfig, train_rows: list[dict], dev_rows: Sequence[dict]) -> dict[str, Any]:
    """Extend ``train_rows`` with the teacher files' pairs and give every training row the teacher's ``soft``
    probabilities. Pairs sharing a sentence with a test file or the dev split are left out."""
    from nlgmetrics.nli.distill import read_pair_file, teacher_probabilities, without_sentences
    from nlgmetrics.nli.model import load_nli, unload_nli

    if not 0.0 <= config.distill_weight <= 1.0:
        raise ValueError(f"distill_weight must be in [0, 1], got {config.distill_weight}")
    banned = {r[k] for r in dev_rows for k in ("premise", "hypothesis")}
    for spec in config.test_files.values():
        banned |= {r[k] for r in read_nli_file(spec) for k in ("premise", "hypothesis")}
    extra: list[dict] = []
    for path in config.teacher_files:
        extra += read_pair_file(path, config.teacher_splits)
    kept = without_sentences(extra, banned)
    train_rows += kept
    teacher = load_nli(config.teacher, device="cpu" if config.accelerator == "cpu" else None)
    soft = teacher_probabilities(teacher, train_rows, config.teacher_cache)
    for row, probs in zip(train_rows, soft):
        row["soft"] = probs.tolist()
    unload_nli(teacher)  # labels are in hand: the teacher's weights need not sit beside the student's
    return {
        "teacher": config.teacher,
        "teacher_hash": teacher.hash,
        "distill_weight": config.distill_weight,
        "extra_pairs": len(kept),
        "extra_pairs_dropped_for_test_or_dev_sentences": len(extra) - len(kept),
        "teacher_files": list(config.teacher_files),
        "teacher_splits": config.teacher_splits,
    }


def train_nli(config: NLITrainConfig, logger: Any = None, recipe: Sequence[str] = ()) -> dict[str, Any]:
    """Train, evaluate on every test file, fit a temperature on dev, export; returns the report.

    ``recipe``: the YAML file(s) this run came from, named in the model card's retrain line.
    """
    import pytorch_lightning as pl
    import torch
    from scipy.special import softmax
    from transformers import AutoTokenizer

    from nlgmetrics.modelroles import fingerprint, resolve
    from nlgmetrics.resources import refuse_shipped_output
    from nlgmetrics.resume import ResumableDataLoader, ResumeState, SafetensorsCheckpointIO

    refuse_shipped_output(config.output, "NLI training output")
    if config.teacher_files and not config.teacher:
        raise ValueError("teacher_files are labelled by the teacher only: set teacher (e.g. packaged:nli-mpnet)")
    if config.num_threads:
        torch.set_num_threads(config.num_threads)
    pl.seed_everything(config.seed, workers=True)
    base = resolve("encoder", config.base)
    tokenizer = AutoTokenizer.from_pretrained(base.location)
    id2label = dict(enumerate(CANONICAL))
    model = build_classifier(base.location, id2label)
    peft_model = wrap_with_lora(model, config.lora)
    history: list[dict] = []
    if config.init_from:
        _load_adapter_weights(peft_model, config.init_from, fingerprint(base.location))
        history = _previous_history(config.init_from)
    peft_model.train()  # from_pretrained returns eval mode; Lightning keeps submodule modes as found
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)

    rows: list[dict] = []
    for spec in config.train_files:
        rows += read_nli_file(spec, config.commercial_only)
    rng = np.random.default_rng(config.seed)
    if config.limit:
        rows = [rows[i] for i in sorted(rng.choice(len(rows), size=min(config.limit, len(rows)), replace=False))]
    train_rows, dev_rows = split_dev(rows, config.dev_size, config.seed)
    distilled = _add_teacher_labels(config, train_rows, dev_rows) if config.teacher else None
    collate = _collate(tokenizer, config.max_length)
    lengths = [len(r["premise"]) + len(r["hypothesis"]) for r in train_rows]
    # own generators for both loaders: nothing draws from the global random state, so a resumed run's dropout
    # matches the uninterrupted run's (nlgmetrics.resume)
    train_loader = ResumableDataLoader(
        train_rows,
        batch_sampler=LengthGroupedSampler(
            lengths, config.batch_size, config.order_seed if config.order_seed is not None else config.seed
        ),
        collate_fn=collate,
        generator=torch.Generator().manual_seed(config.seed),
    )
    dev_loader = torch.utils.data.DataLoader(
        dev_rows, batch_size=128, collate_fn=collate, generator=torch.Generator().manual_seed(0)
    )
    total_steps = len(train_loader) * config.epochs
    module = _lightning_module(peft_model, config, total_steps)
    resume_dir = config.resume_dir or f"{Path(config.output)}.resume"
    trainer = pl.Trainer(
        max_epochs=config.epochs,
        accelerator=config.accelerator,
        devices=config.devices,
        logger=logger if logger is not None else False,
        enable_checkpointing=False,  # no pickled .ckpt; ResumeState writes safetensors through the plugin
        plugins=[SafetensorsCheckpointIO()],
        callbacks=[ResumeState(resume_dir, config.resume_every)] if config.resume_every else [],
        gradient_clip_val=1.0,
        precision=config.precision,
        log_every_n_steps=50,
        deterministic=False,
        use_distributed_sampler=False,  # LengthGroupedSampler shards by rank itself
    )
    started = time.time()
    trainer.fit(module, train_loader, dev_loader, ckpt_path=config.resume_from)
    train_seconds = time.time() - started

    merged_view = peft_model  # evaluation runs through the adapter; the export merges on load
    dev_logits = model_logits(merged_view, tokenizer, dev_rows, config.max_length, precision=config.precision)
    temperature = fit_temperature(dev_logits, [r["label"] for r in dev_rows])
    report: dict[str, Any] = {
        "train_rows": len(train_rows),
        "dev_rows": len(dev_rows),
        "trainable_parameters": int(trainable),
        "train_seconds": round(train_seconds, 1),  # of this process: a resumed run counts from the resume
        "resumed_from": config.resume_from,
        "distilled": distilled,
        "temperature": temperature,
        "dev": nli_report(softmax(dev_logits / temperature, axis=1), [r["label"] for r in dev_rows]),
        "tests": {},
        "history": history,
    }
    adapter = AdapterConfig(
        base=config.base,
        base_hash=fingerprint(base.location),
        id2label=id2label,
        lora=config.lora,
        max_length=config.max_length,
        temperature=temperature,
        record={"config": _plain(asdict(config)), "report": report},
    )

    def export(report_json: dict) -> None:  # adapter.record holds ``report`` itself, so the YAML has its current state
        save_adapter(peft_model, adapter, config.output)
        (Path(config.output) / "report.json").write_text(json.dumps(report_json, indent=1))

    # Export before the test passes: hours of training must survive a crash or a kill during evaluation.
    report["tests"] = "pending"  # the same word in report.json and in nli.yaml's record, which holds ``report``
    export(report)
    print(f"exported the NLI adapter to {Path(config.output).resolve()} (test sets next)", file=sys.stderr, flush=True)
    report["tests"] = test_accuracies(merged_view, tokenizer, config, temperature)
    export(report)
    write_model_card(config, report, config.output, recipe)
    print(f"exported the NLI adapter to {Path(config.output).resolve()}", file=sys.stderr, flush=True)
    return report


def test_accuracies(model: Any, tokenizer: Any, config: NLITrainConfig, temperature: float) -> dict[str, Any]:
    """Accuracy and calibration of ``model`` on every file of ``config.test_files``, raw and at ``temperature``."""
    from scipy.special import softmax

    tests: dict[str, Any] = {}
    for name, spec in config.test_files.items():
        rows = read_nli_file(spec)
        logits = model_logits(model, tokenizer, rows, config.max_length, precision=config.precision, desc=name)
        labels = [r["label"] for r in rows]
        tests[name] = {
            "raw": nli_report(softmax(logits, axis=1), labels),
            "calibrated": nli_report(softmax(logits / temperature, axis=1), labels),
        }
        print(f"{name}: accuracy {tests[name]['raw']['accuracy']:.3f} (n={len(rows)})", file=sys.stderr, flush=True)
    return tests


def finish_tests(config: NLITrainConfig, recipe: Sequence[str] = ()) -> dict[str, Any]:
    """Evaluate an exported adapter's test sets again and rewrite its report, record and model card.

    Why: training exports before the test sets run, so a run killed during evaluation keeps its weights with
    ``tests: pending``; this finishes it without retraining. The adapter is evaluated as it loads for scoring
    (fp16 weights merged into the base), so accuracies can differ from an in-run evaluation in the last digit.

    Args:
        config: the recipe the adapter was trained from; ``output`` names the adapter folder.
        recipe: the YAML file(s) named in the model card's retrain line.

    Returns:
        The updated report (also written to ``report.json`` and ``nli.yaml``).
    """
    from nlgmetrics.nli.checkpoint import load_adapter_model, write_adapter_config
    from nlgmetrics.resources import refuse_shipped_output

    out = Path(config.output)
    refuse_shipped_output(out, "NLI test evaluation output")
    report_path = out / "report.json"
    if not report_path.is_file():
        raise FileNotFoundError(f"{report_path} does not exist: train the adapter first (nlgmetrics-train nli)")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    tokenizer, model, adapter = load_adapter_model(out)
    report["tests"] = test_accuracies(model, tokenizer, config, adapter.temperature)
    adapter.record["report"] = report
    write_adapter_config(adapter, out)
    report_path.write_text(json.dumps(report, indent=1))
    write_model_card(config, report, out, recipe)
    return report


def write_model_card(config: NLITrainConfig, report: dict, out_dir: str | Path, recipe: Sequence[str] = ()) -> Path:
    """README.md beside the adapter: data, recipe, accuracy per test set, cost (against the full fine-tune for
    MiniLM, the only base it was measured on); ``recipe`` lists the YAML files that retrain it, in order."""
    out = Path(out_dir)
    size_mb = sum(f.stat().st_size for f in out.iterdir() if f.suffix == ".safetensors") / 2**20
    extra = (report.get("distilled") or {}).get("extra_pairs", 0)
    licences = "SNLI (CC BY-SA 4.0), CAD (Apache-2.0), TaxiNLI/MNLI (C-UDA 1.0), MED and Breaking-NLI (CC BY-SA 4.0)"
    if not config.commercial_only:
        licences += ", SICK train/trial (CC BY-NC-SA 3.0: the adapter inherits its non-commercial terms)"
        if any("xnli" in file_label(spec).lower() for spec in config.train_files):
            licences += ", XNLI dev (CC BY-NC 4.0: non-commercial too)"
    lines = [
        f"# NLI adapter: 3-way NLI over {config.base} (LoRA)",
        "",
        f"Base: `{config.base}` (weight hash checked on load). Labels: entailment, neutral, contradiction.",
        f"Files: `adapter.safetensors` ({size_mb:.1f} MB, fp16), `nli.yaml` (base, hash, labels, LoRA shape,"
        " temperature, full training record), `report.json`.",
        "",
        "## Data",
        f"Training files: {', '.join(map(file_label, config.train_files))}"
        f" ({report['train_rows'] - extra} pairs after holding out"
        f" {report['dev_rows']} dev pairs by premise); commercial_only={config.commercial_only}.",
        f"Licences of the training parts: {licences}.",
    ]
    distilled = report.get("distilled")
    if distilled:
        lines += [
            f"Distilled from `{distilled['teacher']}` (weight hash {distilled['teacher_hash'][:12]}): loss ="
            f" {distilled['distill_weight']} x KL(teacher || model) + {1 - distilled['distill_weight']:g} x"
            f" cross-entropy on gold labels; {distilled['extra_pairs']} extra pairs without gold labels from"
            f" {', '.join(distilled['teacher_files']) or 'no file'} (splits {distilled['teacher_splits']}), learned"
            f" from the teacher only; {distilled['extra_pairs_dropped_for_test_or_dev_sentences']} pairs sharing a"
            " sentence with a test file or the dev split left out. The teacher's training data terms apply too.",
        ]
    lines += [
        "",
        "## Recipe",
        f"LoRA r={config.lora.r}, alpha={config.lora.alpha}, dropout={config.lora.dropout} on every attention and"
        f" feed-forward projection; {' and '.join(config.lora.modules_to_save)} trained in full"
        f" ({report['trainable_parameters']:,} trainable parameters). AdamW lr {config.lr}, weight decay"
        f" {config.weight_decay}, warm-up {config.warmup_ratio}, linear decay, batch {config.batch_size}"
        " (length-grouped), max length"
        f" {config.max_length}, {config.epochs} epoch(s), seed {config.seed}. Temperature fitted on dev:"
        f" {report['temperature']:.3f}. Training took {report['train_seconds'] / 60:.1f} min on this machine.",
        "",
        "## Accuracy and calibration of P(entailment)",
        "",
        "| test set | n | accuracy | ECE P(e) raw | ECE P(e) calibrated | Brier P(e) calibrated |",
        "|---|---|---|---|---|---|",
    ]
    for name, result in report["tests"].items():
        raw, cal = result["raw"], result["calibrated"]
        lines.append(
            f"| {name} | {raw['n']} | {raw['accuracy']:.3f} | {raw['entailment_ece']:.3f} |"
            f" {cal['entailment_ece']:.3f} | {cal['entailment_brier']:.3f} |"
        )
    stages = report.get("history", [])
    if stages:
        lines += [
            "",
            "## Training stages",
            "",
            "| stage | epochs | peak lr | seed / order seed | minutes | accuracy after |",
            "|---|---|---|---|---|---|",
        ]
        for number, stage in enumerate(
            stages
            + [
                {
                    "config": _plain(asdict(config)),
                    "train_seconds": report["train_seconds"],
                    "tests": {k: v["raw"]["accuracy"] for k, v in report["tests"].items()},
                }
            ],
            1,
        ):
            c = stage["config"]
            acc = ", ".join(f"{k} {v:.3f}" for k, v in stage["tests"].items())
            lines.append(
                f"| {number} | {c.get('epochs')} | {c.get('lr')} | {c.get('seed')} / {c.get('order_seed')} |"
                f" {(stage['train_seconds'] or 0) / 60:.1f} | {acc} |"
            )
    total = report["train_seconds"] + sum(st.get("train_seconds") or 0 for st in stages)
    # no comparison with a full fine-tune here: the one run earlier kept no report, so its numbers cannot be shown
    lines += ["", f"Adapter files: {size_mb:.1f} MB; {total / 60:.1f} min of training in all."]
    if recipe:
        lines += ["", "Retrain: " + ", then ".join(f"`python train.py nli --config {path}`" for path in recipe) + "."]
    card = out / "README.md"
    card.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return card


def _plain(value: Any) -> Any:
    """YAML-safe copy (tuples -> lists)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
