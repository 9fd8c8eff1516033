"""``sescore.SEScore``: a torchmetrics Metric for use inside training/validation loops.

The shared contract (``nlgmetrics.textmetric``): ``update(preds, target)``, float64, mean or ``per_sample``,
``nan`` before any update, per-sample ``cat`` state that syncs across DDP processes (empty ranks included), and
pickling without the regressor. The regressor is held outside the module tree: it must not appear in the host
LightningModule's parameters, optimizer or state_dict. Scores come from ``sescore.functional.ensemble_scores``.
"""

from __future__ import annotations

from typing import Any, Sequence

from nlgmetrics.inputs import InputError
from nlgmetrics.language import check_lang, resolve_lang
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision
from nlgmetrics.textmetric import TextScoreMetric
from sescore.functional import ensemble_scores
from sescore.scorer import checkpoint_folders, covered_language
from sescore.shipped import default_for


class SEScore(TextScoreMetric):
    """Mean SEScore of all updates, or every per-sample score with ``per_sample=True`` (in update order).

    ``checkpoint`` is a folder of ``export_checkpoint`` (default: the shipped one of the references' language,
    ``mpnet-v2`` for English, ``me5-de`` for German), or several: then each sample's
    score is the mean of theirs (``ensemble_scores``); ``regressor`` passes a loaded model (or a list) instead (then
    ``checkpoint`` should name its folders, or the metric cannot reload after pickling). ``precision``: the
    encoders' forward pass, float32 or bfloat16 (``nlgmetrics.modelroles.precision``); inside a loop's own bfloat16
    autocast the forward runs in bfloat16 either way, the head and alignment in float32. ``lang``: the
    references' language (default: identified from each update's references); a language the checkpoints do not
    declare is refused (``nlgmetrics.language.LanguageError``), as in ``load_metric("sescore")``.
    """

    def __init__(
        self,
        checkpoint: str | Sequence[str] | None = None,
        batch_size: int = 64,
        per_sample: bool = False,
        regressor: Any = None,
        precision: str = DEFAULT_PRECISION,
        lang: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(per_sample=per_sample, **kwargs)
        self.precision = check_precision(precision)
        self.lang = check_lang(lang)
        # no checkpoint named: each update scores with the shipped checkpoint of its references' language
        self.follow_language = checkpoint is None and regressor is None
        self.checkpoint = default_for(self.lang) if self.follow_language else checkpoint
        self.batch_size = batch_size
        self._set_model(regressor)

    def _load_model(self) -> Any:
        if self.checkpoint is None:
            raise InputError(
                "SEScore was given a regressor object, which is not pickled; create the metric with "
                "checkpoint=FOLDER to reload it after unpickling"
            )
        from sescore.regressor.checkpoint import load_checkpoint

        return [load_checkpoint(folder, str(self.device)) for folder in checkpoint_folders(self.checkpoint)]

    follows_device = False  # the regressors move themselves to the metric's device (below), no reload

    def _model(self) -> list[Any]:
        """The loaded regressors (a passed ``regressor`` object counts as a list of one), on the metric's device."""
        model = super()._model()
        regressors = model if isinstance(model, list) else [model]
        for regressor in regressors:
            if regressor.device != self.device:
                regressor.to(self.device)
        return regressors

    def _score(self, hyps: list[str], refs: list[list[str]], srcs: Sequence[str | None] | None) -> Sequence[float]:
        found = resolve_lang(self.lang, refs)
        if self.follow_language and default_for(found) != self.checkpoint:
            self.checkpoint = default_for(found)
            self._set_model(None)
        if self.checkpoint is not None:
            covered_language(checkpoint_folders(self.checkpoint), self.lang, refs, found)
        return ensemble_scores(self._model(), hyps, refs, self.batch_size, precision=self.precision)
