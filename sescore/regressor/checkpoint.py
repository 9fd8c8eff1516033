"""SEScore checkpoints: a folder with ``model.safetensors`` and ``hparams.yaml``; loading never unpickles.

``hparams.yaml`` names the model class, the encoder role value and the hash of the encoder weights it was
built on, the network shape, the output scale, and the training record. Full fine-tunes store every weight;
LoRA runs store only the adapters, the layer mix and the head (a few MB) and rebuild the rest from the encoder,
which is why the encoder hash is checked on load: an adapter over different weights gives confident nonsense,
and even a full checkpoint takes its tokenizer and architecture from that folder.
"""

from __future__ import annotations

import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.modelroles import ModelRoleError, fingerprint, resolve
from nlgmetrics.weightfiles import read_format_yaml, unreadable_reason
from sescore.regressor.config import RegressorConfig
from sescore.regressor.model import SEScoreRegressor, add_lora, build_regressor, load_base_encoder
from sescore.regressor.scale import describe

WEIGHTS_NAME = "model.safetensors"
HPARAMS_NAME = "hparams.yaml"
FORMAT = "nlgmetrics-sescore-regressor/1"
MODEL_CLASS = "sescore.regressor.model.SEScoreRegressor"
ENSEMBLE_NAME = "ensemble.yaml"
ENSEMBLE_FORMAT = "nlgmetrics-sescore-ensemble/1"


class CheckpointError(ModelRoleError):
    """A checkpoint folder that cannot be used; the message names the folder, the file and what is wrong."""


def saved_state(regressor: SEScoreRegressor) -> dict[str, Any]:
    """The tensors a checkpoint stores: everything, or (LoRA) adapters + layer mix + head only."""
    state = regressor.state_dict()
    if regressor.config.lora is None:
        return state
    return {k: v for k, v in state.items() if not k.startswith("encoder.") or "lora_" in k}


def _plain(value: Any) -> Any:
    """YAML-safe copy: tuples -> lists, numpy/torch scalars -> Python numbers, unknown objects -> str."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item"):
        try:
            return value.item()
        except (ValueError, RuntimeError):
            pass
    return str(value)


def export_checkpoint(
    regressor: SEScoreRegressor,
    out_dir: str | Path,
    record: dict[str, Any] | None = None,
    languages: list[str] | None = None,
) -> Path:
    """Write ``model.safetensors`` then ``hparams.yaml`` (last: a folder without it is not a checkpoint).

    Args:
        languages: the languages of the training sentences (ISO 639-1), declared in ``hparams.yaml`` so scoring
            refuses other text; None declares nothing, which reads as English (:func:`checkpoint_languages`).
    """
    import torch

    from nlgmetrics.weightfiles import save_weights

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / HPARAMS_NAME).unlink(missing_ok=True)
    state = {k: v.detach().to(torch.float32).contiguous().cpu() for k, v in saved_state(regressor).items()}
    save_weights(state, out / WEIGHTS_NAME, metadata={"format": FORMAT})
    body = {
        "format": FORMAT,
        "model_class": MODEL_CLASS,
        "encoder": regressor.config.encoder,
        "encoder_hash": regressor.encoder_hash,
        **({"nli_hash": regressor.nli_hash} if regressor.config.nli is not None else {}),
        "regressor": regressor.config.to_dict(),
        "output_scale": describe(regressor.config.output_scale),
        **({"languages": [code.lower() for code in languages]} if languages else {}),
        "weights": {
            "file": WEIGHTS_NAME,
            "dtype": "float32",
            "contents": "full" if regressor.config.lora is None else "lora-adapters+head",
        },
        "record": _plain(
            {
                "exported": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "nlgmetrics": toolkit_version(),
                **(record or {}),
            }
        ),
    }
    tmp = out / f".{HPARAMS_NAME}.part"
    tmp.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True), encoding="utf-8")
    tmp.replace(out / HPARAMS_NAME)
    return out


def read_hparams(path: str | Path) -> dict[str, Any]:
    """Parse and check ``hparams.yaml``; every problem is a CheckpointError naming the folder."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"SEScore checkpoint {path}: no such directory")
    if (path / ENSEMBLE_NAME).is_file() and not (path / HPARAMS_NAME).is_file():
        raise CheckpointError(
            f"SEScore checkpoint {path} is an ensemble ({ENSEMBLE_NAME}), not one model: score it "
            "with SEScoreScorer / evaluate.py --checkpoint, or load one of its member folders"
        )
    raw = read_format_yaml(
        path / HPARAMS_NAME,
        FORMAT,
        f"SEScore checkpoint {path}",
        CheckpointError,
        missing=f"no {HPARAMS_NAME} (not a checkpoint, or export was interrupted)",
    )
    if raw.get("model_class") != MODEL_CLASS:
        raise CheckpointError(
            f"SEScore checkpoint {path}: model_class {raw.get('model_class')!r}, expected {MODEL_CLASS}"
        )
    for key in ("encoder", "encoder_hash", "regressor", "output_scale"):
        if key not in raw:
            raise CheckpointError(f"SEScore checkpoint {path}: {HPARAMS_NAME} has no '{key}'")
    return raw


def ensemble_members(path: str | Path) -> list[Path] | None:
    """The member folders of an ensemble folder (``ensemble.yaml``), or None for a plain checkpoint folder.

    Why a folder: a default made of several models has to travel as one name (``--checkpoint DIR``, the
    torchmetrics form, model cards). Members are listed relative to the folder and must be plain checkpoints
    inside it; each is checked on load like any checkpoint.
    """
    path = Path(path)
    file = path / ENSEMBLE_NAME
    if not file.is_file():
        return None
    raw = read_format_yaml(file, ENSEMBLE_FORMAT, f"SEScore ensemble {path}", CheckpointError)
    if raw.get("combine", "mean") != "mean":
        raise CheckpointError(f"SEScore ensemble {path}: combine {raw.get('combine')!r} is not supported (only 'mean')")
    members = raw.get("members")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
        raise CheckpointError(f"SEScore ensemble {path}: 'members' must be a non-empty list of folder names")
    root = path.resolve()
    folders = []
    for member in members:
        folder = (path / member).resolve()
        if root not in folder.parents:
            raise CheckpointError(f"SEScore ensemble {path}: member {member!r} is not a folder inside the ensemble")
        if (folder / ENSEMBLE_NAME).is_file():
            raise CheckpointError(f"SEScore ensemble {path}: member {member!r} is itself an ensemble (not supported)")
        if not folder.is_dir():
            raise CheckpointError(f"SEScore ensemble {path}: member folder {member!r} is missing")
        folders.append(path / member)
    if len({f.resolve() for f in folders}) != len(folders):  # "a" and "./a" are one member
        raise CheckpointError(f"SEScore ensemble {path}: a member is listed twice")
    return folders


def write_ensemble(out_dir: str | Path, members: list[str], note: str = "") -> Path:
    """Write ``ensemble.yaml`` naming member folders already copied into ``out_dir``; checked by reading back."""
    out = Path(out_dir)
    body = {"format": ENSEMBLE_FORMAT, "combine": "mean", "members": list(members)}
    if note:
        body["note"] = note
    (out / ENSEMBLE_NAME).write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    ensemble_members(out)
    return out / ENSEMBLE_NAME


def _relative_paths(value: Any, root: Path) -> Any:
    """Absolute paths under ``root`` in a training record -> relative ones (a shipped card should not name the
    machine that built it); everything else unchanged."""
    if isinstance(value, dict):
        return {k: _relative_paths(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative_paths(v, root) for v in value]
    if isinstance(value, str):
        prefix = f"{root}/"
        return value.replace(prefix, "") if prefix in value else value
    return value


STORED_DTYPES = ("float32", "float16")


def _check_dtype(dtype: str) -> None:
    if dtype not in STORED_DTYPES:
        raise CheckpointError(f"dtype {dtype!r}: checkpoints store weights as one of {', '.join(STORED_DTYPES)}")


def _copy_checkpoint(folder: Path, state: dict[str, Any], dest: Path, dtype: str, note: str = "") -> dict[str, Any]:
    """Copy one checkpoint folder, whose tensors ``state`` the caller has checked (``_checked_state``), to ``dest``
    (weights cast to ``dtype``, training-record paths made relative, ``note`` added to the record, model card
    rendered); returns the written hparams."""
    import torch

    from nlgmetrics.weightfiles import save_weights
    from sescore.regressor.card import write_model_card

    raw = read_hparams(folder)
    target = getattr(torch, dtype)
    stored = {k: (v.to(target) if v.is_floating_point() else v).contiguous() for k, v in state.items()}
    dest.mkdir()
    save_weights(stored, dest / WEIGHTS_NAME, metadata={"format": FORMAT})
    raw["weights"] = {**(raw.get("weights") or {}), "file": WEIGHTS_NAME, "dtype": dtype}
    raw["record"] = _relative_paths(raw.get("record") or {}, Path.cwd().resolve())
    if note:
        raw["record"]["note"] = note
    (dest / HPARAMS_NAME).write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    write_model_card(dest)
    return raw


def pack_checkpoint(folder: str | Path, out_dir: str | Path, dtype: str = "float16", note: str = "") -> Path:
    """Copy one checkpoint into a new folder for shipping, its weights stored as ``dtype``.

    Why: a LoRA checkpoint on a base-size encoder (MPNet: 5.3 M adapter and head weights, 21 MB as float32)
    fits a 12 MiB file only as float16. Loading casts back to float32, so only the stored values are rounded.
    The folder is checked first, built beside ``out_dir`` and renamed into place; an existing ``out_dir`` and
    shipped folders are refused, as for ``pack_ensemble``. ``note`` (e.g. how it was chosen) goes into the record
    and the model card.
    """
    import shutil

    from nlgmetrics.resources import refuse_shipped_output

    source, out = Path(folder), Path(out_dir)
    _check_dtype(dtype)
    refuse_shipped_output(out, "checkpoint output")
    if out.exists():
        raise CheckpointError(f"SEScore checkpoint output {out} exists; choose a new folder (nothing is overwritten)")
    if ensemble_members(source) is not None:
        raise CheckpointError(f"{source} is an ensemble; pack its members with pack_ensemble(dtype=...) instead")
    _, state = _checked_state(source)
    tmp = out.with_name(f".{out.name}.partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        _copy_checkpoint(source, state, tmp, dtype, note)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    tmp.rename(out)
    return out


def pack_interpolated(
    start: str | Path, trained: str | Path, weight: float, out_dir: str | Path, dtype: str = "float16", note: str = ""
) -> Path:
    """``pack_checkpoint`` of the weights ``weight`` of the way from ``start`` to ``trained``: the shipped default
    is such a point (its run's own initialisation, half-way to the trained export, stored as float16).

    Why one step: the interpolated float32 folder was only ever an intermediate; building it beside ``out_dir``
    and packing from it gives the same weights and record as the two steps did (``interpolate_checkpoints`` then
    ``pack_checkpoint``), and an interrupted pack leaves nothing behind. ``out_dir`` is checked before any work.
    """
    import shutil

    from nlgmetrics.resources import refuse_shipped_output

    out = Path(out_dir)
    _check_dtype(dtype)
    refuse_shipped_output(out, "checkpoint output")
    if out.exists():
        raise CheckpointError(f"SEScore checkpoint output {out} exists; choose a new folder (nothing is overwritten)")
    if not 0.0 <= float(weight) <= 1.0:
        raise CheckpointError(f"interpolation weight must be in [0, 1], got {weight}")
    between = out.with_name(f".{out.name}.interpolated")
    shutil.rmtree(between, ignore_errors=True)
    try:
        interpolate_checkpoints(start, trained, float(weight), between)
        return pack_checkpoint(between, out, dtype, note)
    finally:
        shutil.rmtree(between, ignore_errors=True)


def pack_ensemble(
    members: list[str | Path],
    out_dir: str | Path,
    names: list[str] | None = None,
    note: str = "",
    dtype: str = "float32",
) -> Path:
    """Copy checkpoint folders into one ensemble folder (``ensemble.yaml`` + one sub-folder per member).

    Each member is checked as a checkpoint first (format, encoder hash, readable weights) and all must share an
    output scale, so a broken ensemble is refused before anything is written. The folder is built beside
    ``out_dir`` and renamed into place at the end: an interrupted pack leaves no half ensemble, and an existing
    ``out_dir`` is never overwritten. Shipped checkpoint folders are refused as outputs (copy there deliberately).
    ``dtype`` stores the members' weights as float32 or float16 (see ``pack_checkpoint``).
    """
    import shutil

    from nlgmetrics.resources import refuse_shipped_output
    from sescore.regressor.card import render_ensemble_card

    out = Path(out_dir)
    _check_dtype(dtype)
    refuse_shipped_output(out, "ensemble output")
    if out.exists():
        raise CheckpointError(f"SEScore ensemble output {out} exists; choose a new folder (nothing is overwritten)")
    folders = [Path(m) for m in members]
    names = list(names) if names is not None else [f.name for f in folders]
    if len(names) != len(folders):
        raise CheckpointError(f"{len(folders)} member folders but {len(names)} names")
    if len(folders) < 2:
        raise CheckpointError("an ensemble needs at least two member folders")
    if len(set(names)) != len(names) or any(not n or "/" in n or n.startswith(".") for n in names):
        raise CheckpointError(f"member names must be distinct plain folder names, got {names}")
    if len({f.resolve() for f in folders}) != len(folders):
        raise CheckpointError("a member folder is listed twice (its scores would count double)")
    scales, states = set(), []
    for folder in folders:
        if ensemble_members(folder) is not None:
            raise CheckpointError(f"{folder} is itself an ensemble; list its member folders instead")
        config, state = _checked_state(folder)
        scales.add(config.output_scale)
        states.append(state)
    if len(scales) > 1:
        raise CheckpointError(f"cannot pack checkpoints with different output scales {sorted(scales)}")
    tmp = out.with_name(f".{out.name}.partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    written = {
        name: _copy_checkpoint(folder, state, tmp / name, dtype) for folder, state, name in zip(folders, states, names)
    }
    write_ensemble(tmp, names, note)
    (tmp / "README.md").write_text(render_ensemble_card(written, note), encoding="utf-8")
    tmp.rename(out)
    return out


def _check_weights(path: Path, role: str, value: str, stored: str, what: str, key: str) -> None:
    """The weights ``value`` resolves to for ``role`` must be the ones the checkpoint was trained with: an adapter
    or a head over other weights gives confident nonsense."""
    actual = fingerprint(resolve(role, value).location)
    if actual != stored:
        raise CheckpointError(
            f"SEScore checkpoint {path} was trained with {what} '{value}' (weight hash {stored}), but that value "
            f"now resolves to weights with hash {actual}; point {key} in {HPARAMS_NAME} at the original weights "
            "or retrain"
        )


def _checked_state(path: Path) -> tuple[RegressorConfig, dict[str, Any]]:
    """The config and stored tensors of a checkpoint folder, after every check that needs no model."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    raw = read_hparams(path)
    try:
        config = RegressorConfig.from_dict(raw["regressor"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"SEScore checkpoint {path}: 'regressor' in {HPARAMS_NAME} is invalid ({error})"
        ) from error
    if config.encoder != raw["encoder"]:
        raise CheckpointError(f"SEScore checkpoint {path}: 'encoder' and 'regressor.encoder' disagree")
    _check_weights(path, "encoder", config.encoder, raw["encoder_hash"], "encoder", "'encoder'")
    if config.nli is not None:
        if "nli_hash" not in raw:
            raise CheckpointError(f"SEScore checkpoint {path}: reads NLI features but {HPARAMS_NAME} has no 'nli_hash'")
        _check_weights(path, "nli", config.nli, raw["nli_hash"], "NLI features of", "'regressor.nli'")
    try:
        state = load_file(str(path / WEIGHTS_NAME))
    except FileNotFoundError as error:
        raise CheckpointError(f"SEScore checkpoint {path}: no {WEIGHTS_NAME}") from error
    except (SafetensorError, OSError) as error:
        raise CheckpointError(
            f"SEScore checkpoint {path}: {WEIGHTS_NAME} is {unreadable_reason(path / WEIGHTS_NAME)} ({error})"
        ) from error
    return config, state


def _fill(regressor: SEScoreRegressor, state: dict[str, Any], path: Path) -> SEScoreRegressor:
    import torch

    expected = set(saved_state(regressor))
    missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
    if missing or unexpected:
        raise CheckpointError(
            f"SEScore checkpoint {path}: {WEIGHTS_NAME} does not fit the model in {HPARAMS_NAME} "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    try:
        regressor.load_state_dict({k: v.to(torch.float32) for k, v in state.items()}, strict=False)
    except RuntimeError as error:  # shape mismatches
        raise CheckpointError(f"SEScore checkpoint {path}: {WEIGHTS_NAME} does not fit ({error})") from error
    return regressor


def load_checkpoint(path: str | Path, device: str = "cpu") -> SEScoreRegressor:
    """Rebuild the regressor in eval mode (LoRA merged into the encoder for plain-speed inference)."""
    path = Path(path)
    config, state = _checked_state(path)
    encoder, tokenizer, encoder_hash = load_base_encoder(config.encoder)
    if config.lora is not None:
        encoder = add_lora(encoder, config.lora)
    regressor = _fill(SEScoreRegressor(config, encoder, tokenizer, encoder_hash), state, path)
    if config.lora is not None:
        regressor.encoder = regressor.encoder.merge_and_unload()
    regressor.to(device)
    regressor.eval()
    return regressor


def load_trainable(path: str | Path) -> SEScoreRegressor:
    """The checkpoint as a trainable regressor (LoRA adapters kept separate, train mode): the start of a
    second training stage, e.g. fine-tuning the synthetic-data model on human judgments."""
    path = Path(path)
    config, state = _checked_state(path)
    return _fill(build_regressor(config), state, path)


def checkpoint_languages(path: str | Path) -> list[str]:
    """The languages a checkpoint covers, from its ``hparams.yaml`` (``languages: [de]``).

    A checkpoint that declares none is English: every checkpoint exported before the key existed was trained on
    English synthesis data, and an export names the language of its synthesis data. Read once per version of
    the file (scoring checks the language on every call, a torchmetrics update included).
    """
    hparams = Path(path) / HPARAMS_NAME
    stamp = hparams.stat().st_mtime_ns if hparams.is_file() else 0
    return list(_declared_languages(str(Path(path).resolve()), stamp))


@lru_cache(maxsize=64)
def _declared_languages(path: str, stamp: int) -> tuple[str, ...]:
    languages = read_hparams(path).get("languages") or ["en"]
    if not isinstance(languages, list) or not all(isinstance(code, str) for code in languages):
        raise CheckpointError(f"SEScore checkpoint {path}: 'languages' must be a list of language codes")
    return tuple(code.lower() for code in languages)


def checkpoint_hash(path: str | Path) -> str:
    """Content hash of the checkpoint's weights (for score signatures)."""
    return fingerprint(path)


def interpolate_states(start: dict[str, Any], trained: dict[str, Any], weight: float) -> dict[str, Any]:
    """Weights ``weight`` of the way from ``start`` to ``trained`` (WiSE-FT: Wortsman et al., 2022).

    Why: no SEScore recipe measured so far scores better on the dev mix after training than its untrained
    alignment start; a point between the two may keep the start's robustness and some of what training taught.
    Plain tensors are interpolated linearly. A LoRA pair contributes ``B @ A`` to its weight, so the pair is
    scaled, not averaged: with the start's ``B`` at zero (an untrained adapter), ``A`` of the trained run and
    ``weight * B`` give exactly ``weight`` times the trained update.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"interpolation weight must be in [0, 1], got {weight}")
    if set(start) != set(trained):
        missing = sorted(set(start) ^ set(trained))
        raise ValueError(f"the two checkpoints store different tensors (e.g. {missing[:3]}); same recipe needed")
    out = {}
    for key, value in trained.items():
        if start[key].shape != value.shape:
            raise ValueError(f"tensor {key}: shape {tuple(start[key].shape)} vs {tuple(value.shape)}")
        if "lora_A" in key:
            out[key] = value.clone()
        elif "lora_B" in key:
            if bool(start[key].any()):
                raise ValueError(
                    f"the start's adapter {key} is trained (non-zero B); interpolating two trained "
                    "adapters is not a rank-r adapter, start from an untrained export instead"
                )
            out[key] = weight * value
        else:
            out[key] = (1.0 - weight) * start[key] + weight * value
    return out


def interpolate_checkpoints(start: str | Path, trained: str | Path, weight: float, out_dir: str | Path) -> Path:
    """Export the checkpoint ``weight`` of the way from ``start`` to ``trained`` (see ``interpolate_states``).

    Both must be the same architecture, else a CheckpointError names the difference. Same settings mean the same
    encoder value, and loading checks each checkpoint's stored encoder hash against those weights, so both were
    built on the same encoder weights. ``start`` should be the weights ``trained``'s run began from (the same
    fit, seed and data, run for one step with learning rates 0: ``configs/sescore/mpnet_v2_start.yaml``): an
    untrained export built apart scores the same (its head's last layer is zero) but its hidden head layers are
    another random draw, which the interpolation would average into the trained head.
    """
    start, trained = Path(start), Path(trained)
    start_config, start_state = _checked_state(start)
    config, state = _checked_state(trained)
    if start_config.to_dict() != config.to_dict():
        raise CheckpointError(
            f"SEScore checkpoints {start} and {trained} have different 'regressor' settings; "
            "only the same architecture can be interpolated"
        )
    try:
        mixed = interpolate_states(start_state, state, weight)
    except ValueError as error:
        raise CheckpointError(f"SEScore checkpoints {start} and {trained}: {error}") from error
    regressor = _fill(build_regressor(config), mixed, trained)
    record = {
        "selected": f"interpolated {weight:g} of the way from {start} to {trained}",
        "interpolated": {
            "start": str(start),
            "trained": str(trained),
            "weight": float(weight),
            "trained_record": read_hparams(trained).get("record", {}),
        },
    }
    declared = read_hparams(trained).get("languages")
    return export_checkpoint(regressor.eval(), out_dir, record, languages=declared)
