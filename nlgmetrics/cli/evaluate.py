"""Scoring and measuring entry point.

    python evaluate.py score       --metric NAME --hyps F --refs F [F ...] [--srcs F] [--out F.jsonl]
    python evaluate.py compare     --metric NAME --hyps A.txt B.txt [C.txt ...] --refs F [F ...] [--srcs F]
                                   [--names A,B,C] [--bootstrap N] [--seed S] [--alpha A] [--correction bonferroni]
                                   [--out F.json] [--markdown F.md]
    python evaluate.py correlate   --metric NAME --data F.jsonl [--limit N] [--skip N] [--human KEY]
    python evaluate.py adversarial --metric NAME --data F.jsonl [--reference-free]
    python evaluate.py stress      --metric NAME[,NAME...] --data F.jsonl [--tests T,...] [--limit N] --out DIR
                                   [--gold-system NAME] [--ref-index N|all]   (NAME may be bertscore-p/-r/-f)
                                   [--min-applied N] [--no-plots]
    python evaluate.py stress-report --report DIR/report.json [--min-applied N] [--out DIR] [--no-plots]
    python evaluate.py make-adversarial --data F.jsonl --out F.jsonl [--types T,...] [--seed S]
    python evaluate.py robustness  --metric NAME[,NAME...] --data F.jsonl --out F.json [--markdown F.md] [--seed S]

NAME is a toolkit metric or ``py:package.module:function`` for a plain Python callable
``function(hyps, refs, srcs) -> list[float]`` (higher is better).

The last stdout line of every command is one JSON object (machine-readable, sacrebleu-style signature
included); progress bars go to stderr. Bad input exits 1 with one line saying what is wrong.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import re
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from nlgmetrics.cli import devmix, selfbias
from nlgmetrics.cli.common import finish_parser, silence_libraries
from nlgmetrics.inputs import positive_int
from nlgmetrics.modelroles.resolve import DEFAULT_ENCODER
from nlgmetrics.nli.model import DEFAULT_NLI

NO_PLOTS_HELP = ("write report.json and report.md only, no plots/<test>.png (24 tests took ~5 s of a two-item run "
                 "here); a plots/ folder of an earlier run is left as it was, legends and verdicts included")
BASE_METRICS = ("menli", "sescore", "mars", "bleu", "chrf", "bertscore", "cosine", "lm-likelihood", "lm-ratio")


def _add_metric_options(parser: argparse.ArgumentParser, metric: bool = True) -> None:
    g = parser.add_argument_group("metric options")
    if metric:
        g.add_argument("--metric", required=True,
                       help=f"one of {', '.join(BASE_METRICS)}, or menli+<metric>[+<metric>...]")
    g.add_argument("--nli-model", default=DEFAULT_NLI, help="NLI role value for MENLI")
    # menli.pooling.TASKS, written out: importing menli here would load torch for every --help
    g.add_argument("--task", default="mt", choices=("mt", "summarization"),
                   help="MENLI: the paper's pooling for the task (mt: e <->; summarization: e-c <-, reference-free "
                        "-c ->); --formula/--direction override it")
    g.add_argument("--formula", default=None, help="MENLI formula: e, -c, e-n, e-c, e-n-2c (default: --task's)")
    g.add_argument("--direction", default=None, help="MENLI direction: ->, <-, <-> (default: --task's)")
    g.add_argument("--aggregation", default="max", help="multi-reference aggregation: max or mean")
    g.add_argument("--granularity", default="auto", choices=("auto", "sentence", "text"),
                   help="MENLI: score sentence pairs (sentence), whole texts (text), or sentences only for pairs "
                        "longer than the NLI window (auto)")
    g.add_argument("--sentence-pool", default="mean", choices=("mean", "min"),
                   help="MENLI at sentence granularity: mean or min over hypothesis sentences")
    g.add_argument("--sentence-candidates", type=int, default=0,
                   help="MENLI at sentence granularity: score only each hypothesis sentence's k most word-sharing "
                        "premise sentences (+ the same-position one); 0 = every sentence pair")
    g.add_argument("--weight", type=float, default=0.2, help="NLI weight w in menli+<metric>")
    g.add_argument("--weights", type=_weights, default=None,
                   help="menli+<a>+<b>...: one weight per part, MENLI first, summing to 1 (default: the stored "
                        "recipe's, e.g. the packaged menli+sescore+lm-ratio: 0.1,0.6,0.3)")
    g.add_argument("--normalization", default="auto",
                   help="menli+<metric>: 'auto' (the packaged ranges fitted with these models if there are any, "
                        "else 'set'), 'set' (min-max over the scored set: each score depends on the others) or a "
                        "stored stats JSON file (a path, or a packaged one: menli/nli-mpnet+bertscore-minilm.json); "
                        "menli+<a>+<b>...: 'auto' takes the packaged recipe (weights and ranges) fitted with these "
                        "models, a file is a recipe (menli/mix/nli-mpnet+sescore-minilm+lm-ratio-smollm2.json)")
    g.add_argument("--save-normalization",
                   help="menli+<metric>[+<metric>...]: write the min-max stats (a mix: the recipe) fitted or used "
                        "here to this JSON")
    g.add_argument("--encoder", default=DEFAULT_ENCODER,
                   help="encoder role value for bertscore/cosine (offline: packaged:me5-small, packaged:minilm, "
                        "packaged:mpnet)")
    g.add_argument("--layer", type=int, default=None, help="hidden layer for bertscore (default: last)")
    g.add_argument("--causal-lm", default="packaged:smollm2",
                   help="causal_lm role value for lm-likelihood / lm-ratio (GPT-PPL-style fluency); offline: "
                        "packaged:smollm2, or opt-in packaged:gemma3-270m (Gemma Terms of Use, not an OSI licence)")
    g.add_argument("--checkpoint", nargs="+", default=None,
                   help="sescore: checkpoint folder (default: the shipped sescore/checkpoints/mpnet-v2; in a "
                        "menli+...+sescore mix: sescore/checkpoints/minilm-v2, the model the packaged mix recipe was "
                        "fitted with), or several: the mean of their scores (e.g. the training seeds of one recipe; "
                        "train.py ensemble packs them into one folder)")
    g.add_argument("--mars-config", default=None, help="mars: YAML config (default: configs/mars/offline.yaml)")
    g.add_argument("--ablation", default=None,
                   help="mars: full, no_planning, no_context, no_planning_no_context or naive")
    g.add_argument("--mars-cache", default=None,
                   help="mars: folder of the augmentation cache (default: the config's cache_dir)")
    g.add_argument("--mars-window-words", type=int, default=None, metavar="N",
                   help="mars: only the first N words of a reference may be masked, which bounds the cost of long "
                        "references (default: the config's masking.window_words; 0 = no bound, the paper)")
    g.add_argument("--batch-size", type=int, default=64, help="texts (or NLI pairs) per model call")
    g.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: GPU if present)")
    # nlgmetrics.modelroles.precision.PRECISIONS, written out: importing it here would load torch for every --help
    g.add_argument("--precision", default="float32", choices=("float32", "bfloat16"),
                   help="the models' forward pass for menli, sescore, bertscore and cosine: bfloat16 is about twice "
                        "as fast on CPUs with AVX-512 BF16 or AMX and on recent GPUs, scores move slightly (README, "
                        "Scoring: --precision); metric arithmetic stays float32")
    g.add_argument("--quiet", action="store_true",
                   help="no progress bars and no library warnings (transformers, Lightning, datasets)")


def _add_devices_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--devices", type=positive_int, default=1,
                        help="score in N processes (one per GPU with --device cuda, else CPU processes); the scores "
                             "are identical to one process's")


def build_scorer(name: str, args: argparse.Namespace) -> Any:
    """Compose a Scorer from the metric packages by name (the packages never import each other)."""
    from nlgmetrics.baselines import BERTScorer, CosineScorer, SacreBleuScorer
    from nlgmetrics.metaeval import InputError

    progress = not getattr(args, "quiet", False)
    if getattr(args, "devices", 1) > 1 and "+" not in name:
        from nlgmetrics.parallel import ProcessScorer

        one = argparse.Namespace(**{**vars(args), "devices": 1})
        return ProcessScorer(functools.partial(_build_in_process, name, one), args.devices, args.device, name)
    if name.startswith("py:"):
        return _callable_scorer(name)
    if "+" in name:
        first, *partners = name.split("+")
        if first != "menli" or not all(partners):
            raise InputError(f"unknown metric '{name}': combinations are written menli+<metric>[+<metric>...]")
        if len(partners) > 1:
            return _mixed_scorer(name, partners, args)
        rest = partners[0]
        if getattr(args, "weights", None) is not None:
            raise InputError(f"--weights is for MENLI with several partners (menli+<a>+<b>...); {name} takes --weight")
        from menli import CombinationStats, CombinedScorer

        if args.normalization in ("auto", "set"):
            stats = args.normalization
        else:
            stats = CombinationStats.load(_normalization_file(args.normalization))
        scorer = CombinedScorer(build_scorer("menli", args), build_scorer(rest, args), args.weight, stats)
        if args.normalization == "auto" and scorer.resolve_stats(warn=False) is None:
            print(f"note: {name}: no packaged ranges were fitted with these models, so both parts are min-max "
                  "normalised over the scored rows and each score depends on the others; fix them with "
                  "--save-normalization once and --normalization <file> after", file=sys.stderr)
        return scorer
    if name == "menli":
        from menli import MENLIScorer, task_strategy

        reference_free = getattr(args, "reference_free_scoring", False)
        try:
            formula, direction = task_strategy(getattr(args, "task", "mt"), reference_free,
                                               getattr(args, "formula", None), getattr(args, "direction", None))
        except ValueError as error:
            raise InputError(str(error)) from None
        return MENLIScorer(args.nli_model, formula, direction, args.aggregation, reference_free=reference_free,
                           batch_size=args.batch_size, device=args.device, progress=progress,
                           granularity=args.granularity, sentence_reduce=args.sentence_pool,
                           sentence_candidates=args.sentence_candidates, precision=_precision(args))
    if name == "sescore":
        from sescore.regressor import DEFAULT_CHECKPOINT, SEScoreScorer

        return SEScoreScorer(args.checkpoint or DEFAULT_CHECKPOINT, args.batch_size, args.device, progress=progress,
                             precision=_precision(args))
    if name in ("mars", "lm-likelihood", "lm-ratio") and _precision(args) != "float32":
        raise InputError(f"--precision {_precision(args)} is implemented for menli, sescore, bertscore and cosine; "
                         f"{name} runs in float32 (leave --precision out for it)")
    if name == "mars":
        import mars

        from nlgmetrics.resources import config_path

        config = config_path(args.mars_config or "mars/offline.yaml")
        overrides: dict[str, Any] = {"progress": progress}
        if getattr(args, "mars_cache", None):
            overrides["cache_dir"] = args.mars_cache
        if getattr(args, "mars_window_words", None) is not None:
            overrides["masking.window_words"] = args.mars_window_words
        return mars.build(config, ablation=args.ablation, overrides=overrides)
    if name in ("bleu", "chrf"):
        return SacreBleuScorer(name)
    if name == "bertscore":
        return BERTScorer(args.encoder, args.batch_size, args.device, progress, layer=args.layer,
                          precision=_precision(args))
    if name == "cosine":
        return CosineScorer(args.encoder, args.batch_size, args.device, progress, precision=_precision(args))
    if name in ("lm-likelihood", "lm-ratio"):
        from nlgmetrics.baselines.lm_likelihood import LMLikelihoodScorer

        return LMLikelihoodScorer(args.causal_lm, min(args.batch_size, 16), args.device, progress,
                                  relative=name == "lm-ratio")
    raise InputError(f"unknown metric '{name}'; choose from {', '.join(BASE_METRICS)} or menli+<metric>")


def _precision(args: argparse.Namespace) -> str:
    """``--precision`` (float32 where a sub-command has no such option, e.g. a caller's own Namespace)."""
    return getattr(args, "precision", "float32")


def _mixed_scorer(name: str, partners: Sequence[str], args: argparse.Namespace) -> Any:
    """``menli+<a>+<b>...``: MENLI with several partners, by a stored recipe (weights and ranges) or ``--weights``."""
    from menli import MixedScorer, MixRecipe
    from nlgmetrics.metaeval import InputError

    weights = getattr(args, "weights", None)
    if args.normalization in ("auto", "set"):
        recipe: Any = args.normalization
    else:
        try:
            recipe = MixRecipe.load(_normalization_file(args.normalization))
        except ValueError as error:
            raise InputError(f"--normalization: {error}") from None
    if recipe == "set" and weights is None:
        raise InputError(f"{name} with --normalization set needs --weights (MENLI first, summing to 1)")
    if "sescore" in partners and args.checkpoint is None:
        # MENLI's packaged mix was fitted with the MiniLM ensemble (the SEScore default when it was measured); the
        # recipe names its parts' models, so the current default would find no recipe and stop
        from sescore.regressor import MINILM_V2_CHECKPOINT

        args = argparse.Namespace(**{**vars(args), "checkpoint": [MINILM_V2_CHECKPOINT]})
    try:
        scorer = MixedScorer(build_scorer("menli", args), [build_scorer(p, args) for p in partners], weights, recipe)
        if args.normalization == "auto" and scorer.resolve_recipe(warn=False) is None:
            print(f"note: {name}: no packaged recipe was fitted with these models, so every part is min-max "
                  "normalised over the scored rows and each score depends on the others; fix them with "
                  "--save-normalization once and --normalization <file> after", file=sys.stderr)
    except ValueError as error:
        raise InputError(str(error)) from None
    return scorer


def _weights(text: str) -> list[float]:
    """``--weights 0.1,0.6,0.3`` -> floats (checked against the parts by the scorer)."""
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers (MENLI first), got '{text}'") from None


def _build_in_process(name: str, args: argparse.Namespace, index: int, device: str | None) -> Any:
    """The scorer of one ``--devices`` process: its own device; progress bars from the first process only."""
    quiet = getattr(args, "quiet", False) or index > 0
    if quiet:
        silence_libraries()
    return build_scorer(name, argparse.Namespace(**{**vars(args), "device": device, "quiet": quiet}))


def _callable_scorer(name: str) -> Any:
    """``py:module:function`` -> a Scorer around the user's function (imported from the working directory)."""
    import importlib

    from nlgmetrics.metaeval import FunctionScorer, InputError

    module_name, _, function_name = name[3:].rpartition(":")
    if not module_name or not function_name:
        raise InputError(f"'{name}': write a Python callable as py:package.module:function")
    saved = list(sys.path)
    # only for this import, so the working directory cannot shadow later imports; the absolute path, because
    # Python caches the finder of "." with the directory it was first used in
    sys.path.insert(0, os.getcwd())
    importlib.invalidate_caches()
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as error:
        raise InputError(f"'{name}': cannot import {module_name}:{function_name} ({error})") from error
    finally:
        sys.path[:] = saved
    if not callable(function):
        raise InputError(f"'{name}' is not callable")
    return FunctionScorer(function, name)


def _json_safe(value: Any) -> Any:
    """NaN (e.g. a correlation over constant scores) becomes null: strict JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _emit(result: dict) -> None:
    print(json.dumps(_json_safe(result), ensure_ascii=False, allow_nan=False))


def _normalization_file(name: str) -> Path:
    """A stored-ranges file: the path given, else the packaged one of that name (``menli/<nli>+<metric>.json``, so
    a pip install without the repository finds the README's files); an error naming both places otherwise."""
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.resources import config_path

    try:
        return config_path(name)
    except FileNotFoundError as error:
        raise InputError(f"--normalization: {error}") from error


def _save_stats(scorer: Any, args: argparse.Namespace) -> None:
    if getattr(args, "save_normalization", None):
        stats = getattr(scorer, "last_stats", None) or getattr(scorer, "last_recipe", None)
        if stats is None:
            from nlgmetrics.metaeval import InputError

            raise InputError("--save-normalization applies to menli+<metric>[+<metric>...] only")
        stats.save(args.save_normalization)


def cmd_score(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import InputError, atomic_write, check_same_length, read_lines

    hyps = read_lines(args.hyps, "hypotheses")
    ref_files = [read_lines(f, "references") for f in (args.refs or [])]
    srcs = read_lines(args.srcs, "sources") if args.srcs else None
    check_same_length(hyps=hyps, srcs=srcs, **{f"refs[{i}]": r for i, r in enumerate(ref_files)})
    args.reference_free_scoring = args.reference_free
    if not ref_files and not args.reference_free:
        raise InputError("--refs is required (or --reference-free with --srcs for MENLI)")
    if args.reference_free and srcs is None:
        raise InputError("--reference-free needs --srcs")
    refs = [list(r) for r in zip(*ref_files)] if ref_files else None
    if refs is not None and len(ref_files) == 1:
        refs = [r[0] for r in refs]
    scorer = build_scorer(args.metric, args)
    scores = scorer.score(hyps, refs if refs is not None else srcs, srcs)
    _save_stats(scorer, args)
    if args.out:
        with atomic_write(args.out) as handle:
            for index, value in enumerate(scores):
                handle.write(json.dumps({"index": index, "score": value}) + "\n")
    return {"metric": args.metric, "system_score": float(sum(scores) / len(scores)), "n": len(scores),
            "signature": scorer.signature()}


def _write_report(report: dict, json_path: str | None, markdown_path: str | None,
                  render: Callable[[dict], str]) -> None:
    """The result as indented JSON and as Markdown (``render``), each written atomically, when asked for."""
    from nlgmetrics.metaeval import atomic_write

    if json_path:
        with atomic_write(json_path) as handle:
            handle.write(json.dumps(_json_safe(report), indent=1, ensure_ascii=False) + "\n")
    if markdown_path:
        with atomic_write(markdown_path) as handle:
            handle.write(render(report))


def system_names(paths: Sequence[str], requested: str | None) -> list[str]:
    """``--names A,B,...`` or the files' stems; clashing stems (``a/out.txt``, ``b/out.txt``) get ``-1``, ``-2``.

    Names key the JSON and the verdicts ("out-2 better"), so they must be unique and say which file they are.
    """
    from nlgmetrics.metaeval import InputError

    if requested is not None:
        names = [n.strip() for n in requested.split(",")]
        if len(names) != len(paths) or not all(names):
            raise InputError(f"--names: {len(names)} name(s) for {len(paths)} --hyps files (give one per file)")
        if len(set(names)) != len(names):
            raise InputError(f"--names must be unique, got {requested!r}")
        return names
    stems = [Path(p).stem for p in paths]
    taken = set(stems)
    names: list[str] = []
    number = dict.fromkeys(stems, 0)
    for stem in stems:
        if stems.count(stem) == 1:
            names.append(stem)
            continue
        name = stem
        while name in taken:  # also steps over a file really called out-1.txt
            number[stem] += 1
            name = f"{stem}-{number[stem]}"
        taken.add(name)
        names.append(name)
    return names


def cmd_compare(args: argparse.Namespace) -> dict:
    """Several systems' outputs on one test set: scores, paired-bootstrap intervals and a verdict per pair.

    Every system is scored in one call (hypotheses of all systems one after another, references repeated), so
    a model loads once and a (hypothesis, references, source) triple two systems share is scored once and
    gets the same score in both. For bleu/chrf the system score is sacrebleu's corpus statistic, re-computed
    on each resample; segment scores (sentence BLEU/chrF) then give only the wins, ties and losses.
    """
    from nlgmetrics.metaeval import InputError, check_same_length, paired_bootstrap_systems, read_lines
    from nlgmetrics.metaeval.compare import markdown_table

    if len(args.hyps) < 2:
        raise InputError(f"compare needs at least 2 systems (--hyps A.txt B.txt ...), got {len(args.hyps)}")
    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    if not 0 < args.alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1, got {args.alpha}")
    names = system_names(args.hyps, args.names)
    ref_files = [read_lines(f, "references") for f in args.refs]
    srcs = read_lines(args.srcs, "sources") if args.srcs else None
    n = check_same_length(srcs=srcs, **{f"refs[{i}]": r for i, r in enumerate(ref_files)})
    systems: dict[str, list[str]] = {}
    for name, path in zip(names, args.hyps):
        hyps = read_lines(path, f"system {name}")
        if len(hyps) != n:
            raise InputError(f"system {name} {path}: {len(hyps)} lines, but the references have {n}")
        systems[name] = hyps
    refs = [list(r) for r in zip(*ref_files)]
    args.reference_free_scoring = False
    scorer = build_scorer(args.metric, args)
    rows = [{"hyp": hyp, "refs": refs[i], "src": srcs[i] if srcs else None}
            for hyps in systems.values() for i, hyp in enumerate(hyps)]
    flat = _row_scores(scorer, rows)
    _save_stats(scorer, args)
    segment = {name: flat[k * n:(k + 1) * n] for k, name in enumerate(systems)}
    corpus, signature, extra = None, scorer.signature(), {}
    if args.metric in ("bleu", "chrf"):
        from nlgmetrics.baselines import SacreBleuScorer

        extra["segment_signature"] = signature  # sentence-level scores: wins, ties and losses only
        corpus, signature = SacreBleuScorer(args.metric).corpus_statistic(systems, ref_files)
    result = paired_bootstrap_systems(segment, args.bootstrap, args.seed, args.alpha, corpus, args.correction)
    for system, path in zip(result["systems"], args.hyps):
        system["file"] = str(path)
    result = {"metric": args.metric, **result,
              "signature": f"{signature}|paired-bs:{args.bootstrap}|seed:{args.seed}|alpha:{args.alpha}"
                           + (f"|correction:{args.correction}" if args.correction != "none" else ""), **extra}
    pairs = len(result["pairs"]) if args.correction == "bonferroni" else 1
    if 2 / (args.bootstrap + 1) * pairs >= args.alpha:
        print(f"warning: with {args.bootstrap} resamples no p-value can fall below {args.alpha}"
              f"{' after the Bonferroni correction' if pairs > 1 else ''}; every verdict is 'no significant "
              "difference' (raise --bootstrap)", file=sys.stderr)
    _write_report(result, args.out, args.markdown, markdown_table)
    return result


def _human_key(rows: Sequence[dict], requested: str | None) -> str:
    from nlgmetrics.metaeval import InputError

    keys = sorted({k for r in rows for k in (r.get("scores") or {})})
    if requested:
        if requested not in keys:
            raise InputError(f"human score '{requested}' not in the data; available: {', '.join(keys)}")
        return requested
    if len(keys) == 1:
        return keys[0]
    raise InputError(f"the data has several human scores; pick one with --human: {', '.join(keys)}")


_WMT_HUMAN = re.compile(r"^(ref|Human)-[A-Za-z0-9]+(\.\d+)?$")


def human_systems(rows: Sequence[dict], flag: str | None) -> tuple[list[str], str]:
    """Which systems are human references, and how that was decided (stated in the JSON, never guessed).

    In order: ``--human-systems A,B`` (``none`` for no human system); a boolean ``human_system`` field on the
    rows; otherwise the WMT naming of human translations, a whole name of the form ``ref-X``/``Human-X`` (a
    system called ``refresh`` or ``reference_bart`` is not human).
    """
    systems = sorted({str(r.get("system")) for r in rows})
    if flag is not None:
        names = [] if flag.strip().lower() == "none" else [s.strip() for s in flag.split(",") if s.strip()]
        unknown = [s for s in names if s not in systems]
        if unknown:
            from nlgmetrics.metaeval import InputError

            raise InputError(f"--human-systems: {', '.join(unknown)} not among the data's systems")
        return names, "--human-systems"
    if any("human_system" in r for r in rows):
        return sorted({str(r.get("system")) for r in rows if r.get("human_system")}), "row field human_system"
    return [s for s in systems if _WMT_HUMAN.match(s)], "WMT naming (whole name ref-X or Human-X)"


def _source_text(src: Any) -> str:
    """The source as one string: data-to-text inputs (WebNLG) are lists of triples, one per line."""
    if src is None:
        return ""
    if isinstance(src, (list, tuple)):
        return "\n".join(str(part) for part in src)
    return str(src)


def cmd_correlate(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import (
        InputError, correlation_report, first_items, paired_bootstrap_correlation, paired_bootstrap_tau_like, read_jsonl,
    )

    if args.bootstrap < 1:
        raise InputError("--bootstrap must be >= 1 resample")
    rows = first_items(read_jsonl(args.data), args.limit, args.skip)
    key = _human_key(rows, args.human)
    rows = [r for r in rows if (r.get("scores") or {}).get(key) is not None]
    if not rows:
        raise InputError(f"{args.data}: no row has human score '{key}'")
    for number, row in enumerate(rows, 1):
        if not isinstance(row.get("hyp"), str) or not isinstance(row.get("refs"), list) or not row["refs"]:
            raise InputError(f"{args.data}: row {number} lacks 'hyp' or 'refs'")
    from nlgmetrics.metaeval import usable_rows

    rows, skipped = usable_rows(rows)
    if not rows:
        raise InputError(f"{args.data}: every row has an empty hypothesis or reference")
    humans, humans_how = human_systems(rows, args.human_systems)
    args.reference_free_scoring = False
    scorer = build_scorer(args.metric, args)
    metric = _row_scores(scorer, rows)
    _save_stats(scorer, args)
    human = [float(r["scores"][key]) for r in rows]
    items = [(r.get("lp"), r.get("item_id")) for r in rows]
    systems = [r.get("system") for r in rows]
    result = {"metric": args.metric, "data": str(args.data), "human": key, "skip_items": args.skip,
              "limit_items": args.limit, "human_systems": humans, "human_systems_from": humans_how,
              "skipped_rows": len(skipped), "skipped": skipped[:50]}
    result.update(correlation_report(metric, human, items, systems))
    mt = [i for i, s in enumerate(systems) if str(s) not in set(humans)]
    if len(mt) < len(rows):
        sub = correlation_report([metric[i] for i in mt], [human[i] for i in mt], [items[i] for i in mt],
                                 [systems[i] for i in mt])
        result["without_human_systems"] = sub
    result["signature"] = scorer.signature()
    if args.versus:
        other = build_scorer(args.versus, args)
        versus = _row_scores(other, rows)
        result["versus"] = {"metric": args.versus, "signature": other.signature(),
                            **paired_bootstrap_tau_like(metric, versus, human, items, args.bootstrap, args.seed)}
        # segment level without grouping: the only comparison for one-candidate-per-item data (ROC stories)
        result["versus"]["segment"] = {
            stat: paired_bootstrap_correlation(metric, versus, human, stat, args.bootstrap, args.seed)
            for stat in ("pearson", "kendall_b")}
    return result


def _row_scores(scorer: Any, rows: Sequence[dict]) -> list[float]:
    """One score per judged row; identical (hyp, refs, src) triples are scored once."""
    unique: dict[tuple, int] = {}
    for row in rows:
        unique.setdefault((row["hyp"], tuple(row["refs"]), _source_text(row.get("src"))), len(unique))
    triples = list(unique)
    srcs = [t[2] for t in triples]
    scores = scorer.score([t[0] for t in triples], [list(t[1]) for t in triples], srcs if any(srcs) else None)
    return [scores[unique[(r["hyp"], tuple(r["refs"]), _source_text(r.get("src")))]] for r in rows]


def cmd_adversarial(args: argparse.Namespace) -> dict:
    from nlgmetrics.metaeval import read_jsonl, run_adversarial

    rows = read_jsonl(args.data)
    if args.limit is not None:
        rows = rows[: args.limit]
    args.reference_free_scoring = False  # the source is passed in the reference's place
    scorer = build_scorer(args.metric, args)
    result = run_adversarial(lambda hyps, anchors: scorer.score(hyps, anchors, None), rows, args.reference_free)
    return {"metric": args.metric, "data": str(args.data), "reference_free": args.reference_free,
            "limit_rows": args.limit, **result,
            "signature": scorer.signature()}


def _one_row_per_item(rows: Sequence[dict], limit: int | None) -> list[dict]:
    """Stress tests and adversarial generation work per item: keep the first row of every (lp, item_id)."""
    from nlgmetrics.metaeval import first_items

    seen: set = set()
    out = []
    for row in first_items(rows, limit):
        key = (row.get("lp"), row.get("item_id"))
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def _multi_reference_rows(args: argparse.Namespace, need: int) -> list[dict]:
    from nlgmetrics.metaeval import InputError, read_jsonl

    rows = _one_row_per_item(read_jsonl(args.data), args.limit)
    usable = [r for r in rows if isinstance(r.get("refs"), list) and len(r["refs"]) > need]
    if not usable:
        raise InputError(f"{args.data}: no item has {need + 1} or more references (field 'refs')")
    return usable


def _stress_rows(args: argparse.Namespace) -> tuple[list[str], list, list[dict], dict]:
    """Gold hypotheses, references (a string, or every reference of the item), rows and the recorded set-up.

    Default: reference ``--gold-ref`` is the gold hypothesis, reference ``--ref-index`` the reference. With
    ``--gold-system NAME`` the gold hypothesis is that system's ``hyp`` (the paper's CNN/DM set-up: the original
    highlights, THumB's system ``Human-H``); ``--ref-index all`` scores against every other reference at once.
    """
    from nlgmetrics.metaeval import InputError, read_jsonl

    every = args.ref_index == "all"
    if not every and not args.ref_index.isdigit():
        raise InputError(f"--ref-index must be a reference number or 'all', got {args.ref_index!r}")
    index = None if every else int(args.ref_index)
    if args.gold_system is not None:
        rows = [r for r in read_jsonl(args.data) if r.get("system") == args.gold_system]
        if not rows:
            raise InputError(f"{args.data}: no row of system {args.gold_system!r} (field 'system')")
        rows = [r for r in _one_row_per_item(rows, args.limit)
                if isinstance(r.get("hyp"), str) and r["hyp"].strip() and isinstance(r.get("refs"), list)
                and len(r["refs"]) > (0 if every else index)]
        if not rows:
            raise InputError(f"{args.data}: no {args.gold_system!r} row has a hypothesis and the references asked for")
        gold = [r["hyp"] for r in rows]
        refs = [list(r["refs"]) if every else r["refs"][index] for r in rows]
        setup = {"gold": f"hyp of system {args.gold_system!r}", "references": "all refs" if every else f"refs[{index}]"}
    else:
        if index == args.gold_ref:
            raise InputError("--gold-ref and --ref-index must name different references")
        rows = _multi_reference_rows(args, max(args.gold_ref, 1 if every else index))
        gold = [r["refs"][args.gold_ref] for r in rows]
        refs = [[x for k, x in enumerate(r["refs"]) if k != args.gold_ref] if every else r["refs"][index]
                for r in rows]
        setup = {"gold": f"refs[{args.gold_ref}]",
                 "references": f"all refs but refs[{args.gold_ref}]" if every else f"refs[{index}]"}
    if every:
        counts = sorted({len(r) for r in refs})
        setup["references"] += f" ({counts[0]}-{counts[-1]} per item)" if len(counts) > 1 else f" ({counts[0]} per item)"
        setup["multi-reference aggregation"] = (f"{args.aggregation} (menli, bertscore-p/-r/-f); bertscore: best F1; "
                                                "sescore: best score; bleu, chrf: their own multi-reference rule")
    setup.update({"items": len(rows), "limit": args.limit, "keep_last_sentence": args.keep_last_sentence})
    return gold, refs, rows, setup


def _stress_metric(name: str, args: argparse.Namespace, prf: dict) -> tuple[Any, str | None]:
    """A toolkit scorer as a stress metric, or one of the stress-only BERTScore variants bertscore-p/-r/-f, with
    the signature its stored scores are keyed by (weights hashed: another checkpoint never reuses them); None for a
    metric whose row scores depend on the rows scored with it (``menli+<metric>`` with set normalisation)."""
    from nlgmetrics.stress.bertscore_prf import VARIANTS, BERTScorePRF

    if name in VARIANTS:
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
    scorer = build_scorer(name, args)
    if getattr(scorer, "batch_dependent", False):
        return (lambda h, r, s: scorer.score(h, r, s)), None
    signature = scorer.signature()
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


def cmd_stress(args: argparse.Namespace) -> dict:
    """Blind-spot tests; every metric's per-row scores are kept in ``<out>/scores.json`` after each chunk, so a
    killed run, rerun with the same --out, scores only what it had not stored (and a run adding a metric rescores
    none of the others)."""
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.stress import DEFAULT_MIN_APPLIED, DEFAULT_TESTS, run_blindspot, write_report
    from nlgmetrics.stress.blindspot import check_available
    from nlgmetrics.stress.store import ScoreStore

    names = [n for n in args.metric.split(",") if n]
    tests = args.tests.split(",") if args.tests else list(DEFAULT_TESTS)
    check_available(tests)
    gold, refs, rows, setup = _stress_rows(args)
    srcs = [_source_text(r.get("src")) for r in rows]
    args.reference_free_scoring = False
    try:
        store = ScoreStore(Path(args.out) / "scores.json")
    except ValueError as error:
        raise InputError(str(error)) from error
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    prf: dict = {}
    metrics, signatures = {}, {}
    for name in names:
        fn, signatures[name] = _stress_metric(name, args, prf)
        if signatures[name] is None:  # scored in one call, as its normalisation needs; nothing stored
            if log:
                log(f"{name}: set normalisation fits on all rows at once, so its scores are not stored "
                    "(--normalization <stats.json> makes them storable)")
            metrics[name] = fn
        else:
            metrics[name] = store.metric(signatures[name], fn, args.chunk, log, label=name)
    seeds = tuple(int(x) for x in args.seeds.split(","))
    report = run_blindspot(metrics, gold, refs, srcs if any(srcs) else None, tests=tests, seeds=seeds,
                           mlm=args.mlm, keep_last_sentence=args.keep_last_sentence,
                           min_applied=args.min_applied or DEFAULT_MIN_APPLIED)
    report["data"] = str(args.data)
    report["setup"] = setup
    # what scoring cost, summed over every run that wrote this --out (a resumed run reports its whole cost)
    report["setup"]["scoring"] = {name: {"signature": signatures[name], "scores": "scores.json",
                                         **store.costs.get(signatures[name], {})} if signatures[name] else
                                  {"scores": "not stored (set normalisation: one call over all rows)"}
                                  for name in names}
    write_report(report, args.out, plots=not args.no_plots)
    return report


def cmd_stress_report(args: argparse.Namespace) -> dict:
    """Re-judge a stored report.json (e.g. under another --min-applied) and rewrite its table and plots.

    Only the verdicts change; the curves are read as stored, so nothing is scored again.
    """
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.stress import DEFAULT_MIN_APPLIED, judge, write_report

    path = Path(args.report)
    if path.is_dir():
        path = path / "report.json"
    if not path.is_file():
        raise InputError(f"{path}: no such report (give a report.json written by 'evaluate.py stress' or its folder)")
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: not a JSON report ({err})") from None
    if not isinstance(stored, dict) or not {"protocol", "metrics", "tests"} <= stored.keys():
        raise InputError(f"{path}: not a blind-spot report (needs 'protocol', 'metrics' and 'tests')")
    report = judge(stored, args.min_applied or DEFAULT_MIN_APPLIED)
    write_report(report, args.out or path.parent, plots=not args.no_plots)
    return report


def cmd_make_adversarial(args: argparse.Namespace) -> dict:
    import numpy as np

    from nlgmetrics.metaeval import atomic_write
    from nlgmetrics.stress import ERROR_CODES, make_adversarial

    rows = _multi_reference_rows(args, 1)
    types = args.types.split(",") if args.types else list(ERROR_CODES)
    stats: dict = {}
    made = make_adversarial(rows, np.random.default_rng(args.seed), types, stats=stats)
    with atomic_write(args.out) as handle:
        for row in made:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"out": str(args.out), "n": len(made), "items": len(rows), "per_type": stats, "seed": args.seed}


def cmd_robustness(args: argparse.Namespace) -> dict:
    """MARS Table 4: each item's candidate vs 50%-reordered and context-sentence copies of it (stress.robustness)."""
    from nlgmetrics.metaeval import InputError, read_jsonl
    from nlgmetrics.stress.robustness import markdown_table, run_robustness

    rows = _one_row_per_item(read_jsonl(args.data), args.limit)
    if any(not isinstance(r.get("hyp"), str) or not r.get("refs") for r in rows):
        raise InputError(f"{args.data}: every row needs 'hyp' and 'refs'")
    srcs = [_source_text(r.get("src")) for r in rows]
    args.reference_free_scoring = False
    metrics = {name: build_scorer(name, args) for name in args.metric.split(",") if name}
    report = run_robustness(metrics, [r["hyp"] for r in rows], [list(r["refs"]) for r in rows],
                            srcs if any(srcs) else None, seed=args.seed)
    report["data"] = str(args.data)
    _write_report(report, args.out, args.markdown, markdown_table)
    return report


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evaluate.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score", help="score hypotheses against references")
    p.add_argument("--hyps", required=True, help="candidates, one per line (UTF-8)")
    p.add_argument("--refs", nargs="+", help="one file per reference set, aligned with --hyps")
    p.add_argument("--srcs", help="sources/contexts, one per line (MARS context, reference-free MENLI)")
    p.add_argument("--reference-free", action="store_true", help="MENLI with the source as premise")
    p.add_argument("--out", help="per-segment scores as JSON lines")
    _add_devices_option(p)
    _add_metric_options(p)
    p = sub.add_parser("compare", help="two or more systems on the same references: paired-bootstrap intervals "
                                       "and a significance verdict per pair")
    p.add_argument("--hyps", nargs="+", required=True, help="one file per system, one segment per line (UTF-8)")
    p.add_argument("--refs", nargs="+", required=True, help="one file per reference set, aligned with every system")
    p.add_argument("--srcs", help="sources/contexts, one per line (MARS context)")
    p.add_argument("--names", help="comma-separated system names, one per --hyps file (default: the file stems)")
    p.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples of the segments")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (the same draws for every system)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the verdicts; intervals are at 1 - alpha")
    p.add_argument("--correction", choices=("none", "bonferroni"), default="none",
                   help="multiple comparisons with 3+ systems: none (each pair on its own, said so in the JSON) or "
                        "bonferroni (p-values times the number of pairs, wider difference intervals)")
    p.add_argument("--out", help="also write the result JSON here (indented)")
    p.add_argument("--markdown", help="write the system and pair tables as Markdown here")
    _add_devices_option(p)
    _add_metric_options(p)
    p = sub.add_parser("correlate", help="correlation with human judgments (WMT20 tau-like, Kendall, Pearson)")
    p.add_argument("--data", required=True, help="judged JSONL (schema in ../shared/data/README.md)")
    p.add_argument("--limit", type=int, help="first N items with all their systems")
    p.add_argument("--skip", type=int, default=0, help="leave out the first N items (e.g. a dev slice used for selection)")
    p.add_argument("--human", help="which human score (key of 'scores') to correlate with")
    p.add_argument("--versus", help="a second metric scored on the same rows: paired item bootstrap of the "
                                    "tau-like difference (metric minus versus) under 'versus'")
    p.add_argument("--bootstrap", type=int, default=1000, help="item resamples for --versus")
    p.add_argument("--seed", type=int, default=0, help="seed of the --versus resampling")
    p.add_argument("--human-systems", help="comma-separated systems that are human references (reported with and "
                                           "without them), or 'none'; default: the rows' human_system field, else "
                                           "whole names ref-X/Human-X")
    _add_devices_option(p)
    _add_metric_options(p)
    p = sub.add_parser("adversarial", help="MENLI adversarial preference accuracy")
    p.add_argument("--data", required=True, help="adversarial JSONL (ref, hyp_para, hyp_adv_based, ...)")
    p.add_argument("--reference-free", action="store_true", help="anchor = source, good = r, bad = hyp_adv_free")
    p.add_argument("--limit", type=int, help="first N rows of the file (smoke runs)")
    _add_metric_options(p)
    p = sub.add_parser("stress", help="blind-spot stress tests (one or more metrics, comma-separated)")
    p.add_argument("--data", required=True, help="JSONL with 'refs' (two or more) per item")
    p.add_argument("--out", required=True, help="folder for report.json, report.md and plots/")
    p.add_argument("--tests", help="comma-separated test names (default: every test that needs no extra model)")
    p.add_argument("--limit", type=int, help="first N items")
    p.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds of the noising tests")
    p.add_argument("--gold-ref", type=int, default=0, help="which reference is the gold hypothesis")
    p.add_argument("--gold-system", help="gold hypothesis = 'hyp' of this system's row per item (e.g. Human-H)")
    p.add_argument("--ref-index", default="1",
                   help="which reference is scored against, or 'all' (multi-reference: every other reference)")
    p.add_argument("--mlm", help="masked_lm role value for the bert_diverge test")
    p.add_argument("--keep-last-sentence", action="store_true", help="open-ended text: never switch the last sentence")
    p.add_argument("--min-applied", type=positive_int,
                   help="judge a test only if it applies to at least this many items (default: stress.DEFAULT_MIN_APPLIED)")
    p.add_argument("--chunk", type=positive_int, default=4096,
                   help="rows scored between saves of <out>/scores.json (a rerun with the same --out resumes there)")
    p.add_argument("--no-plots", action="store_true", help=NO_PLOTS_HELP)
    _add_metric_options(p)
    p = sub.add_parser("stress-report", help="re-judge a stored stress report.json and rewrite its table and plots")
    p.add_argument("--report", required=True, help="report.json written by 'stress', or its folder")
    p.add_argument("--out", help="folder to write (default: the report's own folder)")
    p.add_argument("--min-applied", type=positive_int,
                   help="judge a test only if it applies to at least this many items (default: stress.DEFAULT_MIN_APPLIED)")
    p.add_argument("--no-plots", action="store_true", help=NO_PLOTS_HELP)
    p = sub.add_parser("make-adversarial", help="MENLI-format adversarial rows from a set with paraphrase references")
    p.add_argument("--data", required=True, help="JSONL with paraphrase references")
    p.add_argument("--out", required=True, help="adversarial JSONL to write")
    p.add_argument("--types", help="comma-separated error codes (default: all 12)")
    p.add_argument("--limit", type=int, help="first N items")
    p.add_argument("--seed", type=int, default=0, help="seed of the perturbations")
    p = sub.add_parser("robustness", help="MARS Table 4: scores of reordered / context-copied candidates must drop")
    p.add_argument("--data", required=True, help="JSONL with 'hyp', 'refs' and (for context_sentence) 'src'")
    p.add_argument("--out", required=True, help="report JSON")
    p.add_argument("--markdown", help="also write the table as Markdown here")
    p.add_argument("--limit", type=int, help="first N items")
    p.add_argument("--seed", type=int, default=0, help="seed of the reorderings")
    _add_metric_options(p)
    selfbias.add_parser(sub, lambda parser: _add_metric_options(parser, metric=False))
    devmix.add_parser(sub, _add_metric_options)
    return finish_parser(parser)


COMMANDS: dict[str, Callable[[argparse.Namespace], dict]] = {
    "score": cmd_score, "compare": cmd_compare, "correlate": cmd_correlate, "adversarial": cmd_adversarial,
    "stress": cmd_stress, "stress-report": cmd_stress_report, "make-adversarial": cmd_make_adversarial,
    "robustness": cmd_robustness,
    "self-bias": lambda args: selfbias.cmd_self_bias(args, build_scorer),
    "devmix": lambda args: devmix.cmd_devmix(args, build_scorer, _row_scores),
}


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        silence_libraries()
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.modelroles import ModelRoleError, check_device
    from nlgmetrics.truncation import summary, track_truncation

    try:
        if getattr(args, "limit", None) is not None and args.limit < 1:
            raise InputError("--limit must be a positive number of items")
        if getattr(args, "skip", 0) < 0:
            raise InputError("--skip must be zero or a positive number of items")
        if getattr(args, "batch_size", 1) < 1:
            raise InputError("--batch-size must be >= 1")
        if getattr(args, "device", None) not in (None, "auto"):
            check_device(args.device)  # before any model loads
        with track_truncation() as truncated:
            result = COMMANDS[args.command](args)
    except (InputError, ModelRoleError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: no result written (outputs are written only when complete)", file=sys.stderr)
        return 130
    if isinstance(result, dict):
        result["truncated"] = truncated
        if summary(truncated):
            print(f"warning: {summary(truncated)} (scores saw only the first tokens; see 'truncated' in the JSON)",
                  file=sys.stderr)
    _emit(result)
    return 0


def main_exit() -> None:
    """Console-script entry point: ``main`` with its return value as the process exit code."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
