"""SEScore's quality predictor: encoder -> mean-pooled sentence vectors -> RUSE/COMET features -> FFN -> score.

Pure PyTorch (no Lightning) so that training, export, the scorer and the torchmetrics class share one forward.
Candidate and reference are encoded by the same encoder; the head sees [c; r; c*r; |c-r|]. The released SEScore
v1 mixed all hidden layers with learned softmax weights before pooling; ``layer_mix`` turns that on.

``alignment`` adds token-level evidence that mean pooling smears away: BERTScore-style greedy matching of the
candidate's and reference's (layer-mixed) token states gives precision, recall and F1, which join the head's input
and a linear skip to the output initialised as F1. A synthetic edit touches a few tokens; the skip starts the
model where BERTScore on the same encoder is, and training learns how much each mismatch costs.

``lexical`` adds text-level surface features (chrF) to the head's input and to that skip (starting at weight 0).
Embeddings forgive a wrong name or number that a character n-gram overlap does not; trained on synthetic triples
alone, the head learns how much of each signal a given edit deserves (a learned combination, no human labels).

``nli`` adds an NLI model's view of the pair the same way: P(entailment) and P(contradiction) with the reference as
premise and with the candidate as premise (four inputs). A negation or a swapped role keeps almost every token and
character of a sentence, so alignment and chrF barely move, while entailment does; MENLI's finding is that NLI
and similarity metrics fail on different inputs. The NLI model is frozen and not stored in the checkpoint: the
checkpoint names it (and the hash of its weights, checked on load), and its probabilities of a pair are computed
once per distinct pair and remembered (``nlgmetrics.nli.cache.PairCache``), so repeated dev checks cost nothing.

The configuration lives in ``sescore.regressor.config``, the pair features and the NLI memo in
``sescore.regressor.features``, the tensor building blocks in ``sescore.regressor.layers``; their names are
exported here too. The encoder is always loaded fresh from its folder (never through the shared ``modelroles``
cache): training changes its weights and a checkpoint loads its own weights into it, which must not leak into
other metrics.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from nlgmetrics.modelroles import fingerprint, load_fresh
from nlgmetrics.modelroles.batching import ROW_MULTIPLE, bucketed_batches, filled_rows, token_lengths
from nlgmetrics.modelroles.lora import wrap_with_lora
from nlgmetrics.truncation import note_batch
from sescore.regressor.config import DEFAULT_LORA_TARGETS, LoraSettings, RegressorConfig
from sescore.regressor.features import (
    LEXICAL_FEATURES,
    NLI_FEATURES,
    lexical_features,
    memoised_nli,
    nli_features,
)
from sescore.regressor.layers import ScalarMix, TextStates, build_head, greedy_alignment, masked_mean, pair_features


class SEScoreRegressor(nn.Module):
    """Encoder + optional layer mix + head. ``tokenizer`` is kept alongside (it is not a module)."""

    def __init__(self, config: RegressorConfig, encoder: nn.Module, tokenizer: Any, encoder_hash: str = "") -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.encoder_hash = encoder_hash
        base_config = encoder.config
        self.num_layers = int(base_config.num_hidden_layers)
        self.hidden_size = int(base_config.hidden_size)
        self.layer_mix = ScalarMix(self.num_layers + 1) if config.layer_mix else None
        extra = (3 if config.alignment else 0) + config.extra_inputs
        self.head = build_head(4 * self.hidden_size + extra, config.hidden_sizes, config.dropout)
        self.align_skip: nn.Linear | None = None
        if config.alignment:
            self.align_skip = nn.Linear(3 + config.extra_inputs, 1)
            with torch.no_grad():  # start exactly as F1 of the greedy alignment; the head adds what it learns
                start = torch.zeros(1, 3 + config.extra_inputs)
                start[0, 2] = 1.0
                self.align_skip.weight.copy_(start)
                self.align_skip.bias.zero_()
                self.head[-1].weight.zero_()
                self.head[-1].bias.zero_()

    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    @property
    def nli_hash(self) -> str | None:
        """Hash of the NLI weights ``config.nli`` resolves to (None without NLI features); stored on export and
        checked on load, as the encoder's is."""
        if self.config.nli is None:
            return None
        from nlgmetrics.modelroles import resolve

        return fingerprint(resolve("nli", self.config.nli).location)

    def nli_model(self) -> Any:
        """The NLI model of ``config.nli`` behind a memo of pair probabilities (loaded on first call), kept in a
        file when ``$NLGMETRICS_NLI_PAIRS`` names a folder (``nli_pair_file``)."""
        if self.config.nli is None:
            raise ValueError("this regressor has no NLI features (config.nli is not set)")
        return memoised_nli(self.config.nli, self.device.type)  # not a submodule: never trained or saved

    def pair_inputs(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray | None:
        """[N, config.extra_inputs] float32 pair features (lexical, then NLI) of pair i, or None when the config
        names none. Deterministic per pair: what else is in the call does not change a row."""
        if not self.config.extra_inputs:
            return None
        parts = []
        if self.config.lexical:
            parts.append(lexical_features(self.config.lexical, candidates, references))
        if self.config.nli is not None:
            parts.append(nli_features(self.nli_model(), candidates, references))
        return np.concatenate(parts, axis=1)

    def tokenize(self, texts: Sequence[str], pad_to: int | None = None) -> dict[str, torch.Tensor]:
        """Token tensors; ``pad_to`` pads every row to that length (scoring: see ``bucketed_batches``)."""
        encoded = self.tokenizer(
            list(texts),
            padding="max_length" if pad_to else True,
            truncation=True,
            max_length=pad_to or self.config.max_length,
            return_tensors="pt",
            return_special_tokens_mask=self.config.alignment,
        )
        note_batch(
            "SEScore texts",
            self.tokenizer,
            encoded["attention_mask"].sum(1).tolist(),
            self.config.max_length,
            list(texts),
        )
        return {k: v.to(self.device) for k, v in encoded.items()}

    def encode(self, encoded: dict[str, torch.Tensor], encoder_grad: bool = True) -> TextStates:
        """Pooled vectors (and, with alignment, token states); ``encoder_grad=False`` builds no encoder graph."""
        encoded = dict(encoded)
        special = encoded.pop("special_tokens_mask", None)
        with torch.set_grad_enabled(encoder_grad and torch.is_grad_enabled()):
            output = self.encoder(**encoded, output_hidden_states=self.layer_mix is not None)
        # float32 from here on whatever the encoder ran in (bfloat16 scoring: nlgmetrics.modelroles.precision)
        if self.layer_mix is not None:
            hidden = self.layer_mix([states.float() for states in output.hidden_states])
        else:
            hidden = output.last_hidden_state.float()
        pooled = masked_mean(hidden, encoded["attention_mask"])
        if not self.config.alignment:
            return TextStates(pooled)
        mask = encoded["attention_mask"].bool()
        if special is not None:
            mask = mask & ~special.bool()
        return TextStates(pooled, torch.nn.functional.normalize(hidden, dim=-1), mask)

    def predict_states(self, cand: TextStates, ref: TextStates, extra: torch.Tensor | None = None) -> torch.Tensor:
        """Scores [B] from encoded candidates and references (row i with row i); ``extra`` [B, k]: the pairs'
        ``pair_inputs`` when the config names any."""
        features = pair_features(cand.pooled, ref.pooled)
        if self.align_skip is None:
            return self.head(features).squeeze(-1)
        if cand.tokens is None or ref.tokens is None:
            raise ValueError("this regressor uses token alignment: encode with token states")
        align = greedy_alignment(cand.tokens, cand.mask, ref.tokens, ref.mask).to(features.dtype)
        width = self.config.extra_inputs
        if width:
            if extra is None or extra.shape != (len(features), width):
                names = [*self.config.lexical, *(NLI_FEATURES if self.config.nli else ())]
                raise ValueError(
                    f"this regressor reads the pair features {names}: pass its pair_inputs as a "
                    f"[{len(features)}, {width}] tensor"
                )
            align = torch.cat([align, extra.to(device=features.device, dtype=features.dtype)], dim=-1)
        return (self.head(torch.cat([features, align], dim=-1)) + self.align_skip(align)).squeeze(-1)

    def forward(
        self, candidates: Sequence[str], references: Sequence[str], encoder_grad: bool = True, distinct: bool = False
    ) -> torch.Tensor:
        """Scores [B] for text pairs; both sides go through the encoder in one call (one padded batch).

        ``distinct`` encodes each distinct text of the batch once. For validation: a dev batch repeats each
        reference for every candidate of its item (the dev mix's select half is 8,720 pair texts but 1,712
        distinct ones), and the encoder is the cost. The padded length stays the same (the longest text is among
        the distinct ones), so scores match up to the last bits of a batch of another row count. Not for
        training: under dropout each copy of a text draws its own mask, and sharing one would change the recipe.
        """
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
        texts = [*candidates, *references]
        encoded = list(dict.fromkeys(texts)) if distinct else texts
        row = {text: i for i, text in enumerate(encoded)}
        states = self.encode(self.tokenize(encoded), encoder_grad)
        index = torch.as_tensor([row[t] for t in texts] if distinct else range(len(texts)), device=states.pooled.device)
        n = len(candidates)
        extra = self.pair_inputs(candidates, references)
        return self.predict_states(
            states.rows(index[:n]), states.rows(index[n:]), None if extra is None else torch.from_numpy(extra)
        )

    @torch.inference_mode()
    def encode_texts(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """[N, H] pooled vectors in input order and, with alignment, each text's unit-norm content-token states
        [T_i, H] (empty list otherwise); length-sorted batches, longest first, each text padded to its own bucket
        length so that its vector does not depend on the batch it was in."""
        from tqdm.auto import tqdm

        out: torch.Tensor | None = None
        tokens: list[torch.Tensor | None] = [None] * len(texts) if self.config.alignment else []
        lengths = token_lengths(self.tokenizer, texts, self.config.max_length) if len(texts) else []
        batches = bucketed_batches(lengths, batch_size, self.config.max_length)
        for batch, padded in tqdm(batches, desc="SEScore encode", unit="batch", disable=not progress):
            states = self.encode(self.tokenize([texts[i] for i in batch], pad_to=padded), encoder_grad=False)
            if out is None:
                out = torch.empty(
                    (len(texts), states.pooled.shape[-1]), dtype=states.pooled.dtype, device=states.pooled.device
                )
            out[torch.as_tensor(batch, device=states.pooled.device)] = states.pooled
            if states.tokens is not None:
                for row, i in enumerate(batch):
                    tokens[i] = states.tokens[row][states.mask[row]]
        if out is None:
            return torch.empty((0, self.hidden_size), device=self.device), []
        return out, tokens  # type: ignore[return-value]


def load_base_encoder(spec: str) -> tuple[nn.Module, Any, str]:
    """A fresh (uncached) float32 encoder, its tokenizer and weight hash for a role value; clear errors when
    unusable. The shared loader's options apply, so an fp16-stored base (me5-small) trains in float32."""
    encoder, tokenizer, resolved, _ = load_fresh("encoder", spec)
    return encoder, tokenizer, fingerprint(resolved.location)


def add_lora(encoder: nn.Module, lora: LoraSettings) -> nn.Module:
    """Wrap the encoder with peft LoRA; only the adapters stay trainable inside the encoder."""
    return wrap_with_lora(encoder, lora.r, lora.alpha, lora.dropout, lora.target_modules)


def build_regressor(config: RegressorConfig) -> SEScoreRegressor:
    """A trainable regressor: fresh encoder (LoRA-wrapped when asked), new layer mix and head.

    The pooler is frozen: SEScore pools the token states itself, and a parameter that never gets a gradient
    makes DDP stop with an "unused parameters" error.
    """
    encoder, tokenizer, encoder_hash = load_base_encoder(config.encoder)
    for name, parameter in encoder.named_parameters():
        if name.startswith("pooler."):
            parameter.requires_grad_(False)
    if config.lora is not None:
        encoder = add_lora(encoder, config.lora)
    encoder.train()  # from_pretrained returns eval mode; Lightning keeps the modes it finds
    return SEScoreRegressor(config, encoder, tokenizer, encoder_hash)


def _padded(
    tokens: Sequence[torch.Tensor], rows: np.ndarray, like: torch.Tensor, length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack the token states of ``rows`` into [B, T, H] with a boolean mask of real tokens (T = ``length``, or
    the longest of the rows)."""
    longest = length or max(1, max(len(tokens[i]) for i in rows))
    out = like.new_zeros((len(rows), longest, like.shape[-1]))
    mask = torch.zeros((len(rows), longest), dtype=torch.bool, device=like.device)
    for b, i in enumerate(rows):
        out[b, : len(tokens[i])] = tokens[i]
        mask[b, : len(tokens[i])] = True
    return out, mask


def _pair_batches(
    cand_rows: np.ndarray, ref_rows: np.ndarray, tokens: Sequence[torch.Tensor] | None, batch_size: int
) -> list[tuple[np.ndarray, tuple[int, int] | None]]:
    """Pair batches whose shapes depend only on the pairs in them: with alignment, pairs are grouped by the
    bucketed token counts of both sides and padded to exactly those (see ``bucketed_batches``)."""
    from nlgmetrics.modelroles.batching import bucket_length

    if tokens is None:
        order = np.arange(len(cand_rows))
        return [(order[s : s + batch_size], None) for s in range(0, len(order), batch_size)]
    cap = 1 << 30
    keys = [
        (bucket_length(len(tokens[c]), cap), bucket_length(len(tokens[r]), cap)) for c, r in zip(cand_rows, ref_rows)
    ]
    groups: dict[tuple[int, int], list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    out = []
    for key in sorted(groups, key=lambda k: (-(k[0] + k[1]), k)):
        members = np.asarray(groups[key], dtype=np.int64)
        out.extend((members[s : s + batch_size], key) for s in range(0, len(members), batch_size))
    return out


def scores_from_vectors(
    regressor: SEScoreRegressor,
    vectors: torch.Tensor,
    cand_rows: np.ndarray,
    ref_rows: np.ndarray,
    batch_size: int = 1024,
    tokens: Sequence[torch.Tensor] | None = None,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """Head scores for pairs given by row indices into ``vectors`` (and ``tokens`` when the regressor aligns
    tokens, ``extra`` [P, k] rows of ``pair_inputs`` per pair when it reads any); the head is cheap, batches keep
    memory flat.

    A pair's score must not depend on which other pairs share its call (chunked torchmetrics updates, DDP
    shards, batch sizes): token states are padded to bucket lengths fixed by the pair, and every batch is
    filled up to a multiple of ``ROW_MULTIPLE`` rows (repeating its first pair; see ``filled_rows``), because
    few-row products take kernels that round differently from the many-row one. The head and the alignment run in
    float32 even inside a caller's bfloat16 autocast (a training loop's ``bf16-mixed``): rounded alignment F1s
    would tie close candidates.
    """
    out = np.zeros(len(cand_rows), dtype=np.float64)
    aligned = regressor.config.alignment
    if aligned and tokens is None:
        raise ValueError("this regressor uses token alignment: pass the token states from encode_texts")
    if regressor.config.extra_inputs and (extra is None or len(extra) != len(cand_rows)):
        raise ValueError("this regressor reads pair features: pass pair_inputs of every pair")
    if aligned:
        batch_size = min(batch_size, 128)
    batch_size = max(ROW_MULTIPLE, batch_size - batch_size % ROW_MULTIPLE)
    with torch.inference_mode(), torch.autocast(vectors.device.type, enabled=False):
        for pick, lengths in _pair_batches(cand_rows, ref_rows, tokens if aligned else None, batch_size):
            padded_pick = filled_rows(pick)
            cr, rr = cand_rows[padded_pick], ref_rows[padded_pick]
            c = torch.as_tensor(cr, device=vectors.device)
            r = torch.as_tensor(rr, device=vectors.device)
            cand, ref = TextStates(vectors[c]), TextStates(vectors[r])
            if aligned:
                cand.tokens, cand.mask = _padded(tokens, cr, vectors, lengths[0])
                ref.tokens, ref.mask = _padded(tokens, rr, vectors, lengths[1])
            rows = None if extra is None else torch.as_tensor(extra[padded_pick], device=vectors.device)
            out[pick] = regressor.predict_states(cand, ref, rows).double().cpu().numpy()[: len(pick)]
    return out


__all__ = [
    "DEFAULT_LORA_TARGETS",
    "LoraSettings",
    "RegressorConfig",
    "ScalarMix",
    "SEScoreRegressor",
    "add_lora",
    "TextStates",
    "build_head",
    "build_regressor",
    "greedy_alignment",
    "LEXICAL_FEATURES",
    "lexical_features",
    "load_base_encoder",
    "NLI_FEATURES",
    "nli_features",
    "masked_mean",
    "pair_features",
    "scores_from_vectors",
]
