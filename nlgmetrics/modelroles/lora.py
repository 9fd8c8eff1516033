"""Which encoder modules get LoRA adapters: one pattern for every encoder family the toolkit ships.

BERT, RoBERTa and XLM-R (MiniLM, me5-small) name a block's attention projections ``attention.self.query/key/value``
and ``attention.output.dense``; MPNet names them ``attention.attn.q/k/v/o``; Gemma 3 (EmbeddingGemma) names them
``self_attn.q_proj/k_proj/v_proj/o_proj`` and its gated feed-forward ``mlp.gate_proj/up_proj/down_proj``. A
pattern written for one family matches only another's feed-forward layers, or nothing, and peft does not
complain: training then adapts no attention at all. ``ALL_LORA_TARGETS`` reaches every attention and
feed-forward projection of every block in the three families; SEScore's default, ``LORA_TARGETS``, covers the
BERT and MPNet families, whose names its recipes record. The pooler is left out (metrics pool token states
themselves; NLI classifiers save it whole instead).
"""

from __future__ import annotations

import re

from torch import nn

# a block's attention projections, BERT/XLM-R names, MPNet's, then Gemma's: the one list the pattern and the check read
ATTENTION_PROJECTIONS = (
    r"attention\.self\.(query|key|value)|attention\.output\.dense|attention\.attn\.(q|k|v|o)"
    r"|self_attn\.(q|k|v|o)_proj"
)
_BERT_MPNET_PROJECTIONS = ATTENTION_PROJECTIONS.rsplit("|self_attn", 1)[0]
# BERT-style blocks (``encoder.layer.N``): the pattern SEScore's recipes and checkpoints record
LORA_TARGETS = r".*encoder\.layer\.\d+\.(" + _BERT_MPNET_PROJECTIONS + r"|intermediate\.dense|output\.dense)"
# the same plus Gemma 3 blocks (``layers.N``): NLI adapters' default
ALL_LORA_TARGETS = LORA_TARGETS + r"|.*layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)"
_PROJECTION = re.compile(rf".*\.({ATTENTION_PROJECTIONS})$")


def attention_adapters(model: nn.Module) -> tuple[list[str], list[str]]:
    """(adapted, unadapted): the attention projections (BERT-, MPNet- or Gemma-style names) of a peft-wrapped model
    with and without a LoRA adapter. Adapted empty while unadapted is not means the pattern matched feed-forward
    layers only, the silent mismatch described above."""
    linear, wrapped = set(), set()
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            linear.add(name.removesuffix(".base_layer"))
        elif name.endswith(".lora_A"):
            wrapped.add(name.removesuffix(".lora_A"))
    attention = sorted(name for name in linear if _PROJECTION.match(name))
    return [n for n in attention if n in wrapped], [n for n in attention if n not in wrapped]


def require_attention_adapters(model: nn.Module, pattern: str) -> None:
    """Stop with an error naming the pattern when LoRA reached no attention projection of a model that has some
    (e.g. a BERT-style pattern on MPNet): such a run would train without ever adapting attention, and nothing
    else would say so. A pattern that adapts only some projections (say query and value) is the user's choice."""
    adapted, unadapted = attention_adapters(model)
    if unadapted and not adapted:
        raise ValueError(
            f"LoRA target_modules {pattern!r} matches none of the model's {len(unadapted)} attention "
            f"projections (e.g. {unadapted[0]!r}); the toolkit's pattern for BERT-, XLM-R-, "
            f"MPNet- and Gemma-style encoders is {LORA_TARGETS!r}"
        )


def wrap_with_lora(
    model: nn.Module,
    r: int,
    alpha: float,
    dropout: float,
    target_modules: str,
    modules_to_save: list[str] | tuple[str, ...] = (),
) -> nn.Module:
    """The toolkit's one LoRA wrapper: a peft model whose trainable parameters are the adapters (and the modules
    saved whole, e.g. an NLI classifier's head), after checking that the pattern reached attention.

    Args:
        model: the base model (an encoder, or a sequence classifier).
        r: adapter rank.
        alpha: LoRA's scaling numerator (the update is scaled by ``alpha / r``).
        dropout: dropout on the adapters' input.
        target_modules: the regular expression of the wrapped linear layers.
        modules_to_save: modules trained in full beside the adapters.

    Returns:
        The wrapped model.

    Raises:
        ValueError: the pattern matches none of the model's attention projections.
    """
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=target_modules,
        modules_to_save=list(modules_to_save) or None,
        bias="none",
    )
    wrapped = get_peft_model(model, config)
    require_attention_adapters(wrapped, target_modules)
    return wrapped


__all__ = [
    "wrap_with_lora",
    "ALL_LORA_TARGETS",
    "ATTENTION_PROJECTIONS",
    "LORA_TARGETS",
    "attention_adapters",
    "require_attention_adapters",
]
