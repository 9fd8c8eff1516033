"""NLI checkpoints as a LoRA adapter + head over a named base encoder: safetensors + YAML, never pickles.

An adapter folder holds ``nli.yaml`` (base model value and its weight hash, label map, LoRA shape, max length,
temperature, training record) and ``adapter.safetensors``. The full fine-tune of MiniLM would be 90 MB; the
adapter is a few MB, so retrains can live in git history. Loading refuses a base whose weights differ from the
ones the adapter was trained on: an adapter over the wrong base produces confident nonsense.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nlgmetrics.modelroles import ModelRoleError, fingerprint, resolve
from nlgmetrics.modelroles.lora import ALL_LORA_TARGETS
from nlgmetrics.weightfiles import read_format_yaml, unreadable_reason

CONFIG_NAME = "nli.yaml"
WEIGHTS_NAME = "adapter.safetensors"
FORMAT = "nlgmetrics-nli-lora/1"


@dataclass
class LoraShape:
    """What the adapter touches. ``target_modules`` is a regex (peft matches it against module names)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.1
    target_modules: str = ALL_LORA_TARGETS
    modules_to_save: list[str] = field(default_factory=lambda: ["classifier", "pooler"])


@dataclass
class AdapterConfig:
    base: str
    base_hash: str
    id2label: dict[int, str]
    lora: LoraShape
    max_length: int = 128
    temperature: float = 1.0
    record: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / CONFIG_NAME).is_file()


def read_adapter_config(path: str | Path) -> AdapterConfig:
    """Parse ``nli.yaml`` with a clear error for a missing or corrupt file."""
    path = Path(path)
    raw = read_format_yaml(path / CONFIG_NAME, FORMAT, f"NLI checkpoint {path}", ModelRoleError)
    try:
        lora = LoraShape(**raw.pop("lora"))
        raw["id2label"] = {int(k): str(v) for k, v in raw["id2label"].items()}
        return AdapterConfig(lora=lora, **raw)
    except (KeyError, TypeError, ValueError) as error:
        raise ModelRoleError(f"NLI checkpoint {path}: {CONFIG_NAME} misses or mistypes a field ({error})") from error


def adapter_languages(path: str | Path) -> list[str] | None:
    """The languages an NLI adapter covers: ``languages`` in its ``nli.yaml``, else its base encoder's
    (:data:`~nlgmetrics.nli.defaults.BASE_LANGUAGES`); None for multilingual or unknown bases (nothing refused)."""
    from nlgmetrics.nli.defaults import BASE_LANGUAGES

    raw = read_format_yaml(Path(path) / CONFIG_NAME, FORMAT, f"NLI checkpoint {path}", ModelRoleError)
    declared = raw.get("languages")
    if declared is not None:
        return [str(code).lower() for code in declared] or None
    return BASE_LANGUAGES.get(str(raw.get("base")))


def build_classifier(base_location: str | Path, id2label: dict[int, str]) -> Any:
    """The sequence classifier an adapter is trained on and merged into, in float32 whatever the base's stored
    dtype (converted bases such as me5-small are stored in fp16 and transformers 5 keeps the stored dtype)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(
        base_location,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        dtype=torch.float32,
    )


def wrap_with_lora(model: Any, lora: LoraShape) -> Any:
    """Return a peft model whose only trainable parameters are the adapter and the saved modules."""
    from nlgmetrics.modelroles.lora import wrap_with_lora as wrap

    require_saved_head(model, lora.modules_to_save)
    return wrap(model, lora.r, lora.alpha, lora.dropout, lora.target_modules, lora.modules_to_save)


def require_saved_head(model: Any, modules_to_save: list[str]) -> None:
    """Stop when the classification head is not among ``modules_to_save``: peft ignores names a model lacks, so
    a recipe written for BERT (``classifier``) on a Gemma base (``score``) would keep a random head untrained."""
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    heads = [name for name in ("classifier", "score") if name in names]
    if heads and not set(heads) & set(modules_to_save):
        raise ValueError(
            f"lora.modules_to_save {list(modules_to_save)} leaves the model's classification head "
            f"{heads[0]!r} frozen at its random initialisation; add {heads[0]!r} to lora.modules_to_save"
        )


def save_adapter(peft_model: Any, config: AdapterConfig, out_dir: str | Path) -> Path:
    """Write ``adapter.safetensors`` (fp16) and ``nli.yaml``; the YAML last, so a half-written folder is no
    checkpoint."""
    import torch
    from peft import get_peft_model_state_dict

    from nlgmetrics.weightfiles import save_weights

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / CONFIG_NAME).unlink(missing_ok=True)
    state = {
        k: v.detach().to(torch.float16).contiguous().cpu() for k, v in get_peft_model_state_dict(peft_model).items()
    }
    save_weights(state, out / WEIGHTS_NAME, metadata={"format": FORMAT})
    write_adapter_config(config, out)
    return out


def write_adapter_config(config: AdapterConfig, out_dir: str | Path) -> Path:
    """Write ``nli.yaml`` atomically (a temporary file renamed into place): also how a finished test evaluation
    updates the training record of an adapter whose weights stay as they are."""
    out = Path(out_dir)
    tmp = out / (CONFIG_NAME + ".tmp")
    tmp.write_text(yaml.safe_dump(asdict(config), sort_keys=False), encoding="utf-8")
    tmp.replace(out / CONFIG_NAME)
    return out / CONFIG_NAME


def load_adapter_model(path: str | Path, device: str = "cpu") -> tuple[Any, Any, AdapterConfig]:
    """Rebuild base + adapter, check the base hash, merge the adapter for plain-speed inference."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    path = Path(path)
    config = read_adapter_config(path)
    base = resolve("encoder", config.base)
    actual = fingerprint(base.location)
    if actual != config.base_hash:
        raise ModelRoleError(
            f"NLI adapter {path} was trained on base '{config.base}' with weight hash {config.base_hash}, "
            f"but that value now resolves to weights with hash {actual}; retrain or point 'base' at the right model"
        )
    weights = path / WEIGHTS_NAME
    try:
        state = load_file(str(weights))
    except FileNotFoundError as error:
        raise ModelRoleError(f"NLI checkpoint {path}: no {WEIGHTS_NAME}") from error
    except (SafetensorError, OSError) as error:
        raise ModelRoleError(
            f"NLI checkpoint {path}: {WEIGHTS_NAME} is {unreadable_reason(weights)} ({error})"
        ) from error
    from transformers.utils import logging as hf_logging

    tokenizer = AutoTokenizer.from_pretrained(base.location)
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is "newly initialised" only until the adapter overwrites it
    try:
        model = build_classifier(base.location, config.id2label)
    finally:
        hf_logging.set_verbosity(previous)
    peft_model = wrap_with_lora(model, config.lora)
    state = {k: v.to(torch.float32) for k, v in state.items()}
    result = set_peft_model_state_dict(peft_model, state)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ModelRoleError(f"NLI checkpoint {path}: adapter has keys the model lacks: {unexpected[:3]}")
    merged = peft_model.merge_and_unload()
    merged.to(device)
    merged.eval()
    return tokenizer, merged, config
