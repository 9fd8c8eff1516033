"""What shapes a SEScore regressor (and so must be in a checkpoint to rebuild it): the encoder, the head, the
adapters and the extra pair features, each checked when the config is made."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from nlgmetrics.modelroles.lora import LORA_TARGETS
from sescore.regressor.features import LEXICAL_FEATURES, NLI_FEATURES
from sescore.regressor.scale import check_scale

# LoRA on the attention projections and feed-forward of every transformer block (BERT/RoBERTa/XLM-R and MPNet
# naming, nlgmetrics.modelroles.lora); the pooler is left out because SEScore pools the token states itself.
DEFAULT_LORA_TARGETS = LORA_TARGETS


@dataclass(frozen=True)
class LoraSettings:
    """Low-rank adapters on the encoder: small checkpoints (adapter + head) over a named, hashed base."""

    r: int = 8
    alpha: int = 16
    dropout: float = 0.1
    target_modules: str = DEFAULT_LORA_TARGETS


@dataclass(frozen=True)
class RegressorConfig:
    """Everything that shapes the network (and so must be in a checkpoint to rebuild it)."""

    encoder: str = "packaged:minilm"
    layer_mix: bool = False
    hidden_sizes: tuple[int, ...] = (2048, 1024)
    dropout: float = 0.1
    max_length: int = 256
    output_scale: str = "unit"
    lora: LoraSettings | None = None
    alignment: bool = False
    lexical: tuple[str, ...] = ()
    nli: str | None = None

    def __post_init__(self) -> None:
        check_scale(self.output_scale)
        lexical = tuple(str(name) for name in self.lexical)
        unknown = [name for name in lexical if name not in LEXICAL_FEATURES]
        if unknown:
            raise ValueError(f"unknown lexical features {unknown}; known: {', '.join(LEXICAL_FEATURES)}")
        if len(set(lexical)) != len(lexical):
            raise ValueError(f"lexical features listed twice: {list(lexical)}")
        if lexical and not self.alignment:
            raise ValueError("lexical features join the alignment skip: they need alignment: true")
        object.__setattr__(self, "lexical", lexical)
        if self.nli is not None:
            if not isinstance(self.nli, str) or not self.nli.strip():
                raise ValueError(f"nli must name an NLI model (a role value: packaged:nli-minilm...), not {self.nli!r}")
            if not self.alignment:
                raise ValueError("NLI features join the alignment skip: they need alignment: true")
        if not self.hidden_sizes or any(int(h) < 1 for h in self.hidden_sizes):
            raise ValueError(f"hidden_sizes must be positive integers, got {list(self.hidden_sizes)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.max_length < 8:
            raise ValueError(f"max_length must be at least 8 tokens, got {self.max_length}")
        object.__setattr__(self, "hidden_sizes", tuple(int(h) for h in self.hidden_sizes))

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["hidden_sizes"] = list(self.hidden_sizes)
        if self.lexical:
            body["lexical"] = list(self.lexical)
        else:  # checkpoints without lexical features keep the hparams they had before the option existed
            del body["lexical"]
        if self.nli is None:  # likewise for NLI features
            del body["nli"]
        return body

    @property
    def extra_inputs(self) -> int:
        """How many pair features (lexical, then NLI) join the alignment's P/R/F1."""
        return len(self.lexical) + (len(NLI_FEATURES) if self.nli is not None else 0)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "RegressorConfig":
        raw = dict(raw)
        lora = raw.pop("lora", None)
        return cls(**raw, lora=LoraSettings(**lora) if lora else None)


__all__ = ["DEFAULT_LORA_TARGETS", "LoraSettings", "RegressorConfig"]
