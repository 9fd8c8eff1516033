import json
import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from nlgmetrics.metaeval import (
    InputError,
    atomic_write,
    correlation_report,
    first_items,
    kendall_b,
    paired_bootstrap_tau_like,
    preference_accuracy,
    read_jsonl,
    read_lines,
    run_adversarial,
    system_pearson,
    tau_like,
    validate_texts,
)


def test_tau_like_counts_concordant_discordant_and_metric_ties():
    # item 1: human a>b>c; metric agrees on (a,b),(a,c), ties (b,c) -> C=2, D=1
    # item 2: human x=y (pair skipped), metric anything
    metric = [3.0, 1.0, 1.0, 5.0, 2.0]
    human = [10.0, 5.0, 0.0, 1.0, 1.0]
    items = [1, 1, 1, 2, 2]
    assert tau_like(metric, human, items) == pytest.approx((2 - 1) / 3)


def test_tau_like_perfect_and_reversed():
    human = [1, 2, 3, 1, 2, 3]
    items = ["a", "a", "a", "b", "b", "b"]
    assert tau_like(human, human, items) == 1.0
    assert tau_like([-h for h in human], human, items) == -1.0
    assert math.isnan(tau_like([1, 2], [1, 1], ["a", "a"]))


def test_kendall_b_matches_scipy_and_system_pearson():
    rng = np.random.default_rng(0)
    m, h = rng.normal(size=50), rng.normal(size=50)
    assert kendall_b(m, h) == pytest.approx(kendalltau(m, h).statistic)
    systems = ["s1"] * 10 + ["s2"] * 10
    human = [1.0] * 10 + [2.0] * 10
    assert system_pearson(human, human, systems) == pytest.approx(1.0)
    report = correlation_report(list(range(20)), human, list(range(20)), systems)
    assert report["n"] == 20 and report["n_systems"] == 2


def test_correlation_report_matches_numpy_and_scipy_on_random_data():
    """Every statistic against an independent computation; system Pearson on values where Spearman would differ."""
    rng = np.random.default_rng(3)
    systems = [f"s{i % 5}" for i in range(60)]
    items = [i // 5 for i in range(60)]
    metric, human = rng.normal(size=60), rng.normal(size=60)
    human[::5] += 3.0  # system s0 far above the rest in human score: Pearson and Spearman of the means disagree
    report = correlation_report(metric, human, items, systems)
    assert report["pearson"] == pytest.approx(np.corrcoef(metric, human)[0, 1])
    assert report["kendall_b"] == pytest.approx(kendalltau(metric, human, variant="b").statistic)
    names = sorted(set(systems))
    means_m = [metric[[s == n for s in systems]].mean() for n in names]
    means_h = [human[[s == n for s in systems]].mean() for n in names]
    assert report["system_pearson"] == pytest.approx(np.corrcoef(means_m, means_h)[0, 1])
    from scipy.stats import spearmanr

    assert abs(report["system_pearson"] - spearmanr(means_m, means_h).statistic) > 0.01
    concordant = discordant = 0
    for item in set(items):
        rows = [i for i in range(60) if items[i] == item]
        for x in rows:
            for y in rows:
                if human[x] > human[y]:
                    concordant += metric[x] > metric[y]
                    discordant += metric[x] <= metric[y]
    assert report["tau_like"] == pytest.approx((concordant - discordant) / (concordant + discordant))


def test_system_pearson_uses_means():
    systems = ["a", "a", "b", "b", "c", "c"]
    human = [1, 1, 2, 2, 3, 3]
    metric = [0, 2, 2, 2, 5, 1]  # means 1, 2, 3 -> perfectly correlated
    assert system_pearson(metric, human, systems) == pytest.approx(1.0)


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="length mismatch"):
        tau_like([1, 2], [1], [1, 1])


def test_read_lines_errors(tmp_path):
    good = tmp_path / "a.txt"
    good.write_text("one\ntwo\n", encoding="utf-8")
    assert read_lines(good) == ["one", "two"]
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(InputError, match="empty"):
        read_lines(tmp_path / "empty.txt")
    (tmp_path / "gap.txt").write_text("one\n\nthree\n")
    with pytest.raises(InputError, match=":2: empty line"):
        read_lines(tmp_path / "gap.txt")
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\xfe broken\n")
    with pytest.raises(InputError, match=":2: not valid UTF-8"):
        read_lines(tmp_path / "bad.txt")
    with pytest.raises(InputError, match="no such file"):
        read_lines(tmp_path / "missing.txt")
    (tmp_path / "bom.txt").write_bytes("\ufeffErste Zeile\r\nzweite\n".encode("utf-8"))  # as Windows editors save
    assert read_lines(tmp_path / "bom.txt") == ["Erste Zeile", "zweite"]


def test_validate_texts():
    assert validate_texts("hyps", ["a", "b"]) == ["a", "b"]
    with pytest.raises(InputError, match=r"hyps\[1\] is int"):
        validate_texts("hyps", ["a", 3])
    with pytest.raises(InputError, match=r"hyps\[0\] is empty"):
        validate_texts("hyps", ["  "])


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        with atomic_write(target) as handle:
            handle.write("partial\n")
            raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
    with atomic_write(target) as handle:
        handle.write("done\n")
    assert target.read_text() == "done\n"


def test_first_items_keeps_all_systems(tmp_path):
    rows = [{"item_id": i, "system": s} for i in (1, 2, 3) for s in ("x", "y")]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    got = first_items(read_jsonl(path), 2)
    assert [(r["item_id"], r["system"]) for r in got] == [(1, "x"), (1, "y"), (2, "x"), (2, "y")]
    # skip leaves a dev slice out; skip + limit is a window; interleaved systems stay with their item
    shuffled = [{"item_id": i, "system": s} for s in ("x", "y") for i in (1, 2, 3)]
    assert [(r["item_id"], r["system"]) for r in first_items(shuffled, None, 2)] == [(3, "x"), (3, "y")]
    assert [r["item_id"] for r in first_items(rows, 1, 1)] == [2, 2]
    assert first_items(rows, None, 5) == []
    with pytest.raises(InputError, match="negative"):
        first_items(rows, None, -1)


def test_adversarial_accuracy_ties_fail():
    result = preference_accuracy([1.0, 2.0, 3.0], [0.0, 2.0, 4.0], ["a", "a", "b"])
    assert result["per_type"] == {"a": 0.5, "b": 0.0}
    assert result["mean"] == pytest.approx(0.25)


def test_run_adversarial_scores_good_and_bad_against_anchor():
    rows = [
        {
            "error": "neg",
            "refs": ["the cat sat"],
            "src": "die Katze",
            "r": "the cat sat down",
            "hyp_para": "the cat was sitting",
            "hyp_adv_based": "the cat did not sit",
            "hyp_adv_free": "the dog sat",
        }
    ]
    seen = []

    def overlap(hyps, anchors):
        seen.append((list(hyps), list(anchors)))
        return [len(set(h.split()) & set(a.split())) for h, a in zip(hyps, anchors)]

    result = run_adversarial(overlap, rows)
    assert seen[0][1] == ["the cat sat", "the cat sat"]
    assert result["per_type"]["neg"] == 0.0  # both share 2 words -> tie -> failure
    result = run_adversarial(overlap, rows, reference_free=True)
    assert seen[1] == (["the cat sat down", "the dog sat"], ["die Katze", "die Katze"])


def test_paired_bootstrap_separates_a_real_gap_from_a_tie():
    rng = np.random.default_rng(0)
    items = [i for i in range(60) for _ in range(5)]
    human = rng.normal(size=len(items))
    good = human + rng.normal(scale=0.5, size=len(items))
    bad = rng.normal(size=len(items))
    result = paired_bootstrap_tau_like(good, bad, human, items, resamples=500, seed=1)
    assert result["difference"] == pytest.approx(tau_like(good, human, items) - tau_like(bad, human, items))
    assert result["ci95"][0] > 0 and result["share_a_not_better"] == 0.0 and result["items"] == 60
    tie = paired_bootstrap_tau_like(good, good, human, items, resamples=50, seed=1)
    assert tie["difference"] == 0 and tie["ci95"] == [0.0, 0.0] and tie["share_a_not_better"] == 1.0
    again = paired_bootstrap_tau_like(good, bad, human, items, resamples=500, seed=1)
    assert again == result  # same seed, same resamples
    with pytest.raises(ValueError, match="length mismatch"):
        paired_bootstrap_tau_like(good[:-1], bad, human, items)
