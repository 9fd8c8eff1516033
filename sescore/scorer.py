"""SEScore in the toolkit's Scorer shape: checkpoint folders in, ``score(hyps, refs)`` and a signature out.

``evaluate.py``, the protocols and the stress tests use this object; it loads its checkpoints on first use (never at
import or construction) and scores through ``sescore.functional``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from nlgmetrics.language import UNDETERMINED, LanguageError, check_lang, name, resolve_lang
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision
from nlgmetrics.signature import Signature
from sescore.functional import ensemble_scores
from sescore.regressor.checkpoint import checkpoint_hash, checkpoint_languages, ensemble_members, load_checkpoint
from sescore.regressor.model import SEScoreRegressor
from sescore.shipped import DEFAULT_NAME, default_for
from sescore.shipped import SHIPPED as _CHECKPOINTS

# The shipped default: the v2 recipe on the MPNet encoder (packaged:mpnet), weights half-way from the run's own
# initialisation, stored as float16; it passed a rule written before it was scored on the dev mix's select half, then
# its report half (README, "SEScore").
DEFAULT_CHECKPOINT = str(_CHECKPOINTS / DEFAULT_NAME)
# The default before mpnet-v2: an ensemble folder of three v2 runs on MiniLM (training seeds 13-15), each half-way
# from its own initialisation. About half of mpnet-v2's CPU time; MENLI's packaged three-way mix was fitted
# with it.
MINILM_V2_CHECKPOINT = str(_CHECKPOINTS / "minilm-v2")
# The first shipped model (`train.py fit --config configs/sescore/fit_offline.yaml`), the default until minilm-v2.
V1_CHECKPOINT = str(_CHECKPOINTS / "minilm-news")


def checkpoint_folders(checkpoint: str | Path | Sequence[str | Path]) -> list[str]:
    """The model folders a ``checkpoint`` argument stands for.

    Args:
        checkpoint: one folder (a str or Path) or several; an ensemble folder (``ensemble.yaml``) stands for its
            members.

    Returns:
        The member folders in order; an empty list names the problem.
    """
    folders = [checkpoint] if isinstance(checkpoint, (str, Path)) else list(checkpoint)
    if not folders:
        raise ValueError("SEScore needs a checkpoint folder")
    out = []
    for folder in folders:
        members = ensemble_members(folder)
        if members is None:
            out.append(str(folder))
        else:
            out.extend(str(f) for f in members)
    return out


def covered_language(folders: Sequence[str], lang: str | None, refs: Sequence, found: str | None = None) -> str:
    """The references' language (``lang`` when given, else identified), checked against every checkpoint's
    declared languages; ``"und"`` when it cannot be identified (then nothing is refused).

    Raises:
        LanguageError: a checkpoint does not cover it; the message names the shipped checkpoints that do and the
            option that overrides identification.
    """
    found = found or resolve_lang(lang, refs)  # a caller that identified it already passes it
    if found == UNDETERMINED:
        return found
    for folder in folders:
        covered = checkpoint_languages(folder)
        if found in covered:
            continue
        others = [
            f.name
            for f in sorted(_CHECKPOINTS.iterdir())
            if (f / "hparams.yaml").is_file() and found in checkpoint_languages(f)
        ]
        how = "identified from the references" if lang is None else "given by --lang"
        instead = (
            f"Use --checkpoint {' or '.join(others)}"
            if others
            else "No shipped checkpoint covers it: train one on your sentences (docs/guides/sescore-training.md)"
        )
        raise LanguageError(
            f"sescore: the references are {name(found)}, {how}; checkpoint {Path(folder).name} covers "
            f"{', '.join(covered)}. {instead}; or pass --lang {covered[0]} (lang='{covered[0]}') to score them as "
            f"{name(covered[0])} anyway"
        )
    return found


@dataclass
class SEScoreScorer:
    """SEScore in the common Scorer shape (``evaluate.py``, the protocols, stress tests).

    ``checkpoint`` is one exported folder, or several: then the score is the mean of theirs (``ensemble_scores``).
    ``precision``: the encoders' forward pass, float32, bfloat16 or int8 (``nlgmetrics.modelroles.precision``).
    ``lang``: the references' language (ISO 639-1); None identifies it from the references of each ``score`` call.
    Text in a language the checkpoints do not declare is refused (:class:`~nlgmetrics.language.LanguageError`).
    ``follow_language`` (no checkpoint was named): each call scores with the shipped checkpoint of its references'
    language (``sescore.shipped.LANGUAGE_DEFAULTS``: German with ``me5-de``), English and unknown text with the
    default; the signature names the checkpoint that scored.
    """

    checkpoint: str | Sequence[str] = DEFAULT_CHECKPOINT
    batch_size: int = 64
    device: str | None = None
    name: str = "sescore"
    progress: bool = False
    _regressors: Any = field(default=None, repr=False)
    precision: str = DEFAULT_PRECISION
    lang: str | None = None
    follow_language: bool = False

    def __post_init__(self) -> None:
        check_precision(self.precision)
        self.lang = check_lang(self.lang)
        if self.follow_language:
            self._use(default_for(self.lang))

    def _use(self, folder: str) -> None:
        if self.checkpoint != folder:
            self.checkpoint, self._regressors = folder, None

    def check_language(self, refs: Sequence) -> str:
        """The references' language, checked against the checkpoints (:func:`covered_language`); with
        ``follow_language`` the checkpoint is first switched to that language's shipped one."""
        found = resolve_lang(self.lang, refs)
        if self.follow_language:
            self._use(default_for(found))
        return covered_language(self.checkpoints, self.lang, refs, found)

    @property
    def checkpoints(self) -> list[str]:
        return checkpoint_folders(self.checkpoint)

    @property
    def regressors(self) -> list[SEScoreRegressor]:
        if self._regressors is None:
            from nlgmetrics.modelroles import pick_device

            device = pick_device(self.device)
            self._regressors = [load_checkpoint(folder, device) for folder in self.checkpoints]
        return self._regressors

    @property
    def regressor(self) -> SEScoreRegressor:
        """The first (for one checkpoint: the only) loaded model."""
        return self.regressors[0]

    def score(self, hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None = None) -> list[float]:
        """Per-sample scores (``srcs`` is accepted for the Scorer shape and ignored: SEScore compares to references).

        Args:
            hyps: the hypotheses.
            refs: one reference per hypothesis, or a list of references per hypothesis (the best one counts).
            srcs: unused.

        Returns:
            One float per hypothesis, in input order.
        """
        if refs is None:
            raise ValueError("SEScore needs references")
        self.check_language(refs)
        # one checkpoint: the mean of one score is that score, bit for bit
        return [
            float(s)
            for s in ensemble_scores(self.regressors, hyps, refs, self.batch_size, self.progress, self.precision)
        ]

    def signature(self) -> str:
        parts = []
        for folder, r in zip(self.checkpoints, self.regressors):
            parts.append(
                f"ckpt:{Path(folder).name}@{checkpoint_hash(folder)}"
                f"|encoder:{r.config.encoder}@{r.encoder_hash}|scale:{r.config.output_scale}"
            )
        combined = "|".join(parts) if len(parts) == 1 else f"ensemble:mean[{';'.join(parts)}]"
        lang = self.lang or "auto"  # stable before and after scoring: score caches are keyed by it
        return str(Signature(self.name, (combined, ("refs", "max"), ("lang", lang)), precision=self.precision))


__all__ = [
    "DEFAULT_CHECKPOINT",
    "MINILM_V2_CHECKPOINT",
    "V1_CHECKPOINT",
    "SEScoreScorer",
    "checkpoint_folders",
    "covered_language",
]
