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


__all__ = [
    "ALL_LORA_TARGETS",
    "ATTENTION_PROJECTIONS",
    "LORA_TARGETS",
    "attention_adapters",
    "require_attention_adapters",
]
