"""MENLI-style adversarial suite builder: field layout, anchors, paraphrases, determinism."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from nlgmetrics.stress import ERROR_CODES, make_adversarial

ROWS = [
    {
        "dataset": "toy",
        "item_id": 1,
        "src": "Damals lag Gold bei 850 Dollar.",
        "refs": [
            "Back then, gold hit $850, and he said we would never sell it.",
            "At that time, gold was at $850, and he told us we would not sell.",
        ],
    },
    {
        "dataset": "toy",
        "item_id": 2,
        "src": "",
        "refs": [
            "Mark showed the old videos from space to his friends.",
            "Mark played the old space videos for his friends.",
        ],
    },
]


def _data_dir() -> Path:
    return Path(os.environ.get("NLGMETRICS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.fixture(scope="module")
def nlp():
    from nlgmetrics.modelroles import load_spacy

    return load_spacy("packaged:en_core_web_sm")


@pytest.fixture(scope="module")
def suite(nlp):
    stats: dict = {}
    rows = make_adversarial(ROWS, np.random.default_rng(0), nlp=nlp, stats=stats)
    return rows, stats


def test_rows_follow_the_menli_layout(suite):
    rows, stats = suite
    assert {r["error"] for r in rows} <= set(ERROR_CODES)
    for row in rows:
        source = next(r for r in ROWS if str(r["item_id"]) == row["item_id"])
        assert row["refs"] == [source["refs"][0]]
        assert row["hyp_adv_based"] != source["refs"][0]
        assert row["dataset"] == "toy-adv"
        if source["src"]:
            assert row["r"] == source["refs"][1] and row["hyp_adv_free"] != row["r"]
        else:
            assert "r" not in row and "hyp_adv_free" not in row
    assert sum(s["made"] for s in stats.values()) == len(rows)
    assert stats["name"]["made"] == 1 and stats["name"]["skipped"] == {"no person with a known first name": 1}


def test_number_errors_spell_out_the_paraphrase(suite):
    rows, _ = suite
    num = [r for r in rows if r["error"] == "num"]
    assert len(num) == 1
    assert (
        num[0]["hyp_para"]
        == "At that time, gold was at eight hundred and fifty dollars, and he told us we would not sell."
    )
    assert "$850" not in num[0]["hyp_adv_based"] and "$" in num[0]["hyp_adv_based"]
    other = next(r for r in rows if r["error"] == "typo" and r["item_id"] == "1")
    assert other["hyp_para"] == ROWS[0]["refs"][1]


def test_same_generator_same_suite(nlp, suite):
    again = make_adversarial(ROWS, np.random.default_rng(0), nlp=nlp)
    assert again == suite[0]
    assert make_adversarial(ROWS, np.random.default_rng(1), nlp=nlp) != suite[0]
    only_typo = make_adversarial(ROWS, np.random.default_rng(0), types=["typo"], nlp=nlp)
    assert [r["error"] for r in only_typo] == ["typo", "typo"]


def test_bad_requests_are_rejected(nlp):
    with pytest.raises(ValueError, match="unknown error type"):
        make_adversarial(ROWS, np.random.default_rng(0), types=["spelling"], nlp=nlp)
    with pytest.raises(ValueError, match="needs references"):
        make_adversarial([{"item_id": 9, "refs": ["only one"]}], np.random.default_rng(0), nlp=nlp)
    with pytest.raises(TypeError):
        make_adversarial(ROWS, 0, nlp=nlp)


def test_multiref_data_gives_menli_fields(nlp):
    data = _data_dir()
    multiref = data / "multiref" / "multiref_wmt21_deen_2refs_allsys.jsonl"
    menli = data / "adversarial" / "adv_menli_wmt20_de.jsonl"
    if not multiref.exists() or not menli.exists():
        pytest.skip(f"shared data not found under {data} (set NLGMETRICS_DATA)")
    with multiref.open(encoding="utf-8") as handle:
        items = [json.loads(next(handle)) for _ in range(12)]
    with menli.open(encoding="utf-8") as handle:
        menli_fields = set(json.loads(handle.readline()))
    rows = make_adversarial(items, np.random.default_rng(0), nlp=nlp)
    assert {r["error"] for r in rows} >= {"add", "drop", "typo", "jumble", "word_NN"}
    core = menli_fields - {"r", "hyp_adv_free"}
    assert all(core <= set(r) <= menli_fields for r in rows)
    full = [r for r in rows if set(r) == menli_fields]  # ref B also admitted the error: ref-free pair too
    assert len(full) >= 0.8 * len(rows)
