"""Scoring that knows its language: identification, the signature's ``lang:``, refusal and MENLI's switch."""

from __future__ import annotations

import pytest

from nlgmetrics import load_metric
from nlgmetrics.language import LanguageError, check_lang, identify, resolve_lang

EN_REFS = [
    "The council approved the new budget after a long debate.",
    "Profits rose sharply in the third quarter, the company said.",
]
DE_REFS = [
    "Der Rat hat den neuen Haushalt nach einer langen Debatte gebilligt.",
    "Die Gewinne sind im dritten Quartal stark gestiegen, sagte das Unternehmen.",
]
DE_HYPS = ["Der Rat hat den Haushalt gebilligt.", "Die Gewinne sind im dritten Quartal gefallen."]


def test_identification_reads_the_references_together_and_admits_doubt():
    assert identify(EN_REFS) == "en" and identify(DE_REFS) == "de"
    assert identify(["ok", "ja"]) == "und"  # too little text to tell
    assert resolve_lang(None, [[r, "x"] for r in DE_REFS]) == "de"  # lists of references: the first counts
    assert resolve_lang("DE", EN_REFS) == "de"  # the user's word wins
    assert check_lang("auto") is None
    with pytest.raises(LanguageError, match="ISO 639-1"):
        check_lang("german")


def _sescore_checkpoint(tiny, root, languages=None) -> str:
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16])
    return str(export_checkpoint(module.regressor.eval(), root, languages=languages))


def test_sescore_refuses_german_with_the_english_checkpoint_and_says_what_to_do(tiny, tmp_path):
    from sescore.metric import SEScore

    folder = _sescore_checkpoint(tiny, tmp_path / "en")
    scorer = load_metric("sescore", checkpoint=[folder], progress=False)
    scores = scorer.score(DE_HYPS[:1] * 2, EN_REFS)
    assert len(scores) == 2 and "|lang:auto|" in scorer.signature()  # the same before and after scoring
    with pytest.raises(LanguageError) as error:
        scorer.score(DE_HYPS, DE_REFS)
    message = str(error.value)
    assert "German (de)" in message and "covers en" in message and "--lang en" in message
    forced = load_metric("sescore", checkpoint=[folder], progress=False, lang="en")
    assert len(forced.score(DE_HYPS, DE_REFS)) == 2 and "|lang:en|" in forced.signature()
    metric = SEScore(checkpoint=folder)
    with pytest.raises(LanguageError, match="German"):
        metric.update(DE_HYPS, DE_REFS)


def test_a_checkpoint_that_declares_german_scores_german(tiny, tmp_path):
    folder = _sescore_checkpoint(tiny, tmp_path / "de", ["de"])
    scorer = load_metric("sescore", checkpoint=[folder], progress=False)
    assert len(scorer.score(DE_HYPS, DE_REFS)) == 2
    assert "|lang:auto|" in scorer.signature()
    with pytest.raises(LanguageError, match="English"):
        scorer.score(DE_HYPS, EN_REFS)


FR_REFS = [
    "Le conseil a approuvé le nouveau budget après un long débat.",
    "Les bénéfices ont fortement augmenté au troisième trimestre, a déclaré la société.",
]


def test_sescore_left_at_its_default_scores_each_language_with_its_shipped_checkpoint(tiny, tmp_path, monkeypatch):
    """No checkpoint named: German references score with the German checkpoint, English ones with the English
    default (the same scores as naming it), text no shipped checkpoint covers fails in one line; the same through
    ``load_metric`` and the torchmetrics class."""
    import sescore.scorer
    import sescore.shipped
    from sescore.metric import SEScore
    from sescore.scorer import SEScoreScorer

    shipped = tmp_path / "shipped"
    _sescore_checkpoint(tiny, shipped / "mpnet-v2")
    _sescore_checkpoint(tiny, shipped / "me5-de", ["de"])
    monkeypatch.setattr(sescore.shipped, "SHIPPED", shipped)
    monkeypatch.setattr(sescore.scorer, "_CHECKPOINTS", shipped)
    scorer = load_metric("sescore", progress=False)
    assert scorer.follow_language and "ckpt:mpnet-v2@" in scorer.signature()
    english = scorer.score(DE_HYPS, EN_REFS)
    assert english == SEScoreScorer(str(shipped / "mpnet-v2")).score(DE_HYPS, EN_REFS)
    german = scorer.score(DE_HYPS, DE_REFS)
    assert "ckpt:me5-de@" in scorer.signature() and len(german) == 2
    assert german == SEScoreScorer(str(shipped / "me5-de")).score(DE_HYPS, DE_REFS)
    scorer.score(DE_HYPS, EN_REFS)
    assert "ckpt:mpnet-v2@" in scorer.signature()  # back to English for English references
    assert "ckpt:me5-de@" in load_metric("sescore", lang="de", progress=False).signature()  # chosen up front
    with pytest.raises(LanguageError, match="French"):
        scorer.score(DE_HYPS, FR_REFS)
    metric = SEScore()
    metric.update(DE_HYPS, DE_REFS)
    assert metric.checkpoint == str(shipped / "me5-de") and abs(float(metric.compute()) - sum(german) / 2) < 1e-6
    named = SEScore(checkpoint=str(shipped / "mpnet-v2"))
    with pytest.raises(LanguageError, match="Use --checkpoint me5-de"):
        named.update(DE_HYPS, DE_REFS)


def test_menli_switches_to_the_multilingual_nli_only_when_left_at_its_default(monkeypatch):
    from menli.scorer import MENLIScorer

    class Recorder:
        hash = "0" * 12
        device = "cpu"

        def predict_proba(self, premises, hypotheses, **options):
            import numpy as np

            return np.tile([0.6, 0.3, 0.1], (len(premises), 1))

    default = MENLIScorer("packaged:nli-minilm", follow_language=True)
    default._nli = Recorder()
    default.score(DE_HYPS, DE_REFS)
    assert default.model == "packaged:nli-me5" and default._scored_lang == "de"
    named = MENLIScorer("packaged:nli-minilm")
    named._nli = Recorder()
    with pytest.raises(LanguageError, match="--nli-model packaged:nli-me5"):
        named.score(DE_HYPS, DE_REFS)
    english = MENLIScorer("packaged:nli-minilm", follow_language=True)
    english._nli = Recorder()
    english.score(DE_HYPS, EN_REFS)
    assert english.model == "packaged:nli-minilm"


def test_the_score_command_names_the_identified_language_and_refuses_in_one_line(tiny, tmp_path, capsys):
    from nlgmetrics.cli.evaluate import main

    folder = _sescore_checkpoint(tiny, tmp_path / "en")
    hyps, refs, de_refs = tmp_path / "h.txt", tmp_path / "r.txt", tmp_path / "d.txt"
    hyps.write_text("\n".join(DE_HYPS) + "\n")
    refs.write_text("\n".join(EN_REFS) + "\n")
    de_refs.write_text("\n".join(DE_REFS) + "\n")
    common = ["score", "--metric", "sescore", "--checkpoint", folder, "--hyps", str(hyps), "--quiet"]
    assert main([*common, "--refs", str(refs)]) == 0
    assert "|lang:en|" in capsys.readouterr().out
    assert main([*common, "--refs", str(de_refs)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: sescore: the references are German (de)")
    assert main([*common, "--refs", str(de_refs), "--lang", "en"]) == 0
