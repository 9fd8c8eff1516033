"""The select/report split, the mix bootstrap and ``evaluate.py devmix`` (on tiny judged files, chrF vs BLEU)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from nlgmetrics.cli import evaluate
from nlgmetrics.diskcache import CacheFile
from nlgmetrics.metaeval import (
    paired_bootstrap_tau_like,
    paired_bootstrap_tau_like_mix,
    rows_in_half,
    split_items,
    tau_like,
)


def test_split_is_balanced_seeded_and_independent_of_order_and_neighbours():
    items = [("en-de", i) for i in range(101)]
    halves = split_items(items, seed=0)
    assert sum(h == "select" for h in halves.values()) == 50
    shuffled = items[:]
    random.Random(1).shuffle(shuffled)
    assert split_items(shuffled, seed=0) == halves
    assert split_items(items, seed=1) != halves
    # an item keeps its half relative to the others when the file grows (rank by keyed hash, not position)
    grown = split_items(items + [("en-de", i) for i in range(101, 301)], seed=0)
    moved = sum(grown[item] != halves[item] for item in items)
    assert moved < 50


def test_rows_in_half_keeps_all_systems_of_an_item_together():
    rows = [{"item_id": i, "system": s} for i in range(20) for s in "abc"]
    select, report = rows_in_half(rows, "select", 3), rows_in_half(rows, "report", 3)
    assert len(select) + len(report) == len(rows)
    assert not {r["item_id"] for r in select} & {r["item_id"] for r in report}
    assert all(sum(r["item_id"] == i for r in select) in (0, 3) for i in range(20))
    with pytest.raises(ValueError, match="half must be"):
        rows_in_half(rows, "dev", 0)


def _judged_set(rng, n_items, noise):
    human = rng.normal(size=(n_items, 4))
    a = human + rng.normal(scale=noise, size=human.shape)
    b = human + rng.normal(scale=noise * 3, size=human.shape)
    items = np.repeat(np.arange(n_items), 4)
    return a.ravel(), b.ravel(), human.ravel(), list(items)


def test_mix_bootstrap_mean_of_set_differences_and_one_set_matches_the_single_bootstrap():
    rng = np.random.default_rng(0)
    sets = [_judged_set(rng, 40, 0.5), _judged_set(rng, 60, 0.5)]
    result = paired_bootstrap_tau_like_mix(sets, resamples=200, seed=5)
    expected = np.mean([tau_like(a, h, i) - tau_like(b, h, i) for a, b, h, i in sets])
    assert result["difference"] == pytest.approx(expected)
    assert result["ci95"][0] < result["difference"] < result["ci95"][1]
    assert result["share_a_not_better"] < 0.05  # A is far less noisy than B
    swapped = paired_bootstrap_tau_like_mix([(b, a, h, i) for a, b, h, i in sets], resamples=200, seed=5)
    assert swapped["share_a_not_better"] > 0.95
    one = paired_bootstrap_tau_like_mix(sets[:1], resamples=300, seed=2)
    a, b, h, i = sets[0]
    assert one["difference"] == pytest.approx(paired_bootstrap_tau_like(a, b, h, i, 300, 2)["difference"])
    with pytest.raises(ValueError, match="no judged sets"):
        paired_bootstrap_tau_like_mix([], 10, 0)


def _write_mix(tmp_path):
    refs = [
        "the cat sat on the mat",
        "a dog ran in the park",
        "rain fell all day long",
        "she read a good book",
        "they built a small house",
        "the train left at noon",
    ]
    rows = []
    for item, ref in enumerate(refs * 4):
        words = ref.split()
        for system, keep in (("good", len(words)), ("mid", len(words) - 2), ("bad", 1), ("ref-A", len(words))):
            rows.append(
                {
                    "item_id": f"{item}",
                    "system": system,
                    "src": "",
                    "refs": [ref],
                    "hyp": " ".join(words[:keep]) + (" x" if system == "bad" else ""),
                    "scores": {"q": float(keep)},
                }
            )
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(r) for r in rows[: 4 * 12]), encoding="utf-8")
    mix = tmp_path / "mix.yaml"
    mix.write_text(
        "split_seed: 0\nsets:\n  - {name: one, path: a.jsonl, human: q, exclude_systems: [ref-A]}\n"
        "  - {name: two, path: b.jsonl, human: q}\n",
        encoding="utf-8",
    )
    return mix


def _run(capsys, *argv):
    code = evaluate.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.strip().splitlines(), captured.err


def test_devmix_scores_each_half_reports_intervals_and_resumes_from_its_cache(capsys, tmp_path):
    mix = _write_mix(tmp_path)
    base = [
        "devmix",
        "--mix",
        str(mix),
        "--data-root",
        str(tmp_path),
        "--metric",
        "chrf",
        "--versus",
        "bleu",
        "--bootstrap",
        "50",
        "--quiet",
        "--cache",
        str(tmp_path / "cache"),
    ]
    code, out, err = _run(capsys, *base, "--half", "select", "--markdown", str(tmp_path / "t.md"))
    assert code == 0, err
    select = json.loads(out[-1])
    assert [s["set"] for s in select["sets"]] == ["one", "two"]
    assert select["sets"][0]["rows"] == 12 * 3  # half of 24 items, ref-A excluded
    assert select["sets"][1]["rows"] == 6 * 4
    assert "mean of sets" in (tmp_path / "t.md").read_text()
    assert select["sets"][0]["judged_pairs"] == 12 * 3  # three systems with three different human scores
    assert "Metric ties among judged pairs" in (tmp_path / "t.md").read_text()

    def score_files():  # one per set half and metric signature, each with its cost ledger beside it
        return sorted(p for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".costs.json"))

    assert len(score_files()) == 4
    assert len(list((tmp_path / "cache").glob("*.costs.json"))) == 4
    code, out, _ = _run(capsys, *base, "--half", "report")
    report = json.loads(out[-1])
    assert report["half"] == "report" and report["sets"][0]["rows"] == 36
    assert len(score_files()) == 8
    # a rerun reads the cache: corrupting the stored scores shows up in the result, proving nothing was rescored
    for path in score_files():
        if path.name.startswith("a-select-"):
            stored = CacheFile(path, "scores")
            stored.append(dict.fromkeys(stored.read(), 0.0))  # later records of a row win
    code, out, _ = _run(capsys, *base, "--half", "select", "--sets", "one")
    again = json.loads(out[-1])
    assert [s["set"] for s in again["sets"]] == ["one"]
    assert again["sets"][0]["tau_like_a"] == pytest.approx(-1.0)  # all ties count as discordant
    assert again["sets"][0]["metric_ties_a"] == again["sets"][0]["judged_pairs"] == 36


def test_devmix_names_bad_mixes_and_sets(capsys, tmp_path):
    mix = _write_mix(tmp_path)
    base = ["devmix", "--data-root", str(tmp_path), "--metric", "chrf", "--half", "select", "--quiet"]
    code, _, err = _run(capsys, *base, "--mix", str(mix), "--sets", "three")
    assert code == 1 and "unknown set(s) three" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("sets:\n  - {name: one, path: a.jsonl}\n")
    code, _, err = _run(capsys, *base, "--mix", str(bad))
    assert code == 1 and "needs 'name', 'path' and 'human'" in err
    code, _, err = _run(
        capsys,
        "devmix",
        "--data-root",
        str(tmp_path / "nope"),
        "--metric",
        "chrf",
        "--half",
        "select",
        "--mix",
        str(mix),
    )
    assert code == 1 and "judged data folder not found" in err


def test_paired_bootstrap_correlation_for_one_candidate_per_item():
    from nlgmetrics.metaeval import paired_bootstrap_correlation, pearson

    rng = np.random.default_rng(1)
    human = rng.normal(size=300)
    good, poor = human + rng.normal(scale=0.5, size=300), human + rng.normal(scale=3.0, size=300)
    result = paired_bootstrap_correlation(good, poor, human, "pearson", resamples=200, seed=0)
    assert result["a"] == pytest.approx(pearson(good, human)) and result["share_a_not_better"] < 0.01
    kendall = paired_bootstrap_correlation(poor, good, human, "kendall_b", resamples=100, seed=0)
    assert kendall["difference"] < 0 and kendall["share_a_not_better"] > 0.99
    assert kendall["ci95"][0] < kendall["difference"] < kendall["ci95"][1]
    with pytest.raises(ValueError, match="statistic must be"):
        paired_bootstrap_correlation(good, poor, human, "spearman")


def test_set_rows_leave_out_empty_outputs_and_say_so(tmp_path):
    """Judged WebNLG holds empty system outputs; the scorers reject them, so the mix drops them (with a warning),
    as `correlate` does, instead of crashing a selection run half-way."""
    from nlgmetrics.metaeval.devmix import set_rows

    rows = [
        {
            "item_id": i,
            "system": s,
            "hyp": "" if (i, s) == (0, "a") else f"out {i} {s}",
            "refs": [f"ref {i}"],
            "scores": {"h": float(i)},
        }
        for i in range(10)
        for s in "ab"
    ]
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    entry = {"name": "toy", "path": str(path), "human": "h"}
    with pytest.warns(UserWarning, match="toy: 1 rows with an empty hypothesis"):
        kept = set_rows(entry, tmp_path, "select", 0, None) + set_rows(entry, tmp_path, "report", 0, None)
    assert len(kept) == 19 and all(r["hyp"] for r in kept)


def test_devmix_versus_encoder_compares_two_encoders_on_the_same_rows(capsys, tmp_path, tiny):
    mix = _write_mix(tmp_path)
    base = [
        "devmix",
        "--mix",
        str(mix),
        "--data-root",
        str(tmp_path),
        "--metric",
        "bertscore",
        "--versus",
        "bertscore",
        "--half",
        "select",
        "--bootstrap",
        "20",
        "--quiet",
        "--sets",
        "two",
    ]
    cache = tmp_path / "cache"
    code, out, err = _run(
        capsys,
        *base,
        "--encoder",
        str(tiny["encoder"]),
        "--versus-encoder",
        str(tiny["bert_mlm"]),
        "--cache",
        str(cache),
    )
    assert code == 0, err
    result = json.loads(out[-1])
    assert f"encoder:{tiny['encoder']}@" in result["signature"]
    assert f"encoder:{tiny['bert_mlm']}@" in result["versus_signature"]
    assert result["label_a"] == f"bertscore ({tiny['encoder']})" and result["label_b"].endswith(f"({tiny['bert_mlm']})")
    stored = [CacheFile(p, "scores").read() for p in sorted(cache.iterdir()) if not p.name.endswith(".costs.json")]
    assert len(stored) == 2 and len(stored[0]) == len(stored[1]) > 0  # the same rows,
    assert sorted(stored[0].values()) != sorted(stored[1].values())  # each encoder scored them itself
    code, out, err = _run(capsys, *base, "--encoder", str(tiny["encoder"]))
    same = json.loads(out[-1])
    assert code == 0, err
    assert same["signature"] == same["versus_signature"] and same["sets"][0]["difference"] == 0.0
    code, _, err = _run(
        capsys,
        "devmix",
        "--mix",
        str(mix),
        "--data-root",
        str(tmp_path),
        "--metric",
        "bertscore",
        "--versus",
        "chrf",
        "--versus-encoder",
        str(tiny["encoder"]),
        "--half",
        "select",
        "--quiet",
    )
    assert code == 1 and "--versus chrf has no encoder" in err


def test_a_baseline_on_another_encoder_drops_the_layer_and_prompt_chosen_for_the_first(capsys, tmp_path, tiny):
    mix = _write_mix(tmp_path)
    code, out, err = _run(
        capsys,
        "devmix",
        "--mix",
        str(mix),
        "--data-root",
        str(tmp_path),
        "--metric",
        "bertscore",
        "--encoder",
        str(tiny["encoder"]),
        "--layer",
        "1",
        "--prompt",
        "query: ",
        "--versus",
        "bertscore",
        "--versus-encoder",
        str(tiny["bert_mlm"]),
        "--half",
        "select",
        "--bootstrap",
        "20",
        "--quiet",
        "--sets",
        "two",
    )
    assert code == 0, err
    result = json.loads(out[-1])
    assert "|layer:1|prompt:query:%20|" in result["signature"]
    assert "|layer:None|idf:no" in result["versus_signature"] and "prompt" not in result["versus_signature"]


def test_tau_like_ties_counts_exactly_the_pairs_that_breaking_ties_turns_concordant():
    from nlgmetrics.metaeval import tau_like, tau_like_ties

    rng = np.random.default_rng(1)
    items = [i // 5 for i in range(50)]
    human = rng.integers(0, 3, size=50).astype(float)
    metric = rng.integers(0, 3, size=50).astype(float)  # coarse scores: many ties
    counts = tau_like_ties(metric, human, items)
    judged = sum(
        1 for g in range(10) for a in range(5) for b in range(a + 1, 5) if human[5 * g + a] != human[5 * g + b]
    )
    assert counts["judged_pairs"] == judged and 0 < counts["metric_ties"] < judged
    broken = metric + 1e-3 * human  # each tie now agrees with the people; no other pair changes order
    assert tau_like(broken, human, items) - tau_like(metric, human, items) == pytest.approx(
        2 * counts["metric_ties"] / judged
    )


@pytest.mark.parametrize("variant", ["devmix/short_text.yaml", "devmix/encoders.yaml"])
def test_shipped_mix_variants_share_the_default_mix_split_and_entries(variant):
    """The variant mixes reuse the default mix's cached scores and halves only if the seed and each shared set's
    entry are the same; a drifted copy would silently select on other items."""
    from nlgmetrics.metaeval.devmix import load_mix

    default, other = load_mix("devmix/default.yaml"), load_mix(variant)
    assert other["split_seed"] == default["split_seed"]
    by_name = {entry["name"]: entry for entry in default["sets"]}
    shared = [entry for entry in other["sets"] if entry["name"] in by_name]
    assert shared and "ted_zhen" in {entry["name"] for entry in shared}
    for entry in shared:
        assert entry == by_name[entry["name"]], entry["name"]
