"""Load a role's model and tokenizer from a resolved location.

One function per role family keeps the call sites obvious (``load_encoder``, ``load_causal_lm``...). Models are
cached per (role, location, device, dtype) inside a process so that a metric asked for twice loads once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from nlgmetrics.modelroles.errors import ModelRoleError
from nlgmetrics.modelroles.resolve import DEFAULT_ENCODER, ResolvedModel, fingerprint, resolve

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}


def pick_device(device: str | None = None) -> str:
    """``None``/``"auto"`` means the first GPU when there is one, else the CPU; anything else is checked."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    check_device(device)
    return device


def check_device(device: str) -> str:
    """Fail before any model loads, in one line, when ``device`` cannot work on this machine.

    Without this, ``--device cuda`` on a CPU build of PyTorch ends in a long traceback from deep inside the
    first ``.to(device)``.
    """
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise ModelRoleError(f"unknown device '{device}'; use cpu, cuda, cuda:N or mps") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, no GPU visible"
            raise ModelRoleError(
                f"device '{device}': no usable CUDA GPU (PyTorch {torch.__version__}, {build}); use --device cpu"
            )
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ModelRoleError(f"device '{device}': only {torch.cuda.device_count()} CUDA device(s) visible")
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise ModelRoleError(f"device '{device}': Apple MPS is not available here; use --device cpu")
    elif parsed.type != "cpu":
        raise ModelRoleError(f"device '{device}' is not supported; use cpu, cuda, cuda:N or mps")
    return device


@dataclass
class LoadedModel:
    """A model with its tokenizer and identity (spec + weight hash, for signatures).

    ``sentence_prefix`` is put before every text when a sentence embedding is pooled from this model (e5 models
    are trained with ``query: ``/``passage: `` in front); it comes from the folder's ``nlgmetrics.json``.
    """

    role: str
    spec: str
    location: str
    tokenizer: Any
    model: Any
    hash: str
    sentence_prefix: str = ""

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device


_AUTO_CLASSES = {
    "encoder": "AutoModel",
    "masked_lm": "AutoModelForMaskedLM",
    "seq2seq": "AutoModelForSeq2SeqLM",
    "causal_lm": "AutoModelForCausalLM",
    "nli": "AutoModelForSequenceClassification",
}


def load_fresh(role: str, spec: str, dtype: str = "float32") -> tuple[Any, Any, ResolvedModel, dict]:
    """A new, uncached (model, tokenizer, resolved location, folder metadata) on the CPU, for code that trains
    the weights. In ``dtype`` whatever the stored one (converted folders such as me5-small are stored in fp16,
    and transformers keeps the stored dtype unless told), with the folder's load options (``encoder_kwargs``)."""
    import torch
    import transformers

    resolved: ResolvedModel = resolve(role, spec)
    auto = getattr(transformers, _AUTO_CLASSES[role])
    meta = folder_metadata(resolved.location)
    kwargs = meta.get("encoder_kwargs", {}) if role == "encoder" else {}
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(resolved.location)
        model = auto.from_pretrained(resolved.location, dtype=getattr(torch, _DTYPES[dtype]), **kwargs)
    except (OSError, ValueError, KeyError) as error:
        raise ModelRoleError(f"role '{role}': cannot load '{spec}' from {resolved.location}: {error}") from error
    return model, tokenizer, resolved, meta


def _load(role: str, spec: str, device: str, dtype: str) -> LoadedModel:
    from nlgmetrics.modelroles.memo import memoised

    return memoised(("transformers", role, spec, device, dtype), lambda: _build(role, spec, device, dtype))


def _build(role: str, spec: str, device: str, dtype: str) -> LoadedModel:
    model, tokenizer, resolved, meta = load_fresh(role, spec, dtype)
    model.to(pick_device(device))
    model.eval()
    return LoadedModel(
        role, spec, resolved.location, tokenizer, model, fingerprint(resolved.location), meta.get("sentence_prefix", "")
    )


def folder_metadata(location: str) -> dict:
    """The ``nlgmetrics.json`` a converted cache folder carries (prefixes, load options), or ``{}``."""
    path = Path(location) / "nlgmetrics.json"
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ModelRoleError(f"unreadable {path}: {error}; delete the folder to rebuild it") from error
    return meta if isinstance(meta, dict) else {}


def load_model(role: str, spec: str, device: str | None = None, dtype: str = "float32") -> LoadedModel:
    """Load ``spec`` for ``role`` (a transformers role: encoder, masked_lm, seq2seq, causal_lm, nli)."""
    if role not in _AUTO_CLASSES:
        raise ModelRoleError(f"role '{role}' is not a transformers role; use load_spacy for 'spacy'")
    if dtype not in _DTYPES:
        raise ModelRoleError(f"unknown dtype '{dtype}'; use one of {', '.join(sorted(set(_DTYPES.values())))}")
    return _load(role, spec, pick_device(device), _DTYPES[dtype])


def load_encoder(spec: str = DEFAULT_ENCODER, device: str | None = None, dtype: str = "float32") -> LoadedModel:
    return load_model("encoder", spec, device, dtype)


def load_causal_lm(spec: str = "packaged:smollm2", device: str | None = None, dtype: str = "float32") -> LoadedModel:
    return load_model("causal_lm", spec, device, dtype)


def load_masked_lm(spec: str, device: str | None = None, dtype: str = "float32") -> LoadedModel:
    return load_model("masked_lm", spec, device, dtype)


def load_seq2seq(spec: str, device: str | None = None, dtype: str = "float32") -> LoadedModel:
    return load_model("seq2seq", spec, device, dtype)


@lru_cache(maxsize=4)
def load_spacy(spec: str = "packaged:en_core_web_sm") -> Any:
    """A spaCy pipeline for POS, lemmas and entities."""
    import spacy

    resolved = resolve("spacy", spec)
    try:
        return spacy.load(resolved.location)
    except OSError as error:
        raise ModelRoleError(f"role 'spacy': cannot load '{spec}': {error}") from error
