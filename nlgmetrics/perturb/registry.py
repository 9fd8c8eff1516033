"""The registry: every perturbation by name, with its family, default levels and the context it needs.

A ``Perturbation`` is called like its function, ``p(text, rng, level, **context)``, and adds the guarantees
every caller relies on: level 0 returns the text untouched, a missing model or parse is a ``ValueError``
naming it, and a perturbation that cannot apply (or would leave nothing) raises ``NotApplicable``.

Context keys (pass only what the perturbation's ``needs`` lists; extra keys are ignored):
``doc`` spaCy Doc of the text, ``pool`` sentences of other samples, ``source`` the sample's source text,
``ngrams`` frequent corpus n-grams, ``mlm`` a masked_lm ``LoadedModel``, ``vocabulary`` words for random
spans, ``lexicon`` a ``perturb.Lexicon``. Optional knobs: ``keep_last`` (sentence switching on open-ended
text), ``injection_text``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nlgmetrics.perturb import attacks, consistency, fluency, phenomena, targeted
from nlgmetrics.perturb.bert_diverge import bert_diverge, bert_diverge_batch
from nlgmetrics.perturb.errors import NotApplicable

FAMILIES = ("fluency", "consistency", "targeted", "menli")
DOC, POOL, SOURCE, NGRAMS, MLM, VOCABULARY, LEXICON = "doc", "pool", "source", "ngrams", "mlm", "vocabulary", "lexicon"
CONTEXT_KEYS = frozenset({DOC, POOL, SOURCE, NGRAMS, MLM, VOCABULARY, LEXICON})
# Per-sample context is absent for some samples by nature (no source): the function refuses, not the registry.
_PER_SAMPLE_OPTIONAL = frozenset({SOURCE})


@dataclass(frozen=True)
class Perturbation:
    """A named noise: ``fn(text, rng, level, **context) -> str`` plus what the protocol needs to know."""

    name: str
    family: str
    fn: Callable[..., str]
    default_levels: tuple[float, ...]
    halve_noise_ratio: bool = False
    needs: frozenset[str] = frozenset()
    options: Mapping[str, Any] = field(default_factory=dict)
    batch_fn: Callable[..., list] | None = None
    menli_code: str | None = None

    @property
    def description(self) -> str:
        return (self.fn.__doc__ or "").strip().split("\n")[0]

    def _check(self, rng: Any, level: float, context: Mapping[str, Any]) -> None:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"{self.name}: rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not float(level) >= 0:
            raise ValueError(f"{self.name}: level must be >= 0, got {level}")
        missing = sorted(k for k in self.needs - _PER_SAMPLE_OPTIONAL if context.get(k) is None)
        if missing:
            raise ValueError(f"perturbation '{self.name}' needs context {', '.join(missing)}")

    def __call__(self, text: str, rng: np.random.Generator, level: float, **context: Any) -> str:
        if not isinstance(text, str):
            raise TypeError(f"{self.name}: text must be str, got {type(text).__name__}")
        self._check(rng, level, context)
        if level == 0:
            return text
        if not text.strip():
            raise NotApplicable("empty text")
        new = self.fn(text, rng, level, **self.options, **context)
        if not new.strip():
            raise NotApplicable("the perturbation would leave an empty text")
        return new

    def apply_batch(
        self,
        texts: Sequence[str],
        rngs: Sequence[np.random.Generator],
        level: float,
        contexts: Sequence[Mapping[str, Any]],
        shared: Mapping[str, Any] | None = None,
    ) -> list[str | NotApplicable]:
        """Perturb many texts; per-text refusals come back as ``NotApplicable`` values, not raised.

        ``contexts[i]`` holds per-text context (doc, source), ``shared`` what all texts share (mlm, pool...).
        Model-based noises use their batched implementation here: one model call per step for all texts.
        """
        shared = dict(shared or {})
        if len(texts) != len(rngs) or len(texts) != len(contexts):
            raise ValueError("apply_batch needs one generator and one context per text")
        if self.batch_fn is not None and level != 0:
            for rng in rngs:
                self._check(rng, level, shared)
            results: list[str | NotApplicable] = [NotApplicable("empty text") for _ in texts]
            live = [i for i, t in enumerate(texts) if t.strip()]
            produced = self.batch_fn([texts[i] for i in live], [rngs[i] for i in live], level, **self.options, **shared)
            for i, out in zip(live, produced):
                results[i] = out
            return results
        out: list[str | NotApplicable] = []
        for text, rng, ctx in zip(texts, rngs, contexts):
            try:
                out.append(self(text, rng, level, **{**shared, **ctx}))
            except NotApplicable as refusal:
                out.append(refusal)
        return out


def _registry() -> Mapping[str, Perturbation]:
    P = Perturbation
    doc, doc_lex = frozenset({DOC}), frozenset({DOC, LEXICON})
    entries = [
        # fluency (paper Table 16; levels from the authors' scripts, thinned to >= ~5% noise-ratio gaps)
        P("truncation", "fluency", fluency.truncation, (0.1, 0.2, 0.3, 0.4, 0.5)),
        P("article_removal", "fluency", fluency.article_removal, (0.5, 1.0)),
        P("preposition_removal", "fluency", fluency.preposition_removal, (0.4, 0.7, 1.0), needs=doc),
        P("stopword_removal", "fluency", fluency.stopword_removal, (0.2, 0.4, 0.6), needs=doc),
        P("verb_lemmatization", "fluency", fluency.verb_lemmatization, (0.5, 1.0), needs=doc),
        P("token_drop", "fluency", fluency.token_drop, (0.1, 0.2, 0.3, 0.4, 0.5)),
        P("repeated_token", "fluency", fluency.repeated_token, (0.1, 0.2, 0.3, 0.4, 0.5)),
        P("local_swap", "fluency", fluency.local_swap, (0.05, 0.15, 0.3, 0.6), halve_noise_ratio=True),
        P("middle_swap", "fluency", fluency.middle_swap, (0.5, 1.0), halve_noise_ratio=True, needs=doc),
        P("noised_punctuation", "fluency", fluency.noised_punctuation, (0.5, 1.0)),
        # consistency
        P("sentence_switching", "consistency", consistency.sentence_switching, (1, 2), True, doc),
        P(
            "sentence_replacement",
            "consistency",
            consistency.sentence_replacement,
            (1, 2),
            needs=frozenset({DOC, POOL}),
        ),
        P("negation", "consistency", consistency.negation, (0.5, 1.0), needs=doc),
        P("generic_named_entity", "consistency", consistency.generic_named_entity, (0.5, 1.0), needs=doc),
        P("ne_switching", "consistency", consistency.ne_switching, (1, 2), True, doc),
        P("verb_switching", "consistency", consistency.verb_switching, (1, 2), True, doc),
        P("noun_switching", "consistency", consistency.noun_switching, (1, 2), True, doc),
        P(
            "bert_diverge",
            "consistency",
            bert_diverge,
            (0.1, 0.2, 0.3, 0.4),
            needs=frozenset({MLM}),
            batch_fn=bert_diverge_batch,
        ),
        # targeted
        P("injection", "targeted", targeted.injection, (1,)),
        P("frequent_ngram", "targeted", targeted.frequent_ngram, (1.0,), needs=frozenset({NGRAMS})),
        P("copy_source", "targeted", targeted.copy_source, (1,), needs=frozenset({SOURCE})),
        P("repetition", "targeted", targeted.repetition, (5, 10, 20)),
        # MARS robustness attacks (Liu et al. 2021, Table 4): 50% of tokens reordered, a context sentence copied
        P("reorder", "targeted", attacks.reorder, (0.5,)),
        P("context_sentence", "targeted", attacks.context_sentence, (1,), needs=frozenset({SOURCE})),
        # MENLI phenomena (error codes of the MENLI adversarial data)
        P("menli_addition", "menli", phenomena.addition, (1,), needs=doc_lex, menli_code="add"),
        P("menli_omission", "menli", phenomena.omission, (0.1,), menli_code="drop"),
        P("menli_noun_mismatch", "menli", phenomena.noun_mismatch, (1,), needs=doc_lex, menli_code="word_NN"),
        P("menli_verb_mismatch", "menli", phenomena.verb_mismatch, (1,), needs=doc_lex, menli_code="word_VB"),
        P("menli_adjective_mismatch", "menli", phenomena.adjective_mismatch, (1,), needs=doc_lex, menli_code="word_JJ"),
        P("menli_negation", "menli", phenomena.negation_flip, (1,), needs=doc, menli_code="neg"),
        P("menli_number", "menli", phenomena.number_swap, (1,), needs=doc, menli_code="num"),
        P("menli_pronoun", "menli", phenomena.pronoun_swap, (1,), needs=doc, menli_code="pron"),
        P("menli_name", "menli", phenomena.name_swap, (1,), needs=doc_lex, menli_code="name"),
        P("menli_jumbling", "menli", phenomena.jumbling, (1,), halve_noise_ratio=True, menli_code="jumble"),
        P("menli_typo", "menli", phenomena.typo, (1,), menli_code="typo"),
        P(
            "menli_subject_verb",
            "menli",
            phenomena.subject_verb_disagreement,
            (1,),
            needs=doc,
            menli_code="subject_verb_dis",
        ),
    ]
    for position in targeted.POSITIONS:
        entries.append(
            P(
                f"positioned_shuffle_{position}",
                "targeted",
                targeted.positioned_error,
                (10,),
                True,
                options=MappingProxyType({"position": position, "mode": "shuffle"}),
            )
        )
        entries.append(
            P(
                f"positioned_random_{position}",
                "targeted",
                targeted.positioned_error,
                (10,),
                needs=frozenset({VOCABULARY}),
                options=MappingProxyType({"position": position, "mode": "random"}),
            )
        )
    return MappingProxyType({p.name: p for p in entries})


PERTURBATIONS: Mapping[str, Perturbation] = _registry()
MENLI_CODES: Mapping[str, str] = MappingProxyType(
    {p.menli_code: p.name for p in PERTURBATIONS.values() if p.menli_code}
)


def get_perturbation(name: str) -> Perturbation:
    """The registered perturbation ``name`` (a clear error lists the valid names)."""
    try:
        return PERTURBATIONS[name]
    except KeyError:
        raise KeyError(f"unknown perturbation {name!r}; known: {', '.join(sorted(PERTURBATIONS))}") from None


def perturbations_in(family: str) -> list[str]:
    """Names of the registered perturbations of one family, in registry order."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")
    return [name for name, p in PERTURBATIONS.items() if p.family == family]
