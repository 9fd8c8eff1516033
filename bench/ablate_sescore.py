"""SEScore recipe ablation on the dev mix: which training choice helps, decided on the select half.

Each arm is ``train.py fit --config configs/sescore/fit_offline_v2.yaml`` plus a few overrides, exported to
``runs/sescore/ablation/<arm>`` (never the shipped folder). Every export, and the shipped checkpoint as the
starting point, is then scored by ``evaluate.py devmix`` against BERTScore with the same encoder: tau-like per
set, paired item bootstrap, and the mix row (items resampled within each set). Decisions use ``--half select``;
``--half report`` is for the numbers a README publishes once the recipe is fixed.

    python bench/ablate_sescore.py [--arms v2,no_rank,no_rules] [--max-steps 730] [--val-every 243] [--half select]
    python bench/ablate_sescore.py --arms v2_me5 --init-logits 8 --init-encoder packaged:me5-small \
        --name sescore_ablation_me5_select        # the encoder lever: me5-small, untrained start and trained
    python bench/ablate_sescore.py --arms v2_me5 --init-logits 8 --init-encoder packaged:me5-small \
        --interpolate init_last8_me5-small:v2_me5:0.25,0.5,0.75 --name sescore_interpolation_me5_select
    python bench/ablate_sescore.py --arms v2_mpnet --init-logits 8 --init-encoder packaged:mpnet \
        --interpolate own:v2_mpnet:0.5 --name sescore_ablation_mpnet_select   # the encoder lever: mpnet
    python bench/ablate_sescore.py --arms v2_thumb --init-logits 8 --interpolate init_last8:v2_thumb:0.5 \
        --name sescore_ablation_thumb_select     # in-domain synthesis (THumB references, below)
    python bench/ablate_sescore.py --arms v2,v2_seed14,v2_seed15 --name sescore_seeds_select   # training-seed spread
    python bench/ablate_sescore.py --arms v2,v2_seed14,v2_seed15 --init-logits 8 --interpolate init_last8:v2:0.5 \
        --interpolate init_last8:v2_seed14:0.5 --interpolate init_last8:v2_seed15:0.5 \
        --name sescore_interpolation_seeds_select                  # is half-way better than the end, seed by seed?
    python bench/ablate_sescore.py --arms v2,v2_seed14,v2_seed15 --init-logits 8 --interpolate init_last8:v2:0.5 \
        --interpolate init_last8:v2_seed14:0.5 --interpolate init_last8:v2_seed15:0.5 \
        --interpolate own:v2:0.5 --interpolate own:v2_seed14:0.5 --interpolate own:v2_seed15:0.5 \
        --ensemble seeds=v2+v2_seed14+v2_seed15 --ensemble seeds_w0.5=v2_w0.5+v2_seed14_w0.5+v2_seed15_w0.5 \
        --ensemble seeds_own_w0.5=v2_own_w0.5+v2_seed14_own_w0.5+v2_seed15_own_w0.5 \
        --name sescore_ensemble_seeds_select      # the seeds' scores averaged; half-way from each run's own start
    python bench/ablate_sescore.py --arms "" --half report --ensemble seeds_w0.5=v2_w0.5+v2_seed14_w0.5+v2_seed15_w0.5 \
        --ensemble seeds_own_w0.5=v2_own_w0.5+v2_seed14_own_w0.5+v2_seed15_own_w0.5 \
        --name sescore_ensemble_report            # the default question (README): shipped vs ensembles, report half

The default's ablations, built as the default is (three seeds, each half-way from its own start, scores averaged;
ABL one of no_severity, no_rank, no_rules), then every ensemble once on the report half (README "SEScore" table):

    python bench/ablate_sescore.py --arms ABL,ABL_seed14,ABL_seed15 --interpolate own:ABL:0.5 \
        --interpolate own:ABL_seed14:0.5 --interpolate own:ABL_seed15:0.5 \
        --ensemble ABL_seeds_own_w0.5=ABL_own_w0.5+ABL_seed14_own_w0.5+ABL_seed15_own_w0.5 \
        --ensemble seeds_own_w0.5=v2_own_w0.5+v2_seed14_own_w0.5+v2_seed15_own_w0.5 \
        --name sescore_default_ablations_ABL_select
    python bench/ablate_sescore.py --arms "" --half report \
        --ensemble no_severity_seeds_own_w0.5=no_severity_own_w0.5+no_severity_seed14_own_w0.5+\
no_severity_seed15_own_w0.5 \
        --ensemble no_rank_seeds_own_w0.5=no_rank_own_w0.5+no_rank_seed14_own_w0.5+no_rank_seed15_own_w0.5 \
        --ensemble seeds_own_w0.5=v2_own_w0.5+v2_seed14_own_w0.5+v2_seed15_own_w0.5 \
        --name sescore_default_ablations_report

The arms' data: the first 1,536 sentences of the two-domain input, synthesised once with the v2 recipe (steps 1
and 2 of the default's packaged recipe, docs/guides/sescore-training.md) and once with the v1 recipe (no rule
edits, no swaps), so "no_rules" sees the same references as the others:

    python train.py synthesize sentences --config configs/sescore/mpnet_v2_sentences.yaml
    python train.py synthesize --config configs/sescore/mpnet_v2_synthesize.yaml   # -> runs/sescore/mpnet-v2/synthesis
    python train.py synthesize --config configs/sescore/offline_en.yaml --limit 1536 \
        --input runs/sescore/mpnet-v2/sentences.txt --output runs/sescore/synthesis_offline_en_mix_1536

(Result files before 2026-12-04 name the v2 data ``runs/sescore/synthesis_offline_en_v2_1536``: the same
sentences and recipe, written by ``synthesize sentences --input ... --take 4000`` and ``synthesize --config
configs/sescore/offline_en_v2.yaml --limit 1536``.)

Issue 56's levers (docs/guides/experiments.md has the rule that decides them, written before they ran), each with
seeds 13 and 14 beside the baseline ``v2``/``v2_seed14``, built half-way from their own starts:

    python bench/ablate_sescore.py --arms v2,v2_seed14,v2_chrf,v2_chrf_seed14 --interpolate own:v2:0.5 \
        --interpolate own:v2_seed14:0.5 --interpolate own:v2_chrf:0.5 --interpolate own:v2_chrf_seed14:0.5 \
        --screen v2_chrf_own_w0.5:v2_own_w0.5 --screen v2_chrf_seed14_own_w0.5:v2_seed14_own_w0.5 \
        --no-shipped --name sescore_lever_chrf_select

The labeller lever's data (the same sentences; ``offline_en_v2_nli_mpnet.yaml`` is offline_en_v2 with severity
from ``packaged:nli-mpnet``, threshold calibrated by ``synthesize calibrate``), then its arms as above:

    python train.py synthesize --config configs/sescore/offline_en_v2_nli_mpnet.yaml --limit 1536 \
        --input runs/sescore/mpnet-v2/sentences.txt --output runs/sescore/synthesis_v2_nli_mpnet_1536

and the retrieval lever's (offline_en_v2 plus SEScore2-style edits borrowed from each sentence's nearest neighbour
among all 8,000 input lines):

    python train.py synthesize --config configs/sescore/offline_en_v2_neighbours.yaml --limit 1536 \
        --input runs/sescore/mpnet-v2/sentences.txt --output runs/sescore/synthesis_v2_neighbours_1536

``--screen LEVER:BASE`` (one per seed) applies the screening rule to those row pairs and records the verdict.
The domain arm (``v2_news``: the same recipe on news sentences only, against v2's news + WikiText) reads

    python train.py synthesize sentences --input ../shared/data/corpus/news_en.txt --take 1536 --min-words 4 \
        --output runs/sescore/inputs/news_only_en.txt
    python train.py synthesize --config configs/sescore/offline_en_v2.yaml --limit 1536 \
        --input runs/sescore/inputs/news_only_en.txt --output runs/sescore/synthesis_v2_news_1536

A lever on the v2 data needs no synthesis, and under the amendment of docs/guides/experiments.md its bases may be
the committed rows of an earlier lever run on the same CPU model (``--screen-base``), so it costs two fits:

    python bench/ablate_sescore.py --arms v2_nli_inputs,v2_nli_inputs_seed14 --interpolate own:v2_nli_inputs:0.5 \
        --interpolate own:v2_nli_inputs_seed14:0.5 --screen v2_nli_inputs_own_w0.5:v2_own_w0.5 \
        --screen v2_nli_inputs_seed14_own_w0.5:v2_seed14_own_w0.5 --screen-base sescore_lever_chrf_select \
        --no-shipped --name sescore_lever_nli_inputs_select

The steps lever (``v2_steps2x``: two epochs of the same triples, 1,460 steps) is screened the same way; its fits
take about twice as long as the baseline's:

    python bench/ablate_sescore.py --arms v2_steps2x,v2_steps2x_seed14 --interpolate own:v2_steps2x:0.5 \
        --interpolate own:v2_steps2x_seed14:0.5 --screen v2_steps2x_own_w0.5:v2_own_w0.5 \
        --screen v2_steps2x_seed14_own_w0.5:v2_seed14_own_w0.5 --screen-base sescore_lever_chrf_select \
        --no-shipped --name sescore_lever_steps2x_select

The second screen of a lever whose fits moved more than its half-way rows (amendment 2 of
docs/guides/experiments.md): fresh seeds 15 and 16, lever and baseline refitted in one session, the fits as
exported (no interpolation):

    python bench/ablate_sescore.py --arms v2_seed15,v2_seed16,v2_nli_inputs_seed15,v2_nli_inputs_seed16 \
        --screen v2_nli_inputs_seed15:v2_seed15 --screen v2_nli_inputs_seed16:v2_seed16 \
        --no-shipped --name sescore_lever_nli_inputs_fresh_select

A lever that passes its second screen is confirmed on MPNet as exported (step 2 of the rule; ``--confirm`` reads
the bar, ``mpnet-v2``'s select-half row, from its committed file). An MPNet fit takes longer than a working session
allows, so it runs in pieces: ``--budget-minutes`` ends the run's fitting after that long with the state saved
(exit 75, nothing scored); the same command continues, and scores once the fit is finished:

    python bench/ablate_sescore.py --arms v2_mpnet_nli_inputs --budget-minutes 70 --no-shipped \
        --confirm v2_mpnet_nli_inputs=sescore_ablation_mpnet_select:v2_mpnet_own_w0.5 \
        --name sescore_lever_nli_inputs_mpnet_select

The in-domain arm ``v2_thumb`` synthesises the same way from the references of the THumB CNN/DM stress set
(not in the dev mix; 11 of its 1,000 references are also SummEval references):

    python train.py synthesize sentences --input ../shared/data/judgments/summ_thumb_cnndm_10refs.jsonl:refs \
        --output runs/sescore/inputs/thumb_refs_en.txt
    python train.py synthesize --config configs/sescore/offline_en_v2.yaml --limit 1536 \
        --input runs/sescore/inputs/thumb_refs_en.txt --output runs/sescore/synthesis_offline_en_v2_thumb_1536

An arm whose fit finished (``<arm>.done.json``) is not retrained, and a killed fit continues from its last resume
state (``<arm>.resume/``, every 100 steps), so rerunning the same command resumes; an arm whose dataset is missing
is reported as not run. Training logs go to ``runs/sescore/ablation/<arm>.log``.
Each row records its cost: the fit's wall and CPU seconds (CPU: user + system of the train.py process) and the
scoring's wall seconds. Writes bench/results/sescore_ablation_<half>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO, children_cpu_seconds, cpu_model, write_results  # noqa: E402
from nlgmetrics.resume import PieceEnded  # noqa: E402

CONFIG = "configs/sescore/fit_offline_v2.yaml"
V2_DATA = "runs/sescore/mpnet-v2/synthesis"  # steps 1-2 of the default's recipe (see the docstring)
# the default's step 1 file synthesised to 3,072 sentences (docstring; amendment 3 of docs/guides/experiments.md)
V2_3072 = "runs/sescore/synthesis_v2_3072"
V2_ROWS = ["--data.limit", "15360"]  # the first 15,360 rows of V2_3072: the v2 data (rows do not depend on --limit)
BF16_FIT = ["--trainer.precision", "bf16-mixed"]  # Lightning's bfloat16 autocast; weights and optimizer stay float32
# arm -> (what it tests, dataset, overrides of the v2 recipe)
ARMS: dict[str, tuple[str, str, list[str]]] = {
    "v2": ("v2 recipe: rule edits, ranking loss 0.1, dev-mix selection", V2_DATA, []),
    "no_rank": ("without the ranking loss (rank_weight 0)", V2_DATA, ["--model.rank_weight", "0"]),
    "rank_only": ("ranking loss 1.0 (ranking dominates)", V2_DATA, ["--model.rank_weight", "1.0"]),
    "no_severity": ("every edit -1 (paper's w/o severity)", V2_DATA, ["--data.labels", "uniform"]),
    "no_rules": (
        "same inputs synthesised without rule edits (offline_en recipe)",
        "runs/sescore/synthesis_offline_en_mix_1536",
        [],
    ),
    # the same recipe and data with other training seeds (initialisation, dropout, data order): how far recipe
    # rows can differ by training randomness alone, which the item bootstrap does not see
    "v2_seed14": ("v2 recipe, training seed 14", V2_DATA, ["--seed_everything", "14", "--data.shuffle_seed", "14"]),
    "v2_seed15": ("v2 recipe, training seed 15", V2_DATA, ["--seed_everything", "15", "--data.shuffle_seed", "15"]),
    # fresh seeds for a second screen (amendment 2 of docs/guides/experiments.md), unseen by the first
    "v2_seed16": ("v2 recipe, training seed 16", V2_DATA, ["--seed_everything", "16", "--data.shuffle_seed", "16"]),
    "v2_thumb": (
        "v2 recipe on 1,536 sentences of THumB CNN/DM references (news summaries: SummEval's domain)",
        "runs/sescore/synthesis_offline_en_v2_thumb_1536",
        [],
    ),
    "v2_me5": (
        "v2 recipe on packaged:me5-small (the default BERTScore encoder) instead of MiniLM",
        V2_DATA,
        ["--model.encoder", "packaged:me5-small"],
    ),
    # the other encoder role; LoRA reaches MPNet's attention (attn.q/k/v/o) since the shared pattern of
    # nlgmetrics.modelroles.lora (a BERT-only pattern adapted its feed-forward layers alone)
    "v2_mpnet": (
        "v2 recipe on packaged:mpnet (all-mpnet-base-v2, 12 layers, 768-d) instead of MiniLM",
        V2_DATA,
        ["--model.encoder", "packaged:mpnet"],
    ),
    # issue 56, step 2 of the rule (confirmation on MPNet) for the NLI-inputs lever, which passed its second screen
    "v2_mpnet_nli_inputs": (
        "v2 recipe on packaged:mpnet + NLI probabilities of packaged:nli-minilm as head inputs (model.nli)",
        V2_DATA,
        ["--model.encoder", "packaged:mpnet", "--model.nli", "packaged:nli-minilm"],
    ),
    # issue 56: the learned combination, trained on synthetic triples only: sentence chrF as a head input beside
    # the alignment's P/R/F1 (and in its skip, starting at weight 0)
    "v2_chrf": ("v2 recipe + chrF as a head input (model.lexical [chrf])", V2_DATA, ["--model.lexical", "[chrf]"]),
    # issue 56: the same combination with an NLI model's view of the pair: P(entailment), P(contradiction) in both
    # directions from the labeller's model (nli-minilm), frozen, beside P/R/F1 (and in the skip, starting at 0)
    "v2_nli_inputs": (
        "v2 recipe + NLI probabilities of packaged:nli-minilm as head inputs (model.nli)",
        V2_DATA,
        ["--model.nli", "packaged:nli-minilm"],
    ),
    # issue 56: severity from the stronger NLI model; the same sentences and synthesis seed, another labeller
    "v2_nli_mpnet": (
        "v2 recipe with severity labels from packaged:nli-mpnet (offline_en_v2_nli_mpnet.yaml)",
        "runs/sescore/synthesis_v2_nli_mpnet_1536",
        [],
    ),
    # issue 56: the second domain, isolated. The v2 data interleave news and WikiText sentences (768 of each in
    # the first 1,536 lines); this arm synthesises from the first 1,536 news sentences alone, same recipe and seed
    "v2_news": (
        "v2 recipe on 1,536 news sentences only (no WikiText)",
        "runs/sescore/synthesis_v2_news_1536",
        [],
    ),
    # issue 56: more steps on the same data, the part of the "more data and steps" lever this CPU can afford in
    # float32 (bfloat16, which would make it cheap, needs AVX512-BF16 or AMX): two epochs of the v2 triples, twice
    # the optimizer steps of the run (STEPS_FACTOR), each epoch in a new seeded order
    "v2_steps2x": ("v2 recipe, two epochs (twice the steps)", V2_DATA, ["--trainer.max_epochs", "2"]),
    # issue 56, the bfloat16 half of "more data and steps at equal cost" (amendment 3 of docs/guides/experiments.md):
    # one synthesis of the first 3,072 sentences of step 1's file. Synthesis rows do not depend on --limit, so its
    # first 15,360 rows are the v2 data: the baseline (``v2_cut``) reads those, the lever all 30,720 rows for twice
    # the steps (one pass) in bfloat16 autocast, and ``v2_cut_bf16`` isolates the precision (same data and steps)
    "v2_cut": (
        "v2 recipe on the first 15,360 rows of the 3,072-sentence synthesis",
        V2_3072,
        V2_ROWS,
    ),
    "v2_cut_bf16": (
        "v2 recipe (first 15,360 rows), fitted in bfloat16 autocast",
        V2_3072,
        [*V2_ROWS, *BF16_FIT],
    ),
    "v2_bf16_data2x": (
        "v2 recipe on 3,072 sentences (30,720 rows), twice the steps, bfloat16 autocast",
        V2_3072,
        BF16_FIT,
    ),
    # issue 56: realistic errors in the SEScore2 way, retrieval edits from each sentence's nearest neighbour
    "v2_neighbours": (
        "v2 recipe + retrieval edits from nearest-neighbour sentences (offline_en_v2_neighbours.yaml)",
        "runs/sescore/synthesis_v2_neighbours_1536",
        [],
    ),
}
# The default before mpnet-v2 (minilm-v2) averages three seeds, so its ablations are built the same way: each arm with
# training seeds 14 and 15 as well (`<arm>_seed14`, `<arm>_seed15`), then half-way points and their ensemble; seed 16
# is the second screen's fresh seed beside 15.
for _arm in (
    "no_rank",
    "no_severity",
    "no_rules",
    "v2_chrf",
    "v2_nli_inputs",
    "v2_nli_mpnet",
    "v2_neighbours",
    "v2_news",
    "v2_steps2x",
    "v2_cut",
    "v2_cut_bf16",
    "v2_bf16_data2x",
):
    _what, _data, _overrides = ARMS[_arm]
    for _seed in ("14", "15", "16"):
        ARMS[f"{_arm}_seed{_seed}"] = (
            f"{_what}, training seed {_seed}",
            _data,
            [*_overrides, "--seed_everything", _seed, "--data.shuffle_seed", _seed],
        )
# arms (and their seed variants) trained for this multiple of the run's --max-steps
STEPS_FACTOR = {"v2_steps2x": 2, "v2_bf16_data2x": 2}
# arms whose dataset holds this multiple of the v2 rows: one epoch of theirs is that many v2 epochs of steps
DATA_FACTOR = {"v2_bf16_data2x": 2}


def arm_steps(arm: str, max_steps: int) -> int:
    """The optimizer steps of one arm: the run's ``--max-steps`` times the factor of the arm or its seed family."""
    family = arm.rsplit("_seed", 1)[0]
    return max_steps * STEPS_FACTOR.get(arm, STEPS_FACTOR.get(family, 1))


V1 = "sescore/checkpoints/minilm-news"  # the first shipped checkpoint (result files before minilm-v2: "shipped")
MINILM_V2 = "sescore/checkpoints/minilm-v2"  # the default before mpnet-v2: an ensemble folder (result files: "default")
DEFAULT = "sescore/checkpoints/mpnet-v2"  # the shipped default: v2_mpnet_own_w0.5 stored as float16
# ``--interpolate own:ARM:w`` starts from ARM's own initialisation: the same fit command (config, data, seed) run for
# one step with the encoder's learning rate 0 and the head's 1e-30, exported by the fit's first dev check. WiSE-FT's
# path runs from the weights training started at; an export built apart (init_last<logit>) shares the start's
# function (its head's last layer is zero) but not its hidden head layers, which interpolation then averages with
# an unrelated random draw. (The head's lr cannot be 0: the optimiser refuses it; 1e-30 moves weights by ~1e-30.)
OWN_START = ["--model.encoder_lr", "0", "--model.head_lr", "1e-30"]
# the screening rule of docs/guides/experiments.md (issue 56), fixed before its arms ran
SCREEN_MEAN = 0.010
CONFIRM_NOT_BETTER = 0.05  # step 2: the lever on MPNet must also be "not better" in under 5% of resamples


def committed_result(name: str) -> dict | None:
    """The committed result file ``bench/results/<name>.json``, or None when there is none."""
    path = REPO / "bench" / "results" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def committed_bases(name: str, bases: list[str], details: dict, half: str) -> dict:
    """Base rows of an earlier result file for ``--screen`` (the amendment of docs/guides/experiments.md).

    Why: refitting the baseline beside every lever costs two MiniLM fits, and the chrF run's baseline rows
    reproduced an earlier session's to within 0.0002. A committed row stands in only on the same half and the same
    CPU model (bfloat16 and kernel choices differ between CPUs); rows this run scored itself always win.

    Args:
        name: a file stem under bench/results (``sescore_lever_chrf_select``).
        bases: the base row names ``--screen`` asks for.
        details: this run's scored rows (not changed).
        half: this run's dev-mix half.

    Returns:
        The missing base rows by name, each as the earlier file holds it.
    """
    earlier = committed_result(name)
    if earlier is None:
        raise SystemExit(f"--screen-base {name}: no bench/results/{name}.json")
    if earlier.get("half") != half:
        raise SystemExit(f"--screen-base {name}: scored on the {earlier.get('half')} half, this run on the {half} half")
    here, there = cpu_model(), (earlier.get("machine") or {}).get("processor")
    if here != there:
        raise SystemExit(f"--screen-base {name}: measured on '{there}', this machine is '{here}'; refit the base arms")
    wanted = [b for b in dict.fromkeys(bases) if b not in details]
    missing = [b for b in wanted if b not in earlier.get("details", {})]
    if missing:
        raise SystemExit(f"--screen-base {name}: has no rows {missing}")
    return {b: earlier["details"][b] for b in wanted}


def set_deltas(lever: dict, base: dict) -> dict[str, float]:
    """Per dev-mix set, the lever row's tau-like minus the base row's: where a lever helps or hurts (e.g. MT or
    only the other sets). BERTScore's rows are the same for both, so this is also the change of the set's
    difference against BERTScore."""
    base_tau = {entry["set"]: entry["tau_like_a"] for entry in base.get("sets", [])}
    return {
        entry["set"]: entry["tau_like_a"] - base_tau[entry["set"]]
        for entry in lever.get("sets", [])
        if entry["set"] in base_tau
    }


def mean_set_deltas(pairs: list[dict[str, float]]) -> dict[str, float]:
    """The mean over screened pairs of their ``set_deltas``, for the sets every pair has."""
    names = [name for name in pairs[0] if all(name in pair for pair in pairs)] if pairs else []
    return {name: sum(pair[name] for pair in pairs) / len(pairs) for name in names}


def screen(pairs: list[tuple[str, str]], details: dict) -> dict:
    """The screening verdict for (lever row, base row) pairs, one per training seed.

    Args:
        pairs: row names; each row's ``mean.difference`` is its dev-mix tau-like minus BERTScore's.
        details: the rows' devmix results by name.

    Returns:
        Per-pair deltas, their mean, the rule and whether the lever passes it.
    """
    missing = [name for pair in pairs for name in pair if name not in details]
    if missing:
        raise SystemExit(f"--screen: no scored row {sorted(set(missing))} in this run (or --screen-base)")
    rows = [
        {
            "lever": lever,
            "base": base,
            "delta": details[lever]["mean"]["difference"] - details[base]["mean"]["difference"],
            "sets": set_deltas(details[lever], details[base]),
        }
        for lever, base in pairs
    ]
    mean = sum(r["delta"] for r in rows) / len(rows)
    return {
        "pairs": rows,
        "mean_delta": mean,
        "mean_sets": mean_set_deltas([r["sets"] for r in rows]),
        "rule": f"mean delta >= {SCREEN_MEAN:+.3f} and every delta > 0 (docs/guides/experiments.md)",
        "passes": bool(mean >= SCREEN_MEAN and all(r["delta"] > 0 for r in rows)),
    }


def confirm(lever: str, bar_spec: str, details: dict, half: str) -> dict:
    """Step 2 of the rule (confirmation on MPNet): the lever's row against a committed bar row.

    Why: the bar is the number the rule names (``mpnet-v2``'s select-half mix difference, measured as
    ``v2_mpnet_own_w0.5`` in ``sescore_ablation_mpnet_select``), read from its file rather than typed in.

    Args:
        lever: a row this run scored.
        bar_spec: ``RESULT:ROW``, a row of ``bench/results/RESULT.json`` on the same half.
        details: this run's scored rows.
        half: this run's dev-mix half.

    Returns:
        Both differences, the lever's not-better share, the rule and whether the lever becomes the candidate.
    """
    name, _, row = bar_spec.partition(":")
    earlier = committed_result(name) if row else None
    if earlier is None:
        raise SystemExit(f"--confirm {lever}={bar_spec}: write LEVER=RESULT:ROW with a file bench/results/RESULT.json")
    if earlier.get("half") != half or row not in earlier.get("details", {}):
        raise SystemExit(f"--confirm: {name} has no {half}-half row {row}")
    if lever not in details:
        raise SystemExit(f"--confirm: no scored row {lever} in this run")
    mean, bar = details[lever]["mean"], earlier["details"][row]["mean"]
    return {
        "lever": lever,
        "difference": mean["difference"],
        "not_better": mean["share_a_not_better"],
        "bar": {"file": f"bench/results/{name}.json", "row": row, "difference": bar["difference"]},
        "rule": f"difference > the bar's and not better in under {CONFIRM_NOT_BETTER:.0%} of resamples "
        "(docs/guides/experiments.md, step 2)",
        "passes": bool(mean["difference"] > bar["difference"] and mean["share_a_not_better"] < CONFIRM_NOT_BETTER),
    }


def fit_arm(
    arm: str,
    dataset: str,
    overrides: list[str],
    max_steps: int,
    val_every: int,
    root: Path,
    piece_minutes: float | None = None,
) -> dict:
    """Train one arm unless it already finished; returns its status record.

    With ``piece_minutes`` the fit runs for at most that long (``--resume.stop_after_minutes``) and a piece that
    ends before the last step returns status ``piece ended``; the next call continues it. Every run's cost goes
    to ``<arm>.pieces.json`` and the finished record sums them, so an arm fitted in pieces states its whole cost.
    """
    done = root / f"{arm}.done.json"
    if done.exists():
        return json.loads(done.read_text())
    if not (REPO / dataset / "state.json").is_file():  # save_to_disk writes it last; a running synthesis has none
        return {"arm": arm, "status": f"not run: dataset {dataset} missing or unfinished"}
    state = root / f"{arm}.resume" / "last.safetensors"  # a killed fit continues from its last resume state
    command = [
        sys.executable,
        "train.py",
        "fit",
        "--config",
        CONFIG,
        "--data.dataset",
        dataset,
        *overrides,
        "--trainer.max_steps",
        str(max_steps),
        "--trainer.val_check_interval",
        str(val_every),
        "--trainer.enable_progress_bar",
        "false",
        "--export.dirpath",
        str(root / arm),
        "--trainer.logger.init_args.save_dir",
        str(root / "logs"),
        "--trainer.logger.init_args.name",
        arm,
        "--resume.dirpath",
        str(state.parent),
        *(["--resume.stop_after_minutes", f"{piece_minutes:g}"] if piece_minutes is not None else []),
    ]
    resumed = state.is_file()
    started, cpu_before = time.time(), children_cpu_seconds()
    with open(root / f"{arm}.log", "a", encoding="utf-8") as log:
        run = [*command, *(["--ckpt_path", str(state)] if resumed else [])]
        status = subprocess.run(run, cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode
    piece = {
        "seconds": round(time.time() - started, 1),
        "cpu_seconds": round(children_cpu_seconds() - cpu_before, 1),
        "exit": status,
        "resumed": resumed,
    }
    ledger = root / f"{arm}.pieces.json"
    pieces = [*(json.loads(ledger.read_text()) if ledger.is_file() else []), piece]
    ledger.write_text(json.dumps(pieces, indent=1))
    if status == PieceEnded.EXIT_STATUS:
        outcome = f"piece ended ({piece_minutes:g} minutes); rerun the same command to continue"
    else:
        outcome = "fit" if status == 0 else f"fit failed (exit {status}, see {arm}.log)"
    record = {
        "arm": arm,
        "status": outcome,
        "command": " ".join(command[1:]),
        "seconds": round(sum(p["seconds"] for p in pieces), 1),
        "cpu_seconds": round(sum(p["cpu_seconds"] for p in pieces), 1),
        "runs": len(pieces),
    }
    if status == 0:
        done.write_text(json.dumps(record, indent=1))
    return record


def export_init(folder: Path, last_logit: float, encoder: str | None = None) -> None:
    """The v2 architecture before any training, exported like a trained checkpoint (the 'before training' row).

    With token alignment the untrained model is F1 on the layer-mixed states; ``last_logit`` moves the mix's
    start from the plain average of all layers towards the last layer, the one BERTScore reads.
    """
    import yaml

    from nlgmetrics.resources import config_path
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    if (folder / "hparams.yaml").exists():
        return
    import torch

    model = yaml.safe_load(config_path(CONFIG).read_text())["model"]
    model["layer_mix_last_logit"] = float(last_logit)
    model["encoder"] = encoder or model["encoder"]
    # LoRA's A and the head's hidden layers start random; this export's scores do not depend on them (B and the
    # head's last layer are zero), but an interpolation from it does (see OWN_START). Seeded: the same file every run
    with torch.random.fork_rng():
        torch.manual_seed(0)
        regressor = SEScoreModule(**model).regressor.eval()
    export_checkpoint(
        regressor, str(folder), {"selected": f"initialisation (no training), layer_mix_last_logit {last_logit}"}
    )


def devmix(checkpoints: str | list[str], half: str, cache: str) -> dict:
    """``evaluate.py devmix`` of one SEScore checkpoint, or the mean of several, against BERTScore (their shared
    encoder): its JSON line."""
    from sescore.regressor.checkpoint import read_hparams
    from sescore.scorer import checkpoint_folders

    folders = [checkpoints] if isinstance(checkpoints, str) else list(checkpoints)
    encoders = sorted({read_hparams(folder)["encoder"] for folder in checkpoint_folders(folders)})
    if len(encoders) > 1:
        raise SystemExit(f"an ensemble is compared with BERTScore on its encoder; these use {encoders}")
    command = [
        sys.executable,
        "evaluate.py",
        "devmix",
        "--half",
        half,
        "--metric",
        "sescore",
        "--checkpoint",
        *folders,
        "--versus",
        "bertscore",
        "--encoder",
        encoders[0],
        "--cache",
        cache,
        "--quiet",
    ]
    out = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"devmix failed for {folders}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arms", default="v2,no_rank,no_rules", help=f"comma-separated, from {', '.join(ARMS)}")
    parser.add_argument("--max-steps", type=int, default=730, help="optimizer steps per arm (730: one epoch here)")
    parser.add_argument("--val-every", type=int, default=243, help="dev-mix validation every N training batches")
    parser.add_argument("--half", choices=["select", "report"], default="select")
    parser.add_argument(
        "--init-logits",
        default="",
        help="also score the untrained model with these layer_mix_last_logit values, e.g. 0,4,8",
    )
    parser.add_argument(
        "--init-encoder",
        default=None,
        help="encoder of the untrained models (default: the recipe's, MiniLM); folders get its name",
    )
    parser.add_argument(
        "--interpolate",
        action="append",
        default=[],
        help="START:TRAINED:w1,w2 - also score checkpoints w of the way from the untrained export "
        "START to the trained export TRAINED (folders under --root; WiSE-FT); START 'own': "
        "TRAINED's own initialisation (TRAINED must be an arm); repeatable",
    )
    parser.add_argument(
        "--ensemble",
        action="append",
        default=[],
        help="NAME=FOLDER+FOLDER[+...] - also score the mean of these exports' scores (folders under "
        "--root, e.g. v2+v2_seed14+v2_seed15: a seed ensemble); repeatable",
    )
    parser.add_argument(
        "--screen",
        action="append",
        default=[],
        help="LEVER:BASE - rows compared by the screening rule of docs/guides/experiments.md (one pair per "
        "training seed): the lever passes when its mix difference vs BERTScore beats the base's by at least "
        f"{SCREEN_MEAN:+.3f} on average and by more than 0 for every pair; repeatable",
    )
    parser.add_argument(
        "--screen-base",
        default=None,
        metavar="RESULT",
        help="take --screen base rows this run does not score from bench/results/RESULT.json (same half and CPU "
        "model only; the amendment of docs/guides/experiments.md), e.g. sescore_lever_chrf_select",
    )
    parser.add_argument(
        "--no-shipped",
        action="store_true",
        help="leave out the shipped checkpoints' rows (scoring mpnet-v2 on the select half costs ~10 minutes)",
    )
    parser.add_argument(
        "--confirm",
        default=None,
        metavar="LEVER=RESULT:ROW",
        help="step 2 of the rule of docs/guides/experiments.md: row LEVER becomes the candidate when its mix "
        "difference is larger than ROW's of bench/results/RESULT.json and its not-better share under 5%%, e.g. "
        "v2_mpnet_nli_inputs=sescore_ablation_mpnet_select:v2_mpnet_own_w0.5",
    )
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="fit for at most this long in this run: a fit still going then saves its state and stops (exit 75, "
        "nothing scored or written); the same command continues it (an MPNet arm in pieces of a working session)",
    )
    parser.add_argument("--name", default=None, help="result file stem (default sescore_ablation_<half>)")
    parser.add_argument("--root", default="runs/sescore/ablation")
    parser.add_argument("--cache", default="runs/devmix_cache")
    args = parser.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]  # --arms "" scores only shipped/untrained
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise SystemExit(f"unknown arms {unknown}; arms are {', '.join(ARMS)}")
    root = REPO / args.root
    root.mkdir(parents=True, exist_ok=True)
    # arms with NLI inputs (--model.nli) train and are scored on the same pairs in several processes: they share one
    # pair file per NLI model (sescore.regressor.model.nli_pair_file); a folder set by the caller wins
    from sescore.regressor.model import NLI_PAIRS_ENV

    os.environ.setdefault(NLI_PAIRS_ENV, str(root / "nli_pairs"))

    rows, details = [], {}
    candidates = [
        ("v1 (minilm-news)", "the first shipped checkpoint, the default before minilm-v2", V1, {"status": "shipped"}),
        (
            "minilm-v2",
            "three v2 seeds on MiniLM half-way from their own starts, scores averaged (the "
            "default before mpnet-v2; rows named 'default (minilm-v2)' in earlier result files)",
            MINILM_V2,
            {"status": "shipped"},
        ),
        (
            "default (mpnet-v2)",
            "the shipped default: the v2 recipe on MPNet half-way from its own start "
            "(v2_mpnet_own_w0.5), stored as float16",
            DEFAULT,
            {"status": "shipped"},
        ),
    ]
    if args.no_shipped:
        candidates = []
    for logit in [float(x) for x in args.init_logits.split(",") if x.strip()]:
        suffix = f"_{args.init_encoder.split(':')[-1]}" if args.init_encoder else ""
        folder = root / f"init_last{logit:g}{suffix}"
        export_init(folder, logit, args.init_encoder)
        candidates.append(
            (
                f"init_last{logit:g}{suffix}",
                f"v2 architecture untrained, layer_mix_last_logit {logit:g}"
                + (f", {args.init_encoder}" if args.init_encoder else ""),
                str(folder),
                {"status": "untrained"},
            )
        )
    deadline = time.time() + 60.0 * args.budget_minutes if args.budget_minutes is not None else None

    def budget() -> float | None:
        """Minutes left for the next fit (None: no budget); a spent budget ends the run like a piece."""
        if deadline is None:
            return None
        left = (deadline - time.time()) / 60.0
        if left <= 0:
            stop_for_budget("the budget was spent before the next fit started")
        return left

    def stop_for_budget(why: str) -> None:
        print(f"{why}: nothing scored or written; rerun the same command to continue", file=sys.stderr)
        raise SystemExit(PieceEnded.EXIT_STATUS)

    for arm in arms:
        what, dataset, overrides = ARMS[arm]
        record = fit_arm(arm, dataset, overrides, arm_steps(arm, args.max_steps), args.val_every, root, budget())
        if record["status"].startswith("piece ended"):
            stop_for_budget(f"{arm}: the fit's piece ended after {record['runs']} run(s), {record['seconds']:.0f} s")
        candidates.append((arm, what, str(root / arm), record))
    for spec in args.interpolate:
        from sescore.regressor.checkpoint import interpolate_checkpoints

        start, trained, weights = spec.split(":")
        own = start == "own"
        if own:  # the run's own initialisation, exported by the fit itself (see OWN_START)
            if trained not in ARMS:
                raise SystemExit(f"--interpolate own:{trained}: 'own' needs an arm name, one of {', '.join(ARMS)}")
            _, dataset, overrides = ARMS[trained]
            start = f"{trained}_start"
            record = fit_arm(start, dataset, [*overrides, *OWN_START], 1, 1, root, budget())
            if record["status"] != "fit":
                raise SystemExit(f"{start}: {record['status']}")
        for weight in [float(x) for x in weights.split(",") if x.strip()]:
            folder = root / (f"{trained}_own_w{weight:g}" if own else f"{trained}_w{weight:g}")
            if not (folder / "hparams.yaml").exists():
                interpolate_checkpoints(root / start, root / trained, weight, folder)
            candidates.append(
                (
                    folder.name,
                    f"{weight:g} of the way from {start} to {trained} (weight interpolation)",
                    str(folder),
                    {"status": "interpolated"},
                )
            )
    for spec in args.ensemble:
        name, _, members = spec.partition("=")
        folders = [m.strip() for m in members.split("+") if m.strip()]
        if not name or len(folders) < 2:
            raise SystemExit(f"--ensemble {spec!r}: write NAME=FOLDER+FOLDER[+...]")
        taken = {c[0] for c in candidates}
        if name in taken:  # a row name keys the result file's details: a second one would overwrite the first
            raise SystemExit(
                f"--ensemble {name}: that name is already a row of this table; name the ensemble "
                "apart from its members (e.g. <arm>_seeds_own_w0.5)"
            )
        missing = [f for f in folders if not (root / f / "hparams.yaml").is_file()]
        if missing:
            raise SystemExit(f"--ensemble {name}: no export under {root} for {missing}; fit or interpolate them first")
        candidates.append(
            (
                name,
                f"mean of the scores of {', '.join(folders)} (score-level ensemble)",
                [str(root / f) for f in folders],
                {"status": "ensemble"},
            )
        )
    for name, what, folder, record in candidates:
        row = {
            "arm": name,
            "what": what,
            "status": record["status"],
            "fit seconds": f"{record['seconds']:.0f}" if record.get("seconds") is not None else "-",
            "fit CPU seconds": f"{record['cpu_seconds']:.0f}" if record.get("cpu_seconds") is not None else "-",
        }
        if record["status"] in ("fit", "shipped", "untrained", "interpolated", "ensemble"):
            scored = time.time()
            result = devmix(folder, args.half, args.cache)
            row["score seconds"] = f"{time.time() - scored:.0f}"
            details[name] = result
            for s in result["sets"]:
                row[s["set"]] = f"{s['tau_like_a']:.3f} ({s['difference']:+.3f})"
            mean = result["mean"]
            row["mix difference vs BERTScore [95% CI]"] = (
                f"{mean['difference']:+.4f} [{mean['ci95'][0]:+.4f}, {mean['ci95'][1]:+.4f}]"
            )
            row["not better"] = f"{mean['share_a_not_better']:.1%}"
        rows.append(row)
    sets = [s["set"] for s in next(iter(details.values()))["sets"]] if details else []
    columns = [
        "arm",
        "what",
        "status",
        *sets,
        "mix difference vs BERTScore [95% CI]",
        "not better",
        "fit seconds",
        "fit CPU seconds",
        "score seconds",
    ]
    notes = [
        f"dev mix {args.half} half; per set: SEScore tau-like (difference to BERTScore with the checkpoint's own "
        "encoder on the same rows)",
        f"each arm: {args.max_steps} optimizer steps of {CONFIG} with its overrides, best export by the "
        f"dev-mix select-half tau-like checked every {args.val_every} batches",
    ]
    steps = {arm: arm_steps(arm, args.max_steps) for arm in arms}
    longer = [f"{arm} {n}" for arm, n in steps.items() if n != args.max_steps]
    if longer:
        notes.append("optimizer steps of the arms trained longer: " + ", ".join(longer))
    notes.append(
        "fit seconds, fit CPU seconds: wall and CPU (user + system) time of the train.py runs of the fit, summed "
        "over the runs this script recorded (pieces and resumes; a fit record without a run count, from before "
        "the ledger, counts its last run only, and a run killed together with this script is not counted); an "
        "arm fitted by an earlier run of this script shows that run's numbers; score seconds: wall time of the "
        "dev-mix scoring (its BERTScore rows come from the cache after the first row); 2 threads on the CPU named "
        "under Machine"
    )
    if args.interpolate:
        notes.append(
            "interpolated rows: every weight w of the way from the untrained start to the trained export "
            "(LoRA updates scaled by w, head and layer mix averaged); several w on one half is itself "
            "a selection, so only a row clearing the bar by a margin would justify a report-half run"
        )
    if args.ensemble:
        notes.append(
            "ensemble rows: the mean of their members' scores (each member's score as it reports it, max "
            "over references), scored once; members are rows of this or earlier tables"
        )
    result = {"half": args.half, "max_steps": args.max_steps, "val_every": args.val_every, "details": details}
    if args.screen:
        pairs = [tuple(spec.split(":", 1)) for spec in args.screen]
        borrowed = {}
        if args.screen_base:
            borrowed = committed_bases(args.screen_base, [base for _, base in pairs], details, args.half)
        result["screen"] = screen(pairs, {**details, **borrowed})
        if borrowed:
            source = f"bench/results/{args.screen_base}.json"
            result["screen"]["bases_from"] = {"file": source, "rows": sorted(borrowed)}
            notes.append(
                f"screening bases {', '.join(sorted(borrowed))}: committed rows of {args.screen_base} (same half, "
                "same CPU model), not refitted in this run"
            )
        verdict = result["screen"]
        notes.append(
            "screening: "
            + ", ".join(f"{r['lever']} - {r['base']} {r['delta']:+.4f}" for r in verdict["pairs"])
            + f"; mean {verdict['mean_delta']:+.4f}; rule {verdict['rule']}: "
            + ("passes" if verdict["passes"] else "does not pass")
        )
        notes.append(
            "screening per set, mean over the pairs (lever minus base tau-like): "
            + ", ".join(f"{name} {delta:+.4f}" for name, delta in verdict["mean_sets"].items())
        )
    if args.confirm:
        lever, _, bar_spec = args.confirm.partition("=")
        verdict = result["confirm"] = confirm(lever, bar_spec, details, args.half)
        notes.append(
            f"confirmation: {lever} {verdict['difference']:+.4f} (not better {verdict['not_better']:.1%}) against "
            f"{verdict['bar']['row']} {verdict['bar']['difference']:+.4f} of {verdict['bar']['file']}; rule "
            f"{verdict['rule']}: " + ("becomes the candidate" if verdict["passes"] else "does not pass")
        )
    write_results(
        args.name or f"sescore_ablation_{args.half}",
        result,
        rows,
        columns,
        f"SEScore recipe ablation, dev mix {args.half} half",
        notes,
    )


if __name__ == "__main__":
    main()
