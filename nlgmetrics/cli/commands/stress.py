"""``evaluate.py stress``: the blind-spot stress tests for one or more metrics, resumable per scored chunk."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from nlgmetrics.cli.metricflags import add_metric_options, check_flags, metric_from_args
from nlgmetrics.inputs import positive_int
from nlgmetrics.stress.bertscore_prf import VARIANTS as PRF_VARIANTS
from nlgmetrics.stress.bertscore_prf import BERTScorePRF
from nlgmetrics.stress.defaults import DEFAULT_MIN_APPLIED, DEFAULT_SEEDS

NAME = "stress"
NO_PLOTS_HELP = (
    "write report.json and report.md only, no plots/<test>.png (24 tests took ~5 s of a two-item run); "
    "a plots/ folder of an earlier run is left as it was, legends and verdicts included"
)
EPILOG = """example:
  nlgmetrics-evaluate stress --metric sescore,bertscore --data multiref.jsonl --limit 25 --out runs/stress
  (rerun the same command after an interruption: stored scores are reused)"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="blind-spot stress tests (one or more metrics, comma-separated)",
        epilog=EPILOG,
        description="Perturb gold hypotheses step by step and check that every metric's score falls. "
        "Besides the registered metrics, bertscore-p, bertscore-r and bertscore-f "
        "(BERTScore's precision, recall, F1 from one encoding) are stress metrics.",
    )
    p.add_argument("--data", required=True, help="JSONL with 'refs' (two or more) per item")
    p.add_argument("--out", required=True, help="folder for report.json, report.md, plots/ and scores.jsonl")
    p.add_argument("--tests", help="comma-separated test names (default: every test that needs no extra model)")
    p.add_argument("--limit", type=int, help="the first N items")
    p.add_argument(
        "--sample",
        type=positive_int,
        help="N items drawn with --sample-seed from the usable items (after --limit), kept in file order: the "
        "same items for every metric; the report records their ids",
    )
    p.add_argument("--sample-seed", type=int, default=0, help="seed of the --sample draw")
    p.add_argument(
        "--seeds", default=",".join(map(str, DEFAULT_SEEDS)), help="comma-separated seeds of the noising tests"
    )
    p.add_argument("--gold-ref", type=int, default=0, help="which reference is the gold hypothesis")
    p.add_argument("--gold-system", help="gold hypothesis = 'hyp' of this system's row per item (e.g. Human-H)")
    p.add_argument(
        "--ref-index",
        default="1",
        help="which reference is scored against, or 'all' (multi-reference: every other reference)",
    )
    p.add_argument("--mlm", help="masked_lm role value for the bert_diverge test")
    p.add_argument("--keep-last-sentence", action="store_true", help="open-ended text: never switch the last sentence")
    add_min_applied(p)
    p.add_argument(
        "--chunk",
        type=positive_int,
        default=4096,
        help="rows scored between saves of <out>/scores.jsonl (a rerun with the same --out resumes there)",
    )
    p.add_argument(
        "--reuse-scores",
        action="append",
        default=[],
        metavar="SCORES_JSON",
        help="the scores.jsonl of another stress run on the same items (repeatable): rows it holds under the same "
        "metric signature are copied, not scored, for a metric and for each part of a MENLI mix (a mix run "
        "after a menli run scores MENLI once)",
    )
    p.add_argument("--no-plots", action="store_true", help=NO_PLOTS_HELP)
    add_metric_options(p, several=True)
    return p


def add_min_applied(parser: argparse.ArgumentParser) -> None:
    """``--min-applied``, shared with ``stress-report``."""
    parser.add_argument(
        "--min-applied",
        type=positive_int,
        default=DEFAULT_MIN_APPLIED,
        help="judge a test only if it applies to at least this many items",
    )


def _existing(path: str) -> Path:
    given = Path(path)
    if not (given.with_suffix(".jsonl").is_file() or given.with_suffix(".json").is_file()):
        raise ValueError(f"--reuse-scores {path}: no such score store (the scores.jsonl of a stress run)")
    return Path(path)


class _StoredPart:
    """A mix's part whose row scores go through a score store; everything else is the part's own."""

    def __init__(self, part: Any, parts: Any) -> None:
        self._part = part
        self._score = parts.metric(part.signature(), part.score, None, log=None)

    def score(self, hyps: Any, refs: Any, srcs: Any = None) -> list[float]:
        return self._score(hyps, refs, srcs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._part, attribute)


def _stress_metric(name: str, args: argparse.Namespace, prf: dict, parts: Any) -> tuple[Any, str | None]:
    """A registered metric as a stress metric, or one of the stress-only BERTScore variants bertscore-p/-r/-f, with
    the signature its stored scores are keyed by (weights hashed: another checkpoint never reuses them); None for a
    metric whose row scores depend on the rows scored with it (a MENLI mix with set normalisation). A storable
    MENLI mix scores each part through ``parts`` (a score store), so a part scored before is not scored again."""
    if name in PRF_VARIANTS:
        if "scorer" not in prf:
            from nlgmetrics.baselines.embedding import token_embeddings
            from nlgmetrics.modelroles import load_encoder

            model = load_encoder(args.encoder, device=args.device)

            def embed(texts: list[str]) -> list:
                return token_embeddings(model, texts, args.layer, args.batch_size, progress=not args.quiet)

            aggregation = "mean" if args.aggregation == "mean" else "max"
            prf["scorer"] = BERTScorePRF(embed, aggregation)
            prf["signature"] = f"encoder:{args.encoder}@{model.hash}|layer:{args.layer}|refs:{aggregation}"
        return prf["scorer"].metric(name), f"{name}|{prf['signature']}"
    scorer = metric_from_args(name, args, check=False)  # run() checked the flags against the whole run
    if getattr(scorer, "batch_dependent", False):
        return (lambda h, r, s: scorer.score(h, r, s)), None
    signature = scorer.signature()
    if hasattr(scorer, "menli") and hasattr(scorer, "partners"):  # a MENLI mix with stored ranges
        scorer.menli = _StoredPart(scorer.menli, parts)
        scorer.partners = [_StoredPart(part, parts) for part in scorer.partners]
    if name.startswith("py:"):  # your own function: its module's code is part of the key, so an edit rescores
        signature += f"|code:{_code_hash(scorer.fn)}"
    return (lambda h, r, s: scorer.score(h, r, s)), signature


def _code_hash(function: Callable) -> str:
    """Hash of the source file defining ``function``; without a readable file a fresh random token, so the scores
    of code that cannot be hashed are never reused."""
    import inspect

    from nlgmetrics.modelroles.cache import file_sha256

    try:
        return file_sha256(Path(inspect.getsourcefile(function) or ""))[:12]
    except (TypeError, OSError):
        import uuid

        return f"unhashable-{uuid.uuid4().hex[:12]}"


def run(args: argparse.Namespace) -> dict:
    """Blind-spot tests; every metric's per-row scores are kept in ``<out>/scores.jsonl`` after each chunk, so a
    killed run, rerun with the same --out, scores only what it had not stored (and a run adding a metric rescores
    none of the others)."""
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.metaeval.rows import source_text
    from nlgmetrics.scorecache import ScoreCache
    from nlgmetrics.stress import DEFAULT_TESTS, run_blindspot, stress_rows, write_report
    from nlgmetrics.stress.blindspot import check_available

    names = [n for n in args.metric.split(",") if n]
    registered = [n for n in names if n not in PRF_VARIANTS]
    if registered:
        check_flags(
            args,
            registered,
            extra=("encoder", "layer", "batch_size", "device", "aggregation") if len(registered) < len(names) else (),
        )
    tests = args.tests.split(",") if args.tests else list(DEFAULT_TESTS)
    check_available(tests)
    gold, refs, rows, setup = stress_rows(
        args.data,
        gold_ref=args.gold_ref,
        gold_system=args.gold_system,
        ref_index=args.ref_index,
        limit=args.limit,
        aggregation=args.aggregation,
        keep_last_sentence=args.keep_last_sentence,
        sample=args.sample,
        sample_seed=args.sample_seed,
    )
    srcs = [source_text(r.get("src")) for r in rows]
    try:
        others = [ScoreCache(_existing(path)) for path in args.reuse_scores]
        store = ScoreCache(Path(args.out) / "scores.jsonl", reuse=others)
        # a mix's parts, each under its own signature: shared between the mixes of this run, and read from the
        # metrics of this run and of --reuse-scores stores (a part's signature is that metric's own)
        parts = ScoreCache(Path(args.out) / "parts.jsonl", reuse=[store, *others])
    except ValueError as error:
        raise InputError(str(error)) from error
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    prf: dict = {}
    metrics, signatures = {}, {}
    for name in names:
        fn, signatures[name] = _stress_metric(name, args, prf, parts)
        if signatures[name] is None:  # scored in one call, as its normalisation needs; nothing stored
            if log:
                log(
                    f"{name}: set normalisation fits on all rows at once, so its scores are not stored "
                    "(--normalization <recipe.json> makes them storable)"
                )
            metrics[name] = fn
        else:
            metrics[name] = store.metric(signatures[name], fn, args.chunk, log, label=name)
    seeds = tuple(int(x) for x in args.seeds.split(","))
    report = run_blindspot(
        metrics,
        gold,
        refs,
        srcs if any(srcs) else None,
        tests=tests,
        seeds=seeds,
        mlm=args.mlm,
        keep_last_sentence=args.keep_last_sentence,
        min_applied=args.min_applied,
    )
    report["data"] = str(args.data)
    report["setup"] = setup
    # what scoring cost, summed over every run that wrote this --out (a resumed run reports its whole cost)
    report["setup"]["scoring"] = {
        name: {"signature": signatures[name], "scores": "scores.jsonl", **store.costs.get(signatures[name], {})}
        if signatures[name]
        else {"scores": "not stored (set normalisation: one call over all rows)"}
        for name in names
    }
    if parts.costs:  # a mix's parts: what each cost inside the mix's own seconds above, and what was reused
        report["setup"]["scoring_parts"] = {"scores": "parts.jsonl", **parts.costs}
    write_report(report, args.out, plots=not args.no_plots)
    return report
