"""BERT-diverge on a tiny random masked LM: batched, per-text seeded, whole-word replacements."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import build_bert  # noqa: E402

from nlgmetrics.perturb import NotApplicable, get_perturbation  # noqa: E402
from nlgmetrics.perturb.bert_diverge import bert_diverge_batch  # noqa: E402

TEXTS = [
    "The man sees the big dog in the city today.",
    "A teacher reads a good story to the student.",
    "They walk slowly to the river after the game.",
    "Prices rise quickly in the market, the minister says.",
]


@pytest.fixture(scope="session")
def mlm(tmp_path_factory):
    from nlgmetrics.modelroles import load_model

    folder = build_bert(tmp_path_factory.mktemp("perturb_mlm") / "bert_mlm", kind="masked_lm")
    return load_model("masked_lm", str(folder), device="cpu")


def _rngs(seed: int, n: int) -> list[np.random.Generator]:
    return [np.random.default_rng([seed, i]) for i in range(n)]


def test_replaces_the_promised_share_with_whole_words(mlm):
    out = bert_diverge_batch(TEXTS, _rngs(0, len(TEXTS)), 0.3, mlm=mlm)
    for text, new in zip(TEXTS, out):
        assert isinstance(new, str) and new != text
        old_words, new_words = text.split(), new.split()
        assert len(new_words) == len(old_words)
        changed = sum(a != b for a, b in zip(old_words, new_words))
        assert 1 <= changed <= math.ceil(0.3 * len(old_words))
        assert all(w.strip(".,").isalpha() for w in new_words)


def test_batching_does_not_change_the_result(mlm):
    batched = bert_diverge_batch(TEXTS, _rngs(3, len(TEXTS)), 0.2, mlm=mlm, batch_size=4)
    one_by_one = bert_diverge_batch(TEXTS, _rngs(3, len(TEXTS)), 0.2, mlm=mlm, batch_size=1)
    alone = [bert_diverge_batch([t], [np.random.default_rng([3, i])], 0.2, mlm=mlm)[0] for i, t in enumerate(TEXTS)]
    assert batched == one_by_one == alone
    assert bert_diverge_batch(TEXTS, _rngs(4, len(TEXTS)), 0.2, mlm=mlm) != batched


def test_registry_entry_batches_and_refuses(mlm):
    perturbation = get_perturbation("bert_diverge")
    assert perturbation.batch_fn is not None and "mlm" in perturbation.needs
    out = perturbation.apply_batch(TEXTS + ["", "... !!!"], _rngs(1, 6), 0.1, [{}] * 6, {"mlm": mlm})
    assert all(isinstance(o, str) for o in out[:4])
    assert isinstance(out[4], NotApplicable) and isinstance(out[5], NotApplicable)
    assert perturbation(TEXTS[0], np.random.default_rng(0), 0.0, mlm=mlm) == TEXTS[0]
    with pytest.raises(ValueError, match="mlm"):
        perturbation(TEXTS[0], np.random.default_rng(0), 0.1)


@settings(max_examples=15, deadline=None)
@given(text=st.text(max_size=50), seed=st.integers(0, 2**32 - 1))
def test_arbitrary_text_gives_text_or_refusal(mlm, text, seed):
    perturbation = get_perturbation("bert_diverge")
    try:
        first = perturbation(text, np.random.default_rng(seed), 0.4, mlm=mlm)
    except NotApplicable:
        return
    assert first == perturbation(text, np.random.default_rng(seed), 0.4, mlm=mlm)
