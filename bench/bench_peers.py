"""Our BERTScore and MENLI against their peers: same model, same data, one run, each peer in its own process.

BERTScore: ``nlgmetrics.baselines.BERTScorer`` vs the ``bert-score`` package and ``torchmetrics.text.BERTScore``,
all on the packaged all-MiniLM-L6-v2 folder, last layer (6), no idf, no baseline rescaling, 256-token truncation.
MENLI: our batched, length-sorted NLI pass vs one pair at a time, the loop of the original MENLI code
(cyr19/MENLI, ``MENLI.score_nli``), through the same packaged NLI model, formula e, direction <->, whole texts.

Each (peer, dataset) runs in a fresh process, so the peak RSS is that peer's own (``os.wait4`` ru_maxrss); peers
take turns over ``--repeats`` rounds and the best scoring time counts (model loading is reported apart).

    python -m bench.bench_peers [--wmt 1000] [--wmt-items 60] [--menli-wmt 500] [--repeats 2]   # ~40 min
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench.harness import (
    TED_FILE,
    WMT_FILE,
    LoadSpan,
    Pairs,
    add_worker_options,
    agreement,
    read_data,
    run_worker,
    ted_paragraphs,
    wmt_all_systems,
    wmt_one_system,
    write_results,
    write_worker_result,
)

MAX_TOKENS = 256  # our BERTScorer's truncation; the peers are set to the same


def dataset(name: str, args: argparse.Namespace) -> Pairs:
    """The (hyps, refs) of one named data set of the table."""
    if name == "wmt-1sys":
        return wmt_one_system(read_data(WMT_FILE), args.wmt, args.seed)
    if name == "wmt-allsys":
        return wmt_all_systems(read_data(WMT_FILE), args.wmt_items)
    if name == "menli-wmt":
        return wmt_one_system(read_data(WMT_FILE), args.menli_wmt, args.seed)
    if name == "ted-para":
        return ted_paragraphs(read_data(TED_FILE))
    raise SystemExit(f"unknown dataset '{name}'")


def f1_by_rule(
    hyp: np.ndarray,
    hyp_special: np.ndarray,
    ref: np.ndarray,
    ref_special: np.ndarray,
    special_targets: bool = False,
    zero_floor: bool = False,
) -> float:
    """BERTScore F1 of unit-normalised [tokens, hidden] vectors under each implementation's matching rule.

    Special tokens ([CLS], [SEP]; boolean masks) never count as matchers. ``special_targets``: they stay in the
    pool a token may match, as in the ``bert-score`` package (its greedy max runs over every unpadded position).
    ``zero_floor``: a best cosine below 0 counts as 0, as in torchmetrics (special and padding positions are zero
    vectors there, and the max runs over them too). Neither: our rule, specials dropped from both sides.
    """
    if hyp_special.all() or ref_special.all():
        raise ValueError("a text of only special tokens has no BERTScore")
    sim = hyp @ ref.T
    if not special_targets:
        sim = sim[:, ~ref_special][~hyp_special, :]
        hyp_special, ref_special = hyp_special[~hyp_special], ref_special[~ref_special]
    best_for_hyp, best_for_ref = sim.max(axis=1), sim.max(axis=0)
    if zero_floor:
        best_for_hyp, best_for_ref = np.maximum(best_for_hyp, 0.0), np.maximum(best_for_ref, 0.0)
    precision = float(best_for_hyp[~hyp_special].mean())
    recall = float(best_for_ref[~ref_special].mean())
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def twice_sorted(token_counts: Sequence[int]) -> np.ndarray:
    """Which input row torchmetrics 1.9 puts at each output position: it sorts by token count and then indexes
    the sorted embeddings with the same permutation (``emb[sorting_indices]``) instead of its inverse, so output
    row i holds input row s[s[i]]. Predictions and targets are permuted apart, so pairs mix unless both orders
    are already sorted. ``token_counts`` must be a torch-compatible sequence; the sort is torch's, ties included.
    """
    import torch

    order = torch.as_tensor(np.asarray(token_counts)).argsort().numpy()
    return order[order]


def menli_e_avg(forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
    """MENLI e <->: average the two directions' (e, n, c) vectors, then take e (as ``menli.pooling`` does)."""
    from menli.pooling import pool

    return pool("e", "<->", forward, backward)


def one_pair_at_a_time(nli, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """[N, 3] (e, n, c) probabilities, one forward pass per pair as the original MENLI loop does; same
    tokenizer, truncation, temperature and label order as our batched ``predict_proba``."""
    import torch

    out = np.zeros((len(premises), 3), dtype=np.float64)
    order = torch.tensor(nli.order)
    with torch.inference_mode():
        for i, (premise, hypothesis) in enumerate(zip(premises, hypotheses)):
            encoded = nli.tokenizer(
                premise, hypothesis, truncation="longest_first", max_length=nli.max_length, return_tensors="pt"
            ).to(nli.device)
            logits = nli.model(**encoded).logits.float().cpu()
            out[i] = torch.softmax(logits / nli.temperature, dim=-1)[0, order].numpy()
    return out


# --- the peers, each a factory: (hyps, refs) -> score function; loading happens in the factory --------------------


def _encoder_path() -> str:
    from nlgmetrics.modelroles import resolve

    return resolve("encoder", "packaged:minilm").location


def _ours(encoder: str | None = None) -> Callable[[list[str], list[str]], list[float]]:
    from nlgmetrics.baselines import BERTScorer
    from nlgmetrics.modelroles import load_encoder

    scorer = BERTScorer(encoder=encoder or _encoder_path())
    load_encoder(scorer.encoder)  # load now (the scorer finds it: models are cached per process), timed apart
    return lambda hyps, refs: scorer.score(hyps, refs)


def _bert_score(encoder: str | None = None, layers: int = 6) -> Callable[[list[str], list[str]], list[float]]:
    import bert_score

    scorer = bert_score.BERTScorer(model_type=encoder or _encoder_path(), num_layers=layers, batch_size=64, idf=False)
    scorer._tokenizer.model_max_length = MAX_TOKENS  # it truncates at model_max_length (512 for MiniLM)
    return lambda hyps, refs: scorer.score(hyps, refs)[2].tolist()


def _torchmetrics(encoder: str | None = None, layers: int = 6) -> Callable[[list[str], list[str]], list[float]]:
    from torchmetrics.text import BERTScore

    # with model_name_or_path, every compute() loads the weights again (about 0.2 s for MiniLM): in its time
    metric = BERTScore(
        model_name_or_path=encoder or _encoder_path(),
        num_layers=layers,
        max_length=MAX_TOKENS,
        truncation=True,
        batch_size=64,
    )

    def score(hyps: list[str], refs: list[str]) -> list[float]:
        metric.reset()
        metric.update(hyps, refs)
        return metric.compute()["f1"].tolist()

    return score


def _rule_check(
    special_targets: bool, zero_floor: bool, torchmetrics_pairs: bool, encoder: str | None = None
) -> Callable[[list[str], list[str]], list[float]]:
    """A diagnostic peer: our model's embeddings (specials kept) scored by another implementation's rules, to show
    which rule makes that implementation's F1 differ from ours."""
    import torch

    from nlgmetrics.modelroles import load_encoder

    loaded = load_encoder(encoder or _encoder_path())

    def encode(texts: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        out = {}
        with torch.inference_mode():
            for start in range(0, len(texts), 64):
                chunk = texts[start : start + 64]
                enc = loaded.tokenizer(
                    chunk,
                    padding=True,
                    truncation=True,
                    max_length=MAX_TOKENS,
                    return_tensors="pt",
                    return_special_tokens_mask=True,
                )
                special = enc.pop("special_tokens_mask").bool().numpy()
                hidden = torch.nn.functional.normalize(loaded.model(**enc).last_hidden_state, dim=-1).numpy()
                mask = enc["attention_mask"].bool().numpy()
                for row, text in enumerate(chunk):
                    out[text] = (hidden[row][mask[row]], special[row][mask[row]])
        return out

    def token_counts(texts: list[str]) -> list[int]:
        return [len(ids) for ids in loaded.tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]]

    def score(hyps: list[str], refs: list[str]) -> list[float]:
        if torchmetrics_pairs:
            hyps = [hyps[i] for i in twice_sorted(token_counts(hyps))]
            refs = [refs[i] for i in twice_sorted(token_counts(refs))]
        vectors = encode(list(dict.fromkeys(hyps + refs)))
        return [
            f1_by_rule(*vectors[h], *vectors[r], special_targets=special_targets, zero_floor=zero_floor)
            for h, r in zip(hyps, refs)
        ]

    return score


def _menli(single: bool, nli_spec: str = "packaged:nli-minilm") -> Callable[[list[str], list[str]], list[float]]:
    from menli import menli_scores
    from nlgmetrics.nli import load_nli

    nli = load_nli(nli_spec, "cpu")
    if not single:
        return lambda hyps, refs: menli_scores(nli, hyps, refs, "e", "<->", granularity="text").tolist()

    def score(hyps: list[str], refs: list[str]) -> list[float]:
        forward = one_pair_at_a_time(nli, refs, hyps)
        backward = one_pair_at_a_time(nli, hyps, refs)
        return menli_e_avg(forward, backward).tolist()

    return score


PEERS: dict[str, Callable[[], Callable[[list[str], list[str]], list[float]]]] = {
    "ours": _ours,
    "bert-score": _bert_score,
    "torchmetrics": _torchmetrics,
    "check: bert-score's rule on our embeddings": lambda: _rule_check(True, False, False),
    "check: torchmetrics' pairing and floor on our embeddings": lambda: _rule_check(False, True, True),
    "menli batched (ours)": lambda: _menli(False),
    "menli one pair at a time": lambda: _menli(True),
}
BERT_PEERS = ["ours", "bert-score", "torchmetrics"]
# a check is run once (its time means nothing) and compared with the peer whose difference from ours it explains
CHECKS = {
    "check: bert-score's rule on our embeddings": "bert-score",
    "check: torchmetrics' pairing and floor on our embeddings": "torchmetrics",
}
MENLI_PEERS = ["menli batched (ours)", "menli one pair at a time"]


def worker(args: argparse.Namespace) -> None:
    """Inside the fresh process: load the peer, warm it up on a few pairs, time one scoring of the dataset."""
    import psutil

    hyps, refs = dataset(args.dataset, args)
    started = time.perf_counter()
    score = PEERS[args.worker]()
    load_s = time.perf_counter() - started
    score(hyps[:4], refs[:4])
    rss_after_load = psutil.Process().memory_info().rss / 2**20
    started = time.perf_counter()
    scores = score(hyps, refs)
    score_s = time.perf_counter() - started
    write_worker_result(
        args.out, {"load_s": load_s, "score_s": score_s, "scores": scores, "rss_after_load_mb": rss_after_load}
    )


def summarise(
    runs: dict[str, list[dict]],
    reference: str,
    segments: int,
    pairs_per_segment: int,
    checks: dict[str, str] | None = None,
) -> list[dict]:
    """Table rows of one dataset from every peer's repeated runs: best time, highest peak, agreement with
    ``reference`` (our scores) and ratios to it. ``checks`` maps a diagnostic peer to the peer whose difference
    from ours it should reproduce; its row also gets ``diff_to_explained``. A peer whose runs all failed gets a
    row that says so."""
    checks = checks or {}
    if not runs.get(reference):
        raise ValueError(f"no successful run of the reference peer '{reference}'")
    rows = []
    best_ours = min(r["score_s"] for r in runs[reference])
    peak_ours = max(r["peak_rss_mb"] for r in runs[reference])
    for peer, done in runs.items():
        if not done:
            rows.append({"peer": peer, "segments": segments, "status": "failed"})
            continue
        best = min(r["score_s"] for r in done)
        peak = max(r["peak_rss_mb"] for r in done)
        row = {
            "peer": peer,
            "segments": segments,
            "seconds": best,
            "segments_per_s": segments / best,
            "pairs_per_s": segments * pairs_per_segment / best if pairs_per_segment else None,
            "time_ratio_to_ours": best / best_ours,
            "load_s": min(r["load_s"] for r in done),
            "peak_rss_mb": peak,
            "rss_ratio_to_ours": peak / peak_ours,
            **agreement(runs[reference][0]["scores"], done[0]["scores"]),
            "status": "ok",
        }
        if peer in checks:
            explained = runs.get(checks[peer])
            row["status"] = f"diagnostic for {checks[peer]}"
            if explained:
                row["diff_to_explained"] = agreement(explained[0]["scores"], done[0]["scores"])["max_abs_diff"]
        rows.append(row)
    return rows


def measure(
    args: argparse.Namespace, name: str, peers: list[str], pairs_per_segment: int, checks: dict[str, str] | None = None
) -> list[dict]:
    """Every peer (``repeats`` rounds, in turns) and every check (once) on one dataset, each in a fresh process."""
    checks = checks or {}
    hyps, refs = dataset(name, args)
    runs: dict[str, list[dict]] = {peer: [] for peer in [*peers, *checks]}
    extra = [
        "--dataset",
        name,
        "--wmt",
        str(args.wmt),
        "--wmt-items",
        str(args.wmt_items),
        "--menli-wmt",
        str(args.menli_wmt),
        "--seed",
        str(args.seed),
    ]
    for round_ in range(args.repeats):
        for peer in [*peers, *(checks if round_ == 0 else [])]:  # in turns: load changes hit every peer alike
            result, run = run_worker(Path(__file__), ["--worker", peer, *extra])
            print(f"{name} / {peer}: exit {run.returncode}, peak {run.peak_rss_mb:.0f} MB", flush=True)
            if result is not None:
                runs[peer].append({**result, "peak_rss_mb": run.peak_rss_mb})
    if not runs[peers[0]]:
        raise SystemExit(f"{name}: our own run failed; see the output above")
    distinct = len(set(hyps) | set(refs))
    rows = summarise(runs, peers[0], len(hyps), pairs_per_segment, checks)
    return [{"dataset": name, "distinct_texts": distinct, **row} for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wmt", type=int, default=1000, help="WMT items, one system each (BERTScore)")
    parser.add_argument("--wmt-items", type=int, default=60, help="WMT items with all their systems (BERTScore)")
    parser.add_argument("--menli-wmt", type=int, default=500, help="WMT items, one system each (MENLI)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    add_worker_options(parser, PEERS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    load = LoadSpan()
    rows = []
    for name in ("wmt-1sys", "wmt-allsys", "ted-para"):
        rows += [{"metric": "BERTScore-F1", **r} for r in measure(args, name, BERT_PEERS, 0, CHECKS)]
    for name in ("menli-wmt", "ted-para"):
        rows += [{"metric": "MENLI e <->", **r} for r in measure(args, name, MENLI_PEERS, 2)]
    columns = [
        "metric",
        "dataset",
        "peer",
        "segments",
        "distinct_texts",
        "seconds",
        "segments_per_s",
        "pairs_per_s",
        "time_ratio_to_ours",
        "load_s",
        "peak_rss_mb",
        "rss_ratio_to_ours",
        "max_abs_diff",
        "pearson",
        "diff_to_explained",
        "status",
    ]
    write_results(
        "peers",
        {
            "encoder": _encoder_path(),
            "nli": "packaged:nli-minilm",
            "max_tokens": MAX_TOKENS,
            "repeats": args.repeats,
            "seed": args.seed,
            "load_average": load.span(),
        },
        rows,
        columns,
        f"BERTScore and MENLI vs peers (CPU, fresh process per peer, best of {args.repeats})",
        notes(rows),
    )


def notes(rows: list[dict]) -> list[str]:
    """What the table means; every number in it is read from ``rows``."""

    def worst(peer: str, key: str) -> float:
        values = [r[key] for r in rows if r["peer"] == peer and r.get(key) is not None]
        return max(values) if values else float("nan")

    return [
        "Same model folder (all-MiniLM-L6-v2, layer 6 = last), no idf, no baseline rescaling, 256-token truncation "
        "for every BERTScore; time_ratio_to_ours > 1 means slower than ours; seconds exclude model loading (load_s).",
        "Datasets: wmt-1sys = WMT21 de-en, one seeded-random system per item (distinct references); wmt-allsys = "
        "every system of the first items (each reference repeated per system: ours and bert-score encode each "
        "distinct text once, torchmetrics encodes every row); ted-para = TED-MT zh-en paragraphs, second "
        "translation against the first.",
        f"bert-score differs from ours by up to {worst('bert-score', 'max_abs_diff'):.4f} because a token may "
        "match the other text's [CLS]/[SEP] there (they are only weighted 0 as matchers); our embeddings scored "
        f"by that rule reproduce it within {worst(_check_for('bert-score'), 'diff_to_explained'):.1e}.",
        f"torchmetrics 1.9.0 disagrees (Pearson {_span(rows, 'torchmetrics', 'pearson')} with ours) "
        "because it pairs the wrong texts: it sorts predictions and targets by length apart and restores the order "
        "with the sort permutation instead of its inverse (row i gets input s[s[i]]; "
        "cf. Lightning-AI/torchmetrics#2728). "
        "It also floors a best cosine at 0. Our embeddings with that pairing and floor reproduce it "
        f"within {worst(_check_for('torchmetrics'), 'diff_to_explained'):.1e}: its F1 is not usable for "
        "segment-level scores in this version; its speed is still comparable.",
        "MENLI: same packaged NLI model, formula e, direction <->, whole texts (granularity text, truncated at the "
        "model's window as the original code truncates); one pair at a time = the loop of cyr19/MENLI score_nli. "
        f"Largest score difference batched vs one at a time: {worst('menli one pair at a time', 'max_abs_diff'):.1e} "
        "(padding inside a batch changes float rounding only).",
    ]


def _span(rows: list[dict], peer: str, key: str) -> str:
    values = [r[key] for r in rows if r["peer"] == peer and r.get(key) is not None]
    return f"{min(values):.3f} to {max(values):.3f}" if values else "not measured"


def _check_for(peer: str) -> str:
    return next(check for check, explained in CHECKS.items() if explained == peer)


if __name__ == "__main__":
    main()
