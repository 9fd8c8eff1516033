"""Resumable Lightning training without pickles: safetensors training state, a resumable data loader, RNG state.

A SEScore fit on the full synthesis set runs for hours on a CPU. Lightning can resume such a run from a checkpoint
(``--ckpt_path``), but its ``.ckpt`` files are pickles, and this toolkit never unpickles files. Three pieces make
resuming safe and exact:

- ``SafetensorsCheckpointIO``: Lightning's checkpoint dictionary (weights, optimizer and scheduler state, loop
  progress, callback state) written as one safetensors file. Tensors are stored as tensors; everything else goes
  into the file's metadata as tagged JSON (tuples, non-string keys and non-finite floats survive the round trip).
  A value of any other type is refused by name at save time, so a checkpoint never holds an object that would
  need code to rebuild it.
- ``ResumableDataLoader``: remembers where in the epoch it was (its batch sampler's random state at the start of
  the epoch and the batches handed out since), so a resumed run continues with the next batch instead of replaying
  the epoch from its start.
- ``ResumeState``: a callback that saves ``<dirpath>/last.safetensors`` every N optimizer steps (written to a
  temporary file and renamed, so an interrupt while writing keeps the previous state), with the global random
  states, so dropout after a resume draws what the uninterrupted run would have drawn.

Resume with ``--ckpt_path <dirpath>/last.safetensors`` (the same config otherwise).
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.plugins.io import CheckpointIO
from torch.utils.data import DataLoader

from nlgmetrics.resources import refuse_shipped_output
from nlgmetrics.weightfiles import unreadable_reason

FORMAT = "nlgmetrics-training-state/1"
_TAGS = frozenset({"__tensor__", "__ndarray__", "__float__", "__tuple__", "__dict__"})


# ---------------------------------------------------------------------------------------------- flattening
def flatten_state(value: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """``(tree, tensors)``: ``tree`` is JSON-safe and names each tensor by its key in ``tensors``.

    Raises ``TypeError`` naming the path of a value that is neither a tensor nor plain data.
    """
    tensors: dict[str, torch.Tensor] = {}

    def walk(item: Any, path: str) -> Any:
        if isinstance(item, torch.Tensor):
            key = f"t{len(tensors)}"
            # clone: safetensors refuses tensors that share memory (tied weights, views)
            tensors[key] = item.detach().to("cpu").contiguous().clone()
            return {"__tensor__": key}
        if isinstance(item, np.ndarray):
            return {"__ndarray__": walk(torch.from_numpy(np.ascontiguousarray(item)), path)}
        if isinstance(item, np.generic):
            item = item.item()
        if item is None or isinstance(item, (bool, str, int)):
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else {"__float__": repr(item)}
        if isinstance(item, tuple):
            return {"__tuple__": [walk(v, f"{path}[{i}]") for i, v in enumerate(item)]}
        if isinstance(item, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(item)]
        if isinstance(item, dict):
            if all(isinstance(k, str) for k in item) and not (len(item) == 1 and next(iter(item)) in _TAGS):
                return {k: walk(v, f"{path}.{k}") for k, v in item.items()}
            for k in item:
                if not isinstance(k, (str, int, bool)) or k is None:
                    raise TypeError(f"training state: key {k!r} at {path} is not a string or integer")
            return {"__dict__": [[k, walk(v, f"{path}[{k!r}]")] for k, v in item.items()]}
        raise TypeError(
            f"training state: {path} holds a {type(item).__name__}, which a safetensors checkpoint cannot store "
            "without pickling; keep tensors and plain data (numbers, strings, lists, dicts) in checkpoint state"
        )

    return walk(value, "checkpoint"), tensors


def unflatten_state(tree: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of ``flatten_state``."""
    if isinstance(tree, list):
        return [unflatten_state(v, tensors) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if len(tree) == 1:
        ((tag, inner),) = tree.items()
        if tag == "__tensor__":
            return tensors[inner]
        if tag == "__ndarray__":
            return unflatten_state(inner, tensors).numpy()
        if tag == "__float__":
            return float(inner)
        if tag == "__tuple__":
            return tuple(unflatten_state(v, tensors) for v in inner)
        if tag == "__dict__":
            return {k: unflatten_state(v, tensors) for k, v in inner}
    return {k: unflatten_state(v, tensors) for k, v in tree.items()}


def save_state(state: dict[str, Any], path: str | Path) -> Path:
    """Write ``state`` as one safetensors file, atomically (``atomic_write``: temporary sibling, then rename)."""
    from safetensors.torch import save

    from nlgmetrics.metaeval.textio import atomic_write

    tree, tensors = flatten_state(state)
    with atomic_write(path, "wb") as handle:
        handle.write(save(tensors, metadata={"format": FORMAT, "tree": json.dumps(tree)}))
    return Path(path)


def load_state(path: str | Path) -> dict[str, Any]:
    """Read a file written by ``save_state``; a clear error for a missing, foreign or damaged file."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"training state not found: {path}")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != FORMAT:
                raise ValueError(
                    f"{path} is not a training state written by this toolkit (format {metadata.get('format')!r}, "
                    f"expected {FORMAT!r}); Lightning's pickled .ckpt files are not read"
                )
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}
        tree = json.loads(metadata["tree"])
    except (SafetensorError, json.JSONDecodeError, KeyError, OSError) as error:
        raise ValueError(
            f"training state {path} is {unreadable_reason(path)} ({error}); resume from another state or start again"
        ) from error
    return unflatten_state(tree, tensors)


class SafetensorsCheckpointIO(CheckpointIO):
    """Lightning ``CheckpointIO`` that reads and writes ``save_state`` files: no pickle in either direction."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        save_state(checkpoint, path)

    def load_checkpoint(self, path: Any, map_location: Any = None, weights_only: Any = None) -> dict[str, Any]:
        return load_state(path)

    def remove_checkpoint(self, path: Any) -> None:
        Path(path).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------- data order
class ResumableDataLoader(DataLoader):
    """A ``DataLoader`` whose ``state_dict`` says where in the epoch it is, so a resumed run skips what was seen.

    Its ``batch_sampler`` must offer ``random_state() -> dict`` and ``set_random_state(dict)`` (its own and its
    index sampler's generators) and honour ``skip_next`` (batches its next epoch leaves out); the loader's own
    ``generator`` (worker seeds) is saved beside them. Skipped batches are skipped as index lists, so no data is
    loaded for them. Give the loader a ``generator``: without one, each epoch's worker seed is drawn from the global
    random state and a resume would shift it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sampler = self.batch_sampler
        missing = [name for name in ("random_state", "set_random_state", "skip_next") if not hasattr(sampler, name)]
        if missing:
            raise TypeError(
                f"ResumableDataLoader needs a batch_sampler with random_state(), set_random_state() and "
                f"skip_next; {type(sampler).__name__} lacks {', '.join(missing)}"
            )
        self._epoch_start: dict[str, Any] | None = None
        self._taken = 0
        self._pending: dict[str, Any] | None = None

    def _random_state(self) -> dict[str, Any]:
        state = {"sampler": self.batch_sampler.random_state()}
        if self.generator is not None:
            state["loader"] = self.generator.get_state()
        return state

    def _set_random_state(self, state: dict[str, Any]) -> None:
        self.batch_sampler.set_random_state(state["sampler"])
        if self.generator is not None and "loader" in state:
            self.generator.set_state(state["loader"])

    def __iter__(self) -> Iterator[Any]:
        # a generator: nothing below runs until the first batch is asked for, which is after Lightning restored
        # the checkpoint, even though Lightning calls iter() while setting the run up
        skip = 0
        if self._pending is not None:
            pending, self._pending = self._pending, None
            if pending["taken"] >= len(self):  # saved on an epoch's last batch: the next epoch starts afresh
                self._set_random_state(pending["now"])
            else:
                self._set_random_state(pending["start"])
                skip = pending["taken"]
        self._epoch_start = self._random_state()
        self._taken = skip
        self.batch_sampler.skip_next = skip
        for batch in super().__iter__():
            self._taken += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return {
            "start": self._epoch_start if self._epoch_start is not None else self._random_state(),
            "now": self._random_state(),
            "taken": self._taken,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Applied when the next epoch's first batch is asked for; loading the same state twice is harmless."""
        self._pending = state


# ---------------------------------------------------------------------------------------------- callback
def _rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state(legacy=False)}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])  # flatten_state keeps its tuples
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _validation_follows(trainer: pl.Trainer, batch_idx: int) -> bool:
    """Whether Lightning validates right after training batch ``batch_idx`` (its rule for finite loaders)."""
    every_epochs = trainer.check_val_every_n_epoch
    if trainer.limit_val_batches == 0 or (every_epochs is not None and (trainer.current_epoch + 1) % every_epochs):
        return False
    batches = trainer.num_training_batches
    val_every = trainer.val_check_batch
    if val_every is None or not math.isfinite(val_every):
        return math.isfinite(batches) and batch_idx + 1 >= batches
    count = batch_idx + 1 if every_epochs is not None else trainer.fit_loop.epoch_loop.total_batch_idx + 1
    return count % int(val_every) == 0


def frozen_weights(module: torch.nn.Module) -> list[str]:
    """State-dict keys of the parameters that do not train (a LoRA run's base model): sorted."""
    return sorted(name for name, p in module.named_parameters() if not p.requires_grad)


def weights_digest(state: dict[str, torch.Tensor], keys: list[str]) -> str:
    """sha256 over the named tensors' dtypes, shapes and bytes, in the order of ``keys``."""
    import hashlib

    digest = hashlib.sha256()
    for key in keys:
        tensor = state[key].detach().cpu().contiguous()
        digest.update(f"{key}\x1f{tensor.dtype}\x1f{tuple(tensor.shape)}\x1e".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


class PieceEnded(Exception):
    """A fit stopped on purpose after its time budget (``ResumeState(stop_after_minutes=...)``), state saved.

    Args:
        step: the optimizer step the state was saved at.
        path: the resume state to continue from (``--ckpt_path``).
        minutes: the piece's budget.
    """

    # the exit status of ``train.py`` for it: sysexits' EX_TEMPFAIL ("try again later"); 0 is a finished run and
    # 143 a terminated one
    EXIT_STATUS = 75

    def __init__(self, step: int, path: Path, minutes: float) -> None:
        super().__init__(
            f"piece ended after its {minutes:g} minutes at step {step}: rerun the same command with --ckpt_path "
            f"{path} to continue"
        )
        self.step, self.path, self.minutes = step, path, minutes


class ResumeState(pl.Callback):
    """Save the whole training state to ``<dirpath>/last.safetensors`` every ``every_n_train_steps`` steps.

    Needs the ``SafetensorsCheckpointIO`` plugin on the Trainer (``train.py fit`` adds it). Resume with
    ``--ckpt_path <dirpath>/last.safetensors``. ``every_n_train_steps: 0`` turns saving off.

    Frozen weights (the base model under LoRA) are not written: a resumed run rebuilds them from the same base, and
    the state keeps their sha256 so that a different base is refused by name on resume instead of training on.
    This keeps a LoRA state at the size of what trains (me5-small: ~0.5 GB of frozen weights otherwise, each save).

    A fit longer than one working stretch runs in pieces: with ``stop_after_minutes`` the run saves its state once
    that much time of this process has passed (at the first step after which no validation follows) and raises
    ``PieceEnded`` (``train.py fit`` exits with status 75); the same command with ``--ckpt_path`` continues it, and
    the pieces end where one uninterrupted run ends.

    Args:
        dirpath: folder of the resume state (never inside a shipped checkpoint); default ``<log_dir>/resume``.
        every_n_train_steps: optimizer steps between saves.
        stop_after_minutes: end this process's piece of the fit after this many minutes of training (``None``: run
            to the end). Needs saving on (``every_n_train_steps`` above 0).
    """

    def __init__(
        self, dirpath: str | None = None, every_n_train_steps: int = 100, stop_after_minutes: float | None = None
    ) -> None:
        if every_n_train_steps < 0:
            raise ValueError(f"every_n_train_steps must be >= 0, got {every_n_train_steps}")
        if stop_after_minutes is not None and (stop_after_minutes < 0 or not math.isfinite(stop_after_minutes)):
            raise ValueError(f"stop_after_minutes must be a finite number >= 0, got {stop_after_minutes}")
        if stop_after_minutes is not None and not every_n_train_steps:
            raise ValueError("stop_after_minutes needs a resume state to continue from: every_n_train_steps > 0")
        if dirpath is not None:
            refuse_shipped_output(dirpath, "resume.dirpath")
        self.dirpath, self.every_n_train_steps = dirpath, every_n_train_steps
        self.stop_after_minutes = stop_after_minutes
        self._piece_started = time.monotonic()
        self._loader_state: dict[str, Any] | None = None
        self._last_saved_step = -1
        self._due = False
        self._saving = False
        self._trainer: pl.Trainer | None = None

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = trainer
        # a state without its frozen weights loads non-strictly; on_load_checkpoint then checks every key itself
        pl_module.strict_loading = False
        if self.dirpath is None:  # one folder per run: the logger's version folder, so runs never share a state
            self.dirpath = str(Path(trainer.log_dir or trainer.default_root_dir) / "resume")

    @property
    def path(self) -> Path:
        return Path(self.dirpath or ".") / "last.safetensors"

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.every_n_train_steps and not isinstance(trainer.strategy.checkpoint_io, SafetensorsCheckpointIO):
            raise ValueError(
                "ResumeState writes safetensors only: add SafetensorsCheckpointIO() to the Trainer's plugins"
            )

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._piece_started = time.monotonic()
        if self._loader_state is not None:
            loader = trainer.train_dataloader
            if isinstance(loader, ResumableDataLoader):
                loader.load_state_dict(self._loader_state)
            self._loader_state = None

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = trainer.global_step
        if self.every_n_train_steps and step > 0 and step % self.every_n_train_steps == 0:
            self._due = True
        # a state saved just before a validation run would, on resume, skip that run (Lightning counts it as done)
        # and miss what it changed (the best export so far): save after the next step instead
        if _validation_follows(trainer, batch_idx):
            return
        if self._due and self._save_at(trainer, step) and trainer.is_global_zero:
            print(f"resume state at step {step}: {self.path.resolve()}", file=sys.stderr, flush=True)
        if self.stop_after_minutes is not None and self._piece_over(trainer):
            self._end_piece(trainer, step)

    def _piece_over(self, trainer: pl.Trainer) -> bool:
        """Whether this process's time is up (rank 0's clock decides, so every rank stops at the same step)."""
        over = time.monotonic() - self._piece_started >= 60.0 * float(self.stop_after_minutes)
        return bool(trainer.strategy.broadcast(over, src=0))

    def _end_piece(self, trainer: pl.Trainer, step: int) -> None:
        if step >= (trainer.max_steps if trainer.max_steps > 0 else math.inf):
            return  # the run ends here anyway: that is not a piece
        self._save_at(trainer, step)
        # an exception, not ``trainer.should_stop``: Lightning validates once more before an early stop, which the
        # uninterrupted run would not do (an extra dev check, and maybe another best export)
        raise PieceEnded(step, self.path.resolve(), float(self.stop_after_minutes))

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """The final state too, so a finished run can be continued for more epochs."""
        if self.every_n_train_steps:
            self._save_at(trainer, trainer.global_step)

    def _save_at(self, trainer: pl.Trainer, step: int) -> bool:
        """Save the state of ``step`` unless it is saved already; whether it wrote."""
        if step == self._last_saved_step:
            return False
        self._save(trainer)
        self._last_saved_step, self._due = step, False
        return True

    def _save(self, trainer: pl.Trainer) -> None:
        self._saving = True  # only this callback's own states leave frozen weights out
        try:
            trainer.save_checkpoint(self.path, weights_only=False)
        finally:
            self._saving = False

    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        if not self._saving:
            return
        state = checkpoint["state_dict"]
        keys = [k for k in frozen_weights(pl_module) if k in state]
        checkpoint["frozen_weights"] = {"keys": keys, "sha256": weights_digest(state, keys)}
        for key in keys:
            del state[key]

    def on_load_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        """Runs after the non-strict weight load: every model key must have come from the state or be a frozen
        weight the state names, and those must be the weights the state was trained on."""
        current = pl_module.state_dict()
        frozen = checkpoint.get("frozen_weights", {"keys": [], "sha256": None})
        stored, left_out = set(checkpoint["state_dict"]), set(frozen["keys"])
        unexpected = sorted(stored - set(current))
        missing = sorted(set(current) - stored - left_out)
        unknown = sorted(left_out - set(current))
        if unexpected or missing or unknown:
            raise ValueError(
                f"resume state does not fit this model: {len(unexpected)} unexpected weight(s) "
                f"{unexpected[:3]}, {len(missing)} missing {missing[:3]}, {len(unknown)} frozen weight(s) "
                f"the model lacks {unknown[:3]}; resume with the config the state was written with"
            )
        if frozen["keys"] and weights_digest(current, frozen["keys"]) != frozen["sha256"]:
            raise ValueError(
                f"resume state was trained on other frozen weights ({len(frozen['keys'])} tensors, e.g. "
                f"{frozen['keys'][0]}): the base model differs from the one of the interrupted run; "
                "resume with the same base model"
            )

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """Ctrl-C or a crash: say where the run can continue from (Lightning exits without the CLI's message)."""
        if not trainer.is_global_zero or isinstance(exception, PieceEnded):  # a piece's end says it itself
            return
        if self._last_saved_step < 0:
            print(
                f"training stopped at step {trainer.global_step} before any resume state was saved "
                f"(every {self.every_n_train_steps} steps)",
                file=sys.stderr,
                flush=True,
            )
            return
        print(
            f"training stopped at step {trainer.global_step}; the last resume state is {self.path.resolve()} "
            f"(step {self._last_saved_step}): rerun the same command with it to continue (train.py fit: "
            f"--ckpt_path FILE, train.py nli: --resume FILE)",
            file=sys.stderr,
            flush=True,
        )

    def state_dict(self) -> dict[str, Any]:
        return {"rng": _rng_state(), "loader": self._current_loader_state()}

    def _current_loader_state(self) -> dict[str, Any] | None:
        loader = self._trainer.train_dataloader if self._trainer is not None else None
        return loader.state_dict() if isinstance(loader, ResumableDataLoader) else None

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        _set_rng_state(state_dict["rng"])
        self._loader_state = state_dict.get("loader")
