"""The precision a model's forward pass runs in when scoring: float32 (default), bfloat16 autocast or int8.

Why: about 85% of a neural metric's CPU time is float32 matrix products, and two cheaper number formats exist.
On CPUs with AVX-512 BF16 or AMX and on GPUs from Ampere on, bfloat16 products run about twice as fast as float32;
on a CPU without them (AVX2 only) bfloat16 is emulated and several times slower. int8 products (dynamic
quantization, fbgemm) run on any x86 CPU with AVX2, and faster with AVX-512 VNNI or AMX.
``bench/bench_precision.py`` and ``bench/bench_roofline.py`` measure both on the machine they run on.

bfloat16: only the model's own forward runs under autocast; the float32 model stays as it is (autocast rounds each
product's inputs, not the model). On the CPU, autocast would round every linear layer's weights again on each call
(a sixth of the bf16 time in the operator profile); ``running_model`` instead hands out a twin whose
transformer-block linear layers hold their weights in bfloat16 already, rounded once the same way, so the products
and the scores are bit-identical to plain autocast, without the repeated copies. The twin shares every other tensor
with the float32 model.

int8: the linear layers inside the transformer blocks (the ``nn.ModuleList`` that repeats over every token, ~99% of
the products) run as dynamically quantized int8 layers: weights rounded once per output channel group, each
batch's activations rounded with a scale taken from that batch. Heads and poolers (one vector per text, whose
output is the score) stay float32. The int8 model is a copy made once per float32 model (``running_model``), so the
shared float32 model of other metrics is never changed. The activation scale is the batch's, so unlike float32 a
text's int8 score moves slightly (~1e-3) with the texts it is batched with.

Either way the model's outputs are cast back to float32 before any metric arithmetic (pooling, cosine
similarities, alignment, softmax). Rounding those to 8 bits would turn close scores into exact ties, which the WMT
tau-like counts against a metric.

Scores in bfloat16 or int8 are close to float32's, not equal, so a scorer's signature names a non-default precision
and cached float32 scores are never reused for it.

API note (torch 2.13): ``torch.ao.quantization.quantize_dynamic`` prints a deprecation notice pointing at torchao's
``quantize_``; torchao 0.18's int8 dynamic configuration runs on the CPU through a reference int8 product about 20x
slower than float32 (measured on an AVX2 EPYC), while ``quantize_dynamic``'s fbgemm kernels are faster than
float32. This module therefore uses ``quantize_dynamic`` and silences its notice where it calls it.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

PRECISIONS = ("float32", "bfloat16", "int8")
DEFAULT_PRECISION = "float32"

# Set inside ``forward_precision(..., "int8")``: like autocast's own state, it reaches the code that calls the model
# (``running_model``) without every function between the scorer and the model passing it along.
_TWIN_PRECISION: contextvars.ContextVar[str | None] = contextvars.ContextVar("nlgmetrics_twin_forward", default=None)
_TWIN = "_nlgmetrics_twins"  # {precision: (weights key, copy)} kept on a float32 model: see ``running_model``


def check_precision(precision: str) -> str:
    """``precision`` if known; otherwise an InputError (a ValueError) naming the choices, before any model loads."""
    from nlgmetrics.inputs import InputError

    if precision not in PRECISIONS:
        raise InputError(f"unknown precision '{precision}': choose {', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}")
    return precision


def precision_tag(precision: str) -> str:
    """The signature part of a non-default precision (empty for float32, so float32 signatures and the score
    caches keyed by them stay as they were)."""
    return "" if check_precision(precision) == DEFAULT_PRECISION else f"|precision:{precision}"


@contextlib.contextmanager
def forward_precision(device: Any, precision: str) -> Iterator[None]:
    """Run the model calls inside in ``precision`` on ``device`` (a torch.device or a string like "cuda:1").

    float32 is a no-op (``device`` may then be None). bfloat16 on a GPU without bfloat16 support stops with a clear
    error instead of running slowly in emulation. int8 runs on the CPU only; inside, ``running_model`` hands out the
    int8 copy of a model.

    Args:
        device: where the model runs (None only for float32).
        precision: one of ``PRECISIONS``.
    """
    import torch

    if check_precision(precision) == DEFAULT_PRECISION:
        yield
        return
    device_type = torch.device(device).type
    if precision == "int8":
        if device_type != "cpu":
            raise ValueError(
                f"precision int8: dynamic int8 quantization runs on the CPU only, not on {device_type}; "
                "use bfloat16 there"
            )
        token = _TWIN_PRECISION.set("int8")
        try:
            yield
        finally:
            _TWIN_PRECISION.reset(token)
        return
    if device_type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError("precision bfloat16: this GPU has no bfloat16 support; use float32")
    # on a GPU autocast's own weight cache is used; the CPU gets the bf16-weight twin (module docstring)
    token = _TWIN_PRECISION.set("bfloat16" if device_type == "cpu" else None)
    try:
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            yield
    finally:
        _TWIN_PRECISION.reset(token)


def block_linears(model: Any) -> list[str]:
    """Names of the ``nn.Linear`` layers inside ``nn.ModuleList`` blocks (a transformer's repeated layers).

    Why this rule: every transformer keeps its repeated blocks in a ModuleList (BERT's and MPNet's ``encoder.layer``,
    Llama's ``layers``), and those run on every token; heads and poolers sit outside it and see one vector per text.
    """
    from torch import nn

    inside: set[str] = set()
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList):
            prefix = f"{name}." if name else ""
            inside |= {prefix + sub for sub, child in module.named_modules() if isinstance(child, nn.Linear) and sub}
    return sorted(inside)


def is_int8(model: Any) -> bool:
    """Whether ``model`` already holds dynamically quantized linear layers (an int8 copy)."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    return any(isinstance(module, DynamicLinear) for module in model.modules())


def int8_copy(model: Any) -> Any:
    """A copy of ``model`` whose transformer-block linear layers are dynamically quantized int8 (``block_linears``);
    ``model`` itself is unchanged.

    Args:
        model: a float32 ``nn.Module`` on the CPU.

    Returns:
        The int8 copy (same class, same hooks; its quantized layers hold their own weights).
    """
    import warnings

    import torch

    names = block_linears(model)
    if not names:
        raise ValueError(
            f"precision int8: {type(model).__name__} has no linear layers inside transformer blocks "
            "(nn.ModuleList) to quantize"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice: see the module docstring
        from torch.ao.quantization import default_dynamic_qconfig, quantize_dynamic

        return quantize_dynamic(
            model, {name: default_dynamic_qconfig for name in names}, dtype=torch.qint8, inplace=False
        )


def is_bf16_twin(model: Any) -> bool:
    """Whether ``model``'s transformer-block linear layers already hold bfloat16 weights (a bf16 twin)."""
    import torch

    modules = dict(model.named_modules())
    return any(modules[name].weight.dtype == torch.bfloat16 for name in block_linears(model))


def bf16_copy(model: Any) -> Any:
    """A twin of ``model`` whose transformer-block linear layers (``block_linears``) hold bfloat16 weights and
    biases, rounded once as autocast rounds them on every call; every other parameter and buffer is shared with
    ``model``, which is unchanged.

    Args:
        model: a float32 ``nn.Module`` on the CPU.

    Returns:
        The twin (same class, same hooks).
    """
    import copy

    import torch

    names = block_linears(model)
    if not names:
        raise ValueError(f"precision bfloat16: {type(model).__name__} has no linear layers inside transformer blocks")
    modules = dict(model.named_modules())
    # deepcopy's memo decides what each tensor becomes: the rounded layers' weights their bf16 versions (never an
    # interim float32 copy), every other tensor itself (shared)
    memo: dict[int, Any] = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    with torch.no_grad():
        for name in names:
            for tensor in (modules[name].weight, modules[name].bias):
                if tensor is not None:
                    memo[id(tensor)] = torch.nn.Parameter(tensor.to(torch.bfloat16), requires_grad=False)
    return copy.deepcopy(model, memo)


_COPIES = {"int8": (is_int8, int8_copy), "bfloat16": (is_bf16_twin, bf16_copy)}


def _weights_key(model: Any) -> tuple:
    """Which parameter tensors ``model`` holds and how often each was changed in place (torch's version counter):
    a copy made under another key is stale (trained, or loaded with new weights since)."""
    return tuple((id(p), p._version) for p in model.parameters())


def running_model(model: Any) -> Any:
    """The module to call: ``model`` itself, or inside ``forward_precision(..., "int8")`` its int8 copy and inside
    ``forward_precision("cpu", "bfloat16")`` its bf16-weight twin.

    The copy is made once and kept on ``model`` (int8: about a third of its size; bf16: half of its block layers),
    and made anew when ``model``'s weights changed since; a copy is its own copy.

    Args:
        model: the float32 ``nn.Module`` a scorer loaded.

    Returns:
        The module that runs the forward pass.
    """
    precision = _TWIN_PRECISION.get()
    if precision is None:
        return model
    twin = model.__dict__.get(_TWIN, {}).get(precision)  # a copy never holds copies of its own
    if twin is not None and twin[0] == _weights_key(model):
        return twin[1]  # every batch after the first: no scan of the modules
    is_copy, make_copy = _COPIES[precision]
    if is_copy(model) or (precision == "bfloat16" and not block_linears(model)):
        return model  # bfloat16: a model without transformer blocks (a test's toy) runs under autocast as it is
    twins = model.__dict__.pop(_TWIN, {})  # popped, or the deep copy would copy the twins too
    twins[precision] = (_weights_key(model), make_copy(model))
    model.__dict__[_TWIN] = twins  # a plain attribute, not a registered submodule: state_dict is unchanged
    return twins[precision][1]
