"""One table of loaded models for the whole process (``nlgmetrics.modelroles.memo``): every door that loads weights
(encoders and LMs, NLI models, SEScore's NLI pair memos) stores what it built there, so the same weights are
loaded once and a model let go is really gone."""

from __future__ import annotations

import pytest

from nlgmetrics.modelroles.memo import ModelMemo


def test_builds_once_keeps_the_most_recent_and_forgets_by_identity():
    memo, built = ModelMemo(max_entries=2), []

    def build(name):
        def make():
            built.append(name)
            return object()

        return make

    a = memo.get(("x", "a"), build("a"))
    assert memo.get(("x", "a"), build("a")) is a and built == ["a"]  # the second ask does not build
    b = memo.get(("x", "b"), build("b"))
    memo.get(("x", "a"), build("a"))  # a is now the most recent
    memo.get(("x", "c"), build("c"))  # full: the least recently used (b) goes
    assert memo.keys() == [("x", "a"), ("x", "c")]
    assert memo.get(("x", "b"), build("b")) is not b and built == ["a", "b", "c", "b"]
    memo.forget(a)
    assert ("x", "a") not in memo.keys()
    with pytest.raises(ValueError, match="max_entries"):
        ModelMemo(0)


def test_encoders_and_nli_models_share_the_process_table(tiny, monkeypatch):
    import nlgmetrics.modelroles.memo as memo
    from nlgmetrics.modelroles import load_encoder
    from nlgmetrics.nli import load_nli

    monkeypatch.setattr(memo, "MODELS", ModelMemo())
    encoder = load_encoder(str(tiny["encoder"]), "cpu")
    nli = load_nli(str(tiny["nli"]), "cpu")
    assert load_encoder(str(tiny["encoder"]), "cpu") is encoder and load_nli(str(tiny["nli"]), "cpu") is nli
    kinds = sorted(key[0] for key in memo.MODELS.keys())
    assert kinds == ["nli", "transformers"]
