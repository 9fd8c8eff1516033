"""The MARS pipeline behind one object: mask, augment (cached), encode, score; plus its signature.

``build(config)`` is what ``evaluate.py`` calls. Models load lazily on first use (never at import or
construction), augmented references come from the on-disk cache when possible, and the signature names the
metric, every model (spec + weight hash), the config hash and the package version, so two MARS numbers are
compared only when they are comparable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

from mars.cache import AugmentationCache
from mars.config import MARSConfig, load_config, stable_hash
from mars.functional import mars_scores
from mars.template import Template
from nlgmetrics.metaeval.scorer import toolkit_version
from nlgmetrics.signature import Signature

package_version = toolkit_version  # one version lookup for every signature of the toolkit


def template_seed(seed: int, reference: str, context: str, ratio: float) -> int:
    """Seed of one template's sampling: depends only on the template's identity, never on the batch."""
    digest = hashlib.sha256(f"{seed}|{ratio:.6f}|{context}|{reference}".encode("utf-8")).hexdigest()
    return int(digest[:15], 16)


def _check_inputs(hyps: Sequence[Any] | None, refs: Sequence[Any], srcs: Sequence[Any] | None) -> None:
    """The toolkit's input policy (``nlgmetrics.inputs``); ``hyps`` may be None when only augmenting."""
    from nlgmetrics.inputs import check_pairs, check_references, check_same_length, check_sources

    if hyps is None:
        check_same_length(refs=check_references("refs", refs), srcs=check_sources("srcs", srcs))
    else:
        check_pairs(hyps, refs, srcs)


def single_references(refs: Sequence[Any]) -> list[Any]:
    """One human reference per sample: a string, or a one-element list/tuple (the multi-reference shape).

    ``evaluate.py correlate`` and other toolkit callers pass every sample's references as a list; MARS augments
    exactly one human reference (the paper's setting), so a longer list is refused instead of silently using
    its first element.
    """
    if refs is None or isinstance(refs, (str, bytes)):
        from nlgmetrics.inputs import InputError

        got = "None" if refs is None else "one string"
        raise InputError(f"refs: expected a list (one reference per sample), got {got}")
    out = []
    for i, item in enumerate(refs):
        if isinstance(item, (list, tuple)):
            if len(item) != 1:
                raise ValueError(f"refs[{i}] has {len(item)} references; MARS takes exactly one per sample")
            item = item[0]
        out.append(item)
    return out


class MARSScorer:
    """MARS with one fixed config: ``score(hyps, refs, srcs)`` -> per-sample scores."""

    name = "mars"  # the Scorer protocol's name: protocols keep this object (and its signature) as is

    def __init__(self, config: MARSConfig) -> None:
        self.config = config
        self._models: dict[str, Any] = {}
        self._cache: AugmentationCache | None = None

    # -- lazily loaded resources --------------------------------------------------------------------------------
    def _get(self, name: str) -> Any:
        if name not in self._models:
            from nlgmetrics.modelroles import load_model, load_spacy

            m = self.config.models
            if name == "spacy":
                self._models[name] = load_spacy(m.spacy)
            elif name == "idf":
                from mars.idf import load_idf

                self._models[name] = load_idf(self.config.masking.idf_table)
            elif name == "causal_lm":
                self._models[name] = load_model("causal_lm", m.causal_lm, device=self.config.device)
            elif name == "masked_lm":
                self._models[name] = load_model("masked_lm", m.masked_lm, device=self.config.device)
            elif name == "encoder":
                self._models[name] = load_model("encoder", m.encoder, device=self.config.device)
            elif name == "augmenter":
                if self.config.augmenter == "naive":
                    from mars.naive import MaskedLMFiller

                    self._models[name] = MaskedLMFiller(self._get("masked_lm"), max_length=self.config.score.max_length)
                else:
                    from mars.cloze import ClozeAugmenter

                    self._models[name] = ClozeAugmenter(self._get("causal_lm"), self.config.cloze, self.config.planning)
            else:  # pragma: no cover - internal names only
                raise KeyError(name)
        return self._models[name]

    def _model_hash(self, role: str, spec: str | None) -> str:
        from nlgmetrics.modelroles import fingerprint, resolve

        if spec is None:
            return "none"
        loaded = self._models.get(role)
        if loaded is not None and hasattr(loaded, "hash"):
            return loaded.hash
        return fingerprint(resolve(role, spec).location)

    def augmentation_hash(self) -> str:
        """Hash of everything that changes augmented references, including model weights and the idf table."""
        m = self.config.models
        payload = dict(self.config.augmentation_dict())
        payload["idf"] = self._get("idf").digest()
        if self.config.augmenter == "naive":
            payload["masked_lm_hash"] = self._model_hash("masked_lm", m.masked_lm)
        else:
            payload["causal_lm_hash"] = self._model_hash("causal_lm", m.causal_lm)
        return stable_hash(payload, 16)

    @property
    def cache(self) -> AugmentationCache:
        if self._cache is None:
            self._cache = AugmentationCache(self.config.cache_dir, f"mars-{self.augmentation_hash()}")
        return self._cache

    # -- pipeline -----------------------------------------------------------------------------------------------
    def _contexts(self, refs: Sequence[str], srcs: Sequence[str | None] | None) -> list[str]:
        if not self.config.use_context or srcs is None:
            return [""] * len(refs)
        return [s or "" for s in srcs]

    def templates(self, refs: Sequence[str], srcs: Sequence[str | None] | None = None) -> list[list[Template]]:
        """Masking templates per reference, one per configured ratio (ratio 0 = the reference)."""
        from mars.masking import analyse, build_templates

        _check_inputs(None, refs, srcs)
        contexts = self._contexts(refs, srcs)
        nlp, idf = self._get("spacy"), self._get("idf")
        analysed = analyse(nlp, list(refs))
        context_words = {c: analyse(nlp, [c], tag=False)[0].words if c else () for c in set(contexts)}
        return [
            build_templates(a, context_words[c], self.config.masking.ratios, idf, self.config.masking)
            for a, c in zip(analysed, contexts)
        ]

    def augment(self, refs: Sequence[str], srcs: Sequence[str | None] | None = None) -> list[list[str]]:
        """[human reference, augmented reference per nonzero ratio] for each reference, in ratio order."""
        from mars.cloze import ClozeJob

        _check_inputs(None, refs, srcs)
        contexts = self._contexts(refs, srcs)
        ratios = self.config.masking.ratios
        nonzero = [r for r in ratios if r > 0]
        cache = self.cache
        pairs = list(dict.fromkeys(zip(refs, contexts)))
        missing = [p for p in pairs if any(cache.get(p[0], p[1], r) is None for r in nonzero)]
        if missing:
            templates = self.templates([p[0] for p in missing], [p[1] for p in missing])
            jobs_of: list[list[tuple[float, ClozeJob]]] = []
            for (reference, context), per_ratio in zip(missing, templates):
                jobs = [
                    (t.ratio, ClozeJob(t, context, template_seed(self.config.seed, reference, context, t.ratio)))
                    for t in per_ratio
                    if t.ratio > 0 and cache.get(reference, context, t.ratio) is None
                ]
                jobs_of.append(jobs)
            self._generate(missing, jobs_of)
        out = []
        for reference, context in zip(refs, contexts):
            row = [reference]
            for ratio in nonzero:
                text = cache.get(reference, context, ratio)
                assert text is not None
                row.append(text if text.strip() else reference)
            out.append(row if ratios[0] == 0 else row[1:])
        return out

    def _generate(self, pairs: list[tuple[str, str]], jobs_of: list[list[tuple[float, Any]]]) -> None:
        """Run the augmenter and cache each group as soon as it is done (a long run can be resumed).

        Causal-LM rows of ``lockstep_references`` references (longest first) decode together.
        """
        from tqdm.auto import tqdm

        augmenter = self._get("augmenter")
        order = sorted(range(len(pairs)), key=lambda i: (-len(pairs[i][0]), i))
        size = self.config.cloze.lockstep_references if self.config.augmenter != "naive" else 64
        chunks = [order[k : k + size] for k in range(0, len(order), size)]
        for chunk in tqdm(chunks, desc="MARS augment", disable=not self.config.progress, unit="group"):
            jobs = [job for i in chunk for _, job in jobs_of[i]]
            if self.config.augmenter == "naive":
                texts = iter(augmenter.fill(jobs))
            else:
                texts = iter(augmenter.augment([jobs])[0])
            items = []
            for i in chunk:
                reference, context = pairs[i]
                items.extend((reference, context, ratio, next(texts)) for ratio, _ in jobs_of[i])
            self.cache.put(items)

    def score(self, hyps: Sequence[str], refs: Sequence[str], srcs: Sequence[str | None] | None = None) -> list[float]:
        """Per-sample MARS; ``srcs`` is the generation context (e.g. the story so far), or None.

        Each reference is a string or a one-element list (see ``single_references``).
        """
        refs = single_references(refs)
        _check_inputs(hyps, refs, srcs)
        if not hyps:
            return []
        reference_sets = self.augment(refs, srcs)
        s = self.config.score
        return mars_scores(
            self._get("encoder"),
            list(hyps),
            reference_sets,
            q=s.q,
            batch_size=s.batch_size,
            max_length=s.max_length,
            progress=self.config.progress,
        ).tolist()

    def __call__(
        self, hyps: Sequence[str], refs: Sequence[str], srcs: Sequence[str | None] | None = None
    ) -> list[float]:
        return self.score(hyps, refs, srcs)

    def config_hash(self) -> str:
        return stable_hash(self.config.scoring_dict())

    def signature(self) -> str:
        """sacrebleu-style: metric|models with weight hashes|idf|ratios|q|variant|config hash|version."""
        c, m = self.config, self.config.models
        if c.augmenter == "naive":
            generator = f"mlm:{m.masked_lm}@{self._model_hash('masked_lm', m.masked_lm)}"
        else:
            generator = f"lm:{m.causal_lm}@{self._model_hash('causal_lm', m.causal_lm)}"
        variant = c.augmenter
        if c.augmenter == "self_planning" and not c.planning.enabled:
            variant += "-noplan"
        if not c.use_context:
            variant += "-noctx"
        ratios = ",".join(f"{r:g}" for r in c.masking.ratios)
        parts = (
            generator,
            ("enc", f"{m.encoder}@{self._model_hash('encoder', m.encoder)}"),
            ("spacy", m.spacy),
            ("idf", self._get("idf").digest()),
            ("ratios", ratios),
            ("q", f"{c.score.q:g}"),
            ("aug", variant),
            ("seed", c.seed),
            ("cfg", self.config_hash()),
        )
        return str(Signature("MARS", parts))


def build(
    config: str | Path | Mapping[str, Any] | MARSConfig | None = None,
    *,
    ablation: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> MARSScorer:
    """A scorer from a YAML path / dict / config, an optional ablation preset and overrides.

    Overrides use dotted or double-underscore keys: ``build(cfg, planning__enabled=False)`` or
    ``build(cfg, overrides={"score.q": 0.5})``. Ablations: full, no_planning, no_context,
    no_planning_no_context, naive.
    """
    merged = dict(overrides or {})
    merged.update(kwargs)
    return MARSScorer(load_config(config, merged, ablation))
