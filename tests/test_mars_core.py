"""MARS pieces that need no model: knapsack, LCS, costs, templates, idf, config, weights, planning maths, cache."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.cache import AugmentationCache
from mars.config import ABLATIONS, MARSConfig, MaskingConfig, load_config
from mars.functional import geometric_weights, weighted_cosine
from mars.idf import DEFAULT_IDF_PATH, IdfTable, fit_idf, load_idf, save_idf
from mars.knapsack import solve_knapsack
from mars.lcs import lcs_positions
from mars.masking import AnalysedText, build_templates, choose_mask, mask_costs, mask_priorities, window
from mars.planning import draw, plan_logits_head, plan_logits_hidden, sampling_probs
from mars.template import Blank, Template, TextBlock, template_from_mask

# --- knapsack ---------------------------------------------------------------------------------------------------


def _brute_force(values, costs, capacity):
    best = 0.0
    for r in range(len(values) + 1):
        for subset in itertools.combinations(range(len(values)), r):
            if sum(costs[i] for i in subset) <= capacity:
                best = max(best, sum(values[i] for i in subset))
    return best


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 10, allow_nan=False), st.integers(0, 12)), min_size=0, max_size=9),
    st.integers(0, 40),
)
def test_knapsack_is_optimal_against_brute_force(items, capacity):
    values = [v for v, _ in items]
    costs = [c for _, c in items]
    chosen = solve_knapsack(values, costs, capacity)
    assert chosen == sorted(set(chosen))
    assert sum(costs[i] for i in chosen) <= capacity
    assert math.isclose(sum(values[i] for i in chosen), _brute_force(values, costs, capacity), abs_tol=1e-9)


def test_knapsack_prefers_cheap_high_priority_items():
    # priorities of "the", "dog", "barked" ; the LCS word costs 10 and cannot fit a budget of 2
    assert solve_knapsack([5.0, 1.0, 3.0], [10, 1, 1], 2) == [1, 2]
    assert solve_knapsack([5.0, 1.0, 3.0], [10, 1, 1], 11) == [0, 2]
    assert solve_knapsack([], [], 3) == []


@pytest.mark.parametrize(
    "values,costs,capacity,message",
    [
        ([1.0], [1, 2], 3, "differ in length"),
        ([1.0], [-1], 3, "non-negative"),
        ([1.0], [1], -1, "capacity"),
        ([float("nan")], [1], 1, "finite"),
        ([1.0], [1.5], 2, "integer"),
    ],
)
def test_knapsack_rejects_bad_input(values, costs, capacity, message):
    with pytest.raises(ValueError, match=message):
        solve_knapsack(values, costs, capacity)


# --- LCS and costs ----------------------------------------------------------------------------------------------


def _lcs_length(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=8), st.lists(st.sampled_from("abcd"), max_size=8))
def test_lcs_positions_form_a_longest_common_subsequence(context, reference):
    positions = lcs_positions(context, reference)
    assert positions == sorted(set(positions))
    assert len(positions) == _lcs_length(context, reference)
    words = iter(context)  # the matched reference words must be a subsequence of the context
    assert all(any(w == reference[p] for w in words) for p in positions)


def test_lcs_words_cost_ten_others_one():
    config = MaskingConfig()
    reference = "She called for help and waited .".split()
    context = "she pulled over and called for a tow".split()
    costs = mask_costs(reference, context, config)
    # LCS (lowercased): she ... called for  -> "She", "called", "for" (length 3; "and" cannot follow "for")
    assert costs == [10, 10, 10, 1, 1, 1, 1]
    assert mask_costs(reference, [], config) == [1] * 7


# --- priorities, masks and templates ----------------------------------------------------------------------------


def test_priorities_favour_frequent_and_adjective_words():
    idf = IdfTable(100, {"the": 100, "red": 10, "car": 10, "stopped": 10})
    config = MaskingConfig()
    the, red, car, stopped, unseen = mask_priorities(
        ["The", "red", "car", "stopped", "zyx"], ["DET", "ADJ", "NOUN", "VERB", "NOUN"], idf, config
    )
    assert the > red > car > stopped > unseen > 0  # idf(the) = 0 is floored at min_idf
    assert math.isclose(red / car, 4.0 / 2.0)


def test_choose_mask_respects_budget_and_unmaskable_words():
    priorities = [5.0, 4.0, 3.0, 2.0, 1.0]
    mask = choose_mask(priorities, [1, 1, 1, 1, 1], 0.4)
    assert mask == [True, True, False, False, False]  # floor(0.4 * 5) = 2
    mask = choose_mask(priorities, [1, 1, 1, 1, 1], 0.4, maskable=[False, True, True, True, True])
    assert mask == [False, True, False, False, False]  # floor(0.4 * 4) = 1
    assert choose_mask(priorities, [10, 10, 10, 10, 10], 0.8) == [False] * 5


def test_template_blocks_group_runs_and_render_the_original():
    words = ["she", "called", "for", "help", "."]
    spaces = [" ", " ", " ", "", " "]
    template = template_from_mask(words, spaces, [False, True, True, False, True], 0.6)
    assert template.blocks == (
        TextBlock("she", ""),
        Blank(2, "called for", " "),
        TextBlock("help", " "),
        Blank(1, ".", ""),
    )
    assert template.original() == "she called for help."
    assert template.display() == "she [B][B] help[B]"
    assert template.render([" phoned for", "!"]) == "she phoned for help!"
    assert Template.from_json(template.to_json()) == template
    with pytest.raises(ValueError, match="2 blanks but 1 fills"):
        template.render(["x"])
    with pytest.raises(ValueError, match="differ in length"):
        template_from_mask(words, spaces, [True], 0.2)


def test_build_templates_one_per_ratio_and_context_words_survive():
    reference = AnalysedText(
        tuple("she called for help and waited for the tow truck .".split()),
        tuple([" "] * 10 + [""]),
        ("PRON", "VERB", "ADP", "NOUN", "CCONJ", "VERB", "ADP", "DET", "NOUN", "NOUN", "PUNCT"),
    )
    idf = IdfTable(10, {"the": 10, "for": 9, "and": 9, ".": 10, "she": 8, "help": 2, "tow": 1, "truck": 1})
    templates = build_templates(reference, ["she", "called"], [0.0, 0.2, 0.4, 0.6, 0.8], idf, MaskingConfig())
    assert [t.ratio for t in templates] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert templates[0].blanks == []
    assert [t.n_masked for t in templates] == [0, 2, 4, 6, 8]  # floor(lambda * 11); 2 words cost 10 each
    for t in templates:
        assert t.original() == " ".join(reference.words)
        assert t.display().startswith("she called")  # the LCS with the context is never masked at these budgets


def test_window_keeps_only_the_first_maskable_words_maskable():
    assert window([True, False, True, True, True], 2) == [True, False, True, False, False]
    assert window([True, False, True], 0) == [True, False, True]
    assert window([True, True], 5) == [True, True]


def test_window_words_bounds_the_blanks_and_each_ratios_budget():
    """Issue 16: a long reference is masked only in its first N words, so the LM never reads its tail."""
    words = "she called for help and waited for the tow truck .".split()
    reference = AnalysedText(
        tuple(words),
        tuple([" "] * 10 + [""]),
        ("PRON", "VERB", "ADP", "NOUN", "CCONJ", "VERB", "ADP", "DET", "NOUN", "NOUN", "PUNCT"),
    )
    idf = IdfTable(10, {"the": 10, "for": 9, "and": 9, ".": 10, "she": 8, "help": 2, "tow": 1, "truck": 1})
    ratios = [0.0, 0.2, 0.4, 0.6, 0.8]
    unbounded = build_templates(reference, [], ratios, idf, MaskingConfig())
    bounded = build_templates(reference, [], ratios, idf, MaskingConfig(window_words=5))
    assert [t.n_masked for t in bounded] == [0, 1, 2, 3, 4]  # floor(lambda * 5), no LCS costs without context
    assert [t.n_masked for t in unbounded] == [0, 2, 4, 6, 8]
    for t in bounded:
        assert t.original() == " ".join(words)
        assert t.display().endswith(" ".join(words[5:]))  # the tail after the window is one verbatim text block
    assert build_templates(reference, [], ratios, idf, MaskingConfig(window_words=11)) == unbounded
    assert build_templates(reference, [], ratios, idf, MaskingConfig(window_words=0)) == unbounded


# --- idf ----------------------------------------------------------------------------------------------------------


def test_fit_idf_counts_documents_not_occurrences(tmp_path):
    table = fit_idf(["the cat the cat", "The dog", "a bird"], str.split)
    assert table.n_documents == 3
    assert table.document_frequency["the"] == 2 and table.document_frequency["cat"] == 1
    assert math.isclose(table.idf("the", 0.0), -math.log(2 / 3))
    assert table.idf("unseen", 0.0) == math.inf and math.isclose(table.idf("unseen", 1.0), math.log(4))
    save_idf(table, tmp_path / "t.json")
    assert load_idf(tmp_path / "t.json") == table
    with pytest.raises(ValueError, match="empty corpus"):
        fit_idf([], str.split)


def test_default_idf_table_is_small_wikitext_and_frequent_words_have_low_idf():
    assert DEFAULT_IDF_PATH.stat().st_size < 400_000
    table = load_idf("default")
    assert table.n_documents == 1000 and len(table.document_frequency) == 20000
    assert "WikiText-103" in table.source and "CC BY-SA" in table.source
    assert table.idf("the") < table.idf("battalion") < table.idf("zzzunseen")


# --- config -------------------------------------------------------------------------------------------------------


def test_config_files_load_and_differ_only_where_documented():
    offline = load_config("configs/mars/offline.yaml")
    paper = load_config("configs/mars/paper.yaml")
    assert offline.models.causal_lm == "packaged:smollm2" and paper.models.causal_lm == "gpt2-large"
    assert paper.models.encoder == "roberta-large" and offline.models.encoder == "packaged:minilm"
    # the offline config bounds the cost of long references (issue 16); the paper has no such bound
    assert offline.masking.window_words == 40 and paper.masking.window_words == 0
    assert dataclasses.replace(offline.masking, window_words=0) == paper.masking and offline.planning == paper.planning
    assert (paper.planning.eta, paper.planning.steps, paper.cloze.temperature) == (0.02, 3, 1.3)


def test_config_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ValueError, match=r"unknown key 'cloze\.temprature'; known in 'cloze': .*temperature"):
        load_config({"cloze": {"temprature": 1.0}})
    with pytest.raises(ValueError, match="increasing"):
        load_config({"masking": {"ratios": [0.4, 0.2]}})
    with pytest.raises(ValueError, match="q must lie"):
        load_config({"score": {"q": 0.0}})
    with pytest.raises(ValueError, match="masked_lm"):
        load_config(None, ablation="naive")
    with pytest.raises(ValueError, match="unknown ablation"):
        load_config(None, ablation="nope")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="window_words must be an integer"):
            load_config({"masking": {"window_words": bad}})


def test_overrides_ablations_and_hashes():
    base = load_config(None)
    no_plan = load_config(None, ablation="no_planning")
    assert not no_plan.planning.enabled and set(ABLATIONS) >= {"full", "no_planning", "no_context", "naive"}
    assert load_config(None, {"planning__eta": 0.1}).planning.eta == 0.1
    assert load_config(None, {"score.q": 0.5}).score.q == 0.5
    from mars.config import stable_hash

    q_changed = load_config(None, {"score.q": 0.5})
    assert stable_hash(base.augmentation_dict()) == stable_hash(q_changed.augmentation_dict())
    assert stable_hash(base.scoring_dict()) != stable_hash(q_changed.scoring_dict())
    assert stable_hash(base.augmentation_dict()) != stable_hash(no_plan.augmentation_dict())
    assert isinstance(load_config(base), MARSConfig)
    # the window is part of what changes augmented references; 0 (no bound) keeps the hashes of older configs
    assert "window_words" not in load_config(None, {"masking.window_words": 0}).augmentation_dict()["masking"]
    assert stable_hash(load_config(None, {"masking.window_words": 64}).augmentation_dict()) != stable_hash(
        base.augmentation_dict()
    )


# --- score maths ------------------------------------------------------------------------------------------------


def test_geometric_weights_sum_to_one_with_ratio_q():
    w = geometric_weights(5, 0.5)
    assert math.isclose(float(w.sum()), 1.0, rel_tol=1e-6)
    assert torch.allclose(w[1:] / w[:-1], torch.full((4,), 0.5))
    assert torch.allclose(geometric_weights(3, 1.0), torch.full((3,), 1 / 3))
    with pytest.raises(ValueError):
        geometric_weights(0, 0.5)


def test_weighted_cosine_by_hand():
    cand = torch.tensor([[1.0, 0.0]])
    refs = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]])
    w = torch.tensor([0.5, 0.3, 0.2])
    expected = 0.5 * 1.0 + 0.3 * 0.0 + 0.2 * (1 / math.sqrt(2))
    assert math.isclose(float(weighted_cosine(cand, refs, w)[0]), expected, rel_tol=1e-6)
    with pytest.raises(ValueError, match="weights"):
        weighted_cosine(cand, refs, w[:2])


# --- planning maths ---------------------------------------------------------------------------------------------


def _autograd_head_delta(E, h, future, eta, steps, xi):
    """Eq. 6 on an explicit output-projection delta D (logits = (E + D) h), by autograd."""
    D = torch.zeros_like(E)
    for _ in range(steps):
        D_ = D.clone().requires_grad_(True)
        reward = torch.log_softmax((E + D_) @ h / xi, -1)[future].sum()
        (g,) = torch.autograd.grad(reward, D_)
        D = D + eta * g / g.norm()
    return (E + D) @ h


def test_closed_form_head_planning_equals_autograd_on_a_head_delta():
    gen = torch.Generator().manual_seed(0)
    E, h = torch.randn(50, 8, generator=gen, dtype=torch.float64), torch.randn(8, generator=gen, dtype=torch.float64)
    future = torch.tensor([3, 7, 7, 11])
    expected = _autograd_head_delta(E, h, future, 0.3, 3, 1.3)
    got = plan_logits_head(
        (E @ h).unsqueeze(0), h.norm().view(1), future.view(1, -1), eta=0.3, steps=3, temperature=1.3
    )[0]
    assert torch.allclose(got, expected, atol=1e-10)
    base_reward = torch.log_softmax(E @ h / 1.3, -1)[future].sum()
    assert torch.log_softmax(got / 1.3, -1)[future].sum() > base_reward  # planning moves toward the future text


def test_hidden_planning_increases_the_reward_and_padding_is_ignored():
    gen = torch.Generator().manual_seed(1)
    E, h = torch.randn(40, 6, generator=gen), torch.randn(2, 6, generator=gen)
    future = torch.tensor([[1, 2, -1], [5, -1, -1]])
    planned = plan_logits_hidden(h, E, None, future, eta=0.5, steps=3, temperature=1.0)
    base = h @ E.T
    for row, ids in enumerate([[1, 2], [5]]):
        assert torch.log_softmax(planned[row], -1)[ids].sum() > torch.log_softmax(base[row], -1)[ids].sum()
    alone = plan_logits_hidden(h[1:], E, None, torch.tensor([[5]]), eta=0.5, steps=3, temperature=1.0)
    assert torch.allclose(alone[0], planned[1], atol=1e-6)


def test_importance_cap_bans_and_top_k():
    base = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    planned = torch.log(torch.tensor([[0.05, 0.05, 0.1, 0.8]]))
    probs = sampling_probs(base, planned, temperature=1.0, importance_cap=2.0)
    raw = torch.minimum(torch.tensor([0.05, 0.05, 0.1, 0.8]), 2.0 * torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert torch.allclose(probs[0], raw / raw.sum())
    banned = torch.tensor([[False, False, False, True]])
    probs = sampling_probs(base, planned, temperature=1.0, importance_cap=None, banned=banned, top_k=2)
    assert probs[0, 3] == 0 and probs[0, 0] == 0 and math.isclose(float(probs.sum()), 1.0, rel_tol=1e-6)


def test_draw_depends_only_on_each_rows_generator():
    probs = torch.softmax(torch.randn(3, 30, generator=torch.Generator().manual_seed(2)), -1)
    gens = lambda: [torch.Generator().manual_seed(s) for s in (7, 8, 9)]  # noqa: E731
    together = draw(probs, gens(), top_k=10)
    assert together == draw(probs, gens(), top_k=10)
    assert draw(probs[2:], [torch.Generator().manual_seed(9)], top_k=10) == together[2:]
    with pytest.raises(ValueError, match="generators"):
        draw(probs, gens()[:2])


# --- cache --------------------------------------------------------------------------------------------------------


def test_cache_round_trip_through_the_file(tmp_path):
    cache = AugmentationCache(tmp_path, "ns")
    assert cache.get("ref", "ctx", 0.2) is None
    cache.put([("ref", "ctx", 0.2, "aug a"), ("ref", "", 0.2, "aug b")])
    again = AugmentationCache(tmp_path, "ns")
    assert again.get("ref", "ctx", 0.2) == "aug a" and again.get("ref", "", 0.2) == "aug b"
    assert again.get("ref", "ctx", 0.4) is None and len(again) == 2
    assert AugmentationCache(tmp_path, "other").get("ref", "ctx", 0.2) is None
    (tmp_path / "ns.aug.jsonl").open("a").write('{"k": "cut off')  # a kill in the middle of an append
    assert len(AugmentationCache(tmp_path, "ns")) == 2
    (tmp_path / "ns.aug.jsonl").open("a").write("not json\n")  # a whole unreadable line: corrupt, named
    with pytest.raises(ValueError, match="ns.aug.jsonl, line 4: not a"):
        len(AugmentationCache(tmp_path, "ns"))
    (tmp_path / "other.aug.jsonl").rename(tmp_path / "renamed.aug.jsonl")  # another config's file
    with pytest.raises(ValueError, match="made with another augmentation config"):
        len(AugmentationCache(tmp_path, "renamed"))


# --- real references (shared data) --------------------------------------------------------------------------------


def _data_root():
    import os
    from pathlib import Path

    return Path(os.environ.get("NLGMETRICS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def test_roc_story_templates_keep_the_context_sentence():
    import json

    path = _data_root() / "judgments" / "story_union_rocstories.jsonl"
    if not path.is_file():
        pytest.skip(f"shared data not found at {path}; set NLGMETRICS_DATA")
    from mars.masking import analyse
    from nlgmetrics.modelroles import load_spacy

    rows = [json.loads(line) for line, _ in zip(path.open(encoding="utf-8"), range(5))]
    nlp, idf, config = load_spacy("packaged:en_core_web_sm"), load_idf(), MaskingConfig()
    for row in rows:
        reference = analyse(nlp, [row["refs"][0]])[0]
        context = analyse(nlp, [row["src"]], tag=False)[0]
        templates = build_templates(reference, context.words, config.ratios, idf, config)
        n_words = sum(1 for w in reference.words if w.strip())
        masked = [t.n_masked for t in templates]
        assert masked == sorted(masked) and masked[0] == 0 and masked[-1] > 0
        costs = mask_costs(reference.words, context.words, config)
        for t in templates:
            budget = math.floor(t.ratio * n_words + 1e-9)
            mask = [False] * len(reference.words)
            position = 0
            for block in t.blocks:  # recover which words the template masked
                n = block.n_words if isinstance(block, Blank) else len(analyse(nlp, [block.text], tag=False)[0].words)
                for k in range(position, position + n):
                    mask[k] = isinstance(block, Blank)
                position += n
            assert position == len(reference.words)
            assert sum(c for c, m in zip(costs, mask) if m) <= budget  # the knapsack budget holds
            assert t.original() == row["refs"][0].strip()
        assert templates[1].display().startswith(row["src"].split(" .")[0][:20])  # 20%: context words survive
