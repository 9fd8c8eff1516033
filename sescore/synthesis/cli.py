"""Command line: ``python train.py synthesize [run|merge|calibrate] ...`` (``run`` is the default).

    python train.py synthesize --config configs/sescore/offline_en.yaml --input news.txt --output out/ \\
        [--limit N] [--shard-index i --num-shards n] [--seed S] [--block-size B] [--device cpu] \\
        [--override mlm.model=DIR ...]
    python train.py synthesize --config configs/sescore/mpnet_v2_synthesize.yaml   # an options file (below)
    python train.py synthesize merge out_shard0/ out_shard1/ --output out/
    python train.py synthesize sentences --input news.txt --input paragraphs.txt:split --output mixed.txt \
        [--input judged.jsonl:refs] [--take N] [--min-words 4]
    python train.py synthesize sentences --config configs/sescore/mpnet_v2_sentences.yaml   # an options file
    python train.py synthesize calibrate --config configs/sescore/offline_en.yaml \\
        [--pairs configs/sescore/severity_pairs_en.yaml] [--nli SPEC] [--mode absolute|ratio] [--write]

``run`` and ``sentences`` take ``--config`` as an options file too (``sescore.options_file``): a YAML of the
command's options, so a recipe's corpus, sizes and folders are a packaged file like its model settings; options on
the command line win. For ``run`` a file is an options file when it has a ``config`` key (naming the synthesis
recipe, which itself never has one).

Each command prints one JSON line (the summary, the shard status or the calibration report). A bad argument,
input file or output folder prints one ``error: ...`` line to stderr and exits with 2; Ctrl-C during ``run``
prints how many sentences are kept and exits with 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nlgmetrics.helpformat import DefaultsHelpFormatter, add_renamed_flag
from nlgmetrics.resources import config_path

RUN_EXAMPLE = """examples:
  nlgmetrics-train synthesize --config configs/sescore/mpnet_v2_synthesize.yaml
  nlgmetrics-train synthesize --config configs/sescore/offline_en_v2.yaml --input sentences.txt \\
      --output runs/sescore/synthesis --limit 1536"""

DEFAULT_PAIRS = config_path("sescore/severity_pairs_en.yaml")


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors caused by the command's arguments or files: reported as one line, never as a traceback."""
    from nlgmetrics.metaeval import InputError as JudgedDataError
    from sescore.synthesis.config import ConfigError
    from sescore.synthesis.inputs import InputError
    from sescore.synthesis.store import StoreError

    return ConfigError, InputError, StoreError, JudgedDataError


def _fail(error: Exception) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 2


def _run_options(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``run``'s arguments with every ``--config`` that is an options file (it has a ``config`` key) expanded; a
    ``--config`` that is a recipe stays as given and wins over an options file's ``config``, like any flag."""
    from sescore.options_file import OptionsFileError, options_file_argv, pop_option, read_options_file

    rest, files = pop_option(argv, "--config")
    option_files, recipes = [], []
    for path in files:
        try:
            values, _ = read_options_file(path)
        except OptionsFileError:  # unreadable or missing: load_config reports it as a recipe, as before
            values = {}
        (option_files if "config" in values else recipes).append(path)
    if recipes:
        rest = [*rest, "--config", recipes[-1]]
    for path in reversed(option_files):
        rest = options_file_argv(parser, path, rest)
    return rest


def _run(argv: list[str]) -> int:
    from nlgmetrics.inputs import positive_int
    from nlgmetrics.recipes import parse_overrides
    from sescore.options_file import OptionsFileError, OptionsFileParser
    from sescore.synthesis.config import load_config
    from sescore.synthesis.run import run_synthesis

    parser = OptionsFileParser(
        prog="nlgmetrics-train synthesize",
        description="SEScore error synthesis -> dataset",
        formatter_class=DefaultsHelpFormatter,
        epilog=RUN_EXAMPLE,
    )
    parser.add_argument(
        "--config",
        required=True,
        help="YAML recipe, e.g. configs/sescore/offline_en.yaml; or an options file of this command "
        "whose 'config' names the recipe (configs/sescore/mpnet_v2_synthesize.yaml)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set one recipe value by its dotted key, VALUE read as YAML (e.g. mlm.model=DIR, "
        "severity.nli=packaged:nli-me5); repeatable; changes the recipe hash like an edit would",
    )
    parser.add_required_option("--input", help="text file, one reference sentence per line (UTF-8)")
    parser.add_required_option("--output", help="folder for the dataset, summary.json and the histogram")
    parser.add_argument(
        "--limit",
        type=positive_int,
        help="only the first N usable sentences (smoke runs, rate estimates); same rows as a full run",
    )
    parser.add_argument("--shard-index", type=int, default=0, help="which of --num-shards this process runs (0-based)")
    parser.add_argument("--num-shards", type=positive_int, default=1, help="split blocks over n processes; merge after")
    parser.add_argument("--seed", type=int, help="overrides the config seed (changes every row and the hash)")
    parser.add_argument(
        "--block-size", type=positive_int, help="sentences per resumable block file (never changes rows)"
    )
    parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: GPU when present)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_renamed_flag(parser, "--no-progress", "--quiet", "quiet", nargs=0)
    try:
        argv = _run_options(parser, argv)
    except OptionsFileError as error:
        return _fail(error)
    args = parser.parse_args(argv)
    try:
        overrides = parse_overrides(args.override)
    except ValueError as error:
        return _fail(error)
    try:
        config = load_config(
            args.config, {**overrides, "seed": args.seed, "block_size": args.block_size, "device": args.device}
        )
        result = run_synthesis(
            config,
            args.input,
            args.output,
            limit=args.limit,
            shard_index=args.shard_index,
            num_shards=args.num_shards,
            progress=not args.quiet,
        )
    except _user_errors() as error:
        return _fail(error)
    except KeyboardInterrupt:  # Ctrl-C is a normal way to stop a long run: say what survives, not where it stopped
        from sescore.synthesis.store import kept_sentences

        print(
            f"interrupted; {kept_sentences(args.output)} sentences kept in {args.output} - rerun the same command "
            "to resume",
            file=sys.stderr,
        )
        return 130
    if result.summary is not None:
        print(json.dumps(result.summary))
    else:
        print(
            json.dumps(
                {
                    "output": str(result.output),
                    "blocks_written": result.blocks_written,
                    "blocks_already_done": result.blocks_skipped,
                    "next": "when every shard has finished: train.py synthesize merge <folders> --output DIR",
                }
            )
        )
    return 0


def _merge(argv: list[str]) -> int:
    from sescore.synthesis.run import merge_outputs

    parser = argparse.ArgumentParser(
        prog="nlgmetrics-train synthesize merge",
        description="combine shard outputs",
        formatter_class=DefaultsHelpFormatter,
        epilog="example:\n  nlgmetrics-train synthesize merge runs/synth-0 runs/synth-1 --output runs/synthesis",
    )
    parser.add_argument("sources", nargs="+", help="run folders (each with work/manifest.json)")
    parser.add_argument("--output", required=True, help="folder for the merged dataset (must not exist)")
    args = parser.parse_args(argv)
    try:
        summary = merge_outputs(args.sources, args.output)
    except _user_errors() as error:
        return _fail(error)
    print(json.dumps(summary))
    return 0


def _calibrate(argv: list[str]) -> int:
    import yaml

    from nlgmetrics.nli import load_nli
    from sescore.synthesis.calibration import calibrate, load_pairs, write_threshold
    from sescore.synthesis.config import load_config

    parser = argparse.ArgumentParser(
        prog="nlgmetrics-train synthesize calibrate",
        formatter_class=DefaultsHelpFormatter,
        description="choose the severity threshold for an NLI model",
        epilog="example:\n  nlgmetrics-train synthesize calibrate --config configs/sescore/offline_en_v2.yaml --write",
    )
    parser.add_argument("--config", required=True, help="synthesis recipe whose severity threshold is calibrated")
    parser.add_argument(
        "--pairs", help="hand-made minor/major edits (YAML; default: the packaged sescore/severity_pairs_en.yaml)"
    )
    parser.add_argument("--nli", help="NLI model (default: the config's severity.nli)")
    parser.add_argument("--mode", choices=["absolute", "ratio"], help="default: the config's severity.mode")
    parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: GPU when present)")
    parser.add_argument("--write", action="store_true", help="store threshold + record in the config file")
    args = parser.parse_args(argv)
    try:  # the config and the pairs file before the NLI model loads; a bad one is one line, not a traceback
        config = load_config(args.config)
        pairs = load_pairs(args.pairs or str(DEFAULT_PAIRS))
    except (*_user_errors(), FileNotFoundError, ValueError, yaml.YAMLError) as error:
        return _fail(error)
    spec = args.nli or config.severity.nli
    report = calibrate(
        load_nli(spec, device=args.device), pairs, args.mode or config.severity.mode, config.severity.batch_size
    )
    if args.write:
        if spec != config.severity.nli:
            raise SystemExit(
                f"--write stores the threshold for the config's NLI model ({config.severity.nli}); "
                f"drop --nli or change severity.nli first"
            )
        write_threshold(args.config, report)
        report["written_to"] = args.config
    print(json.dumps(report))
    return 0


def _refuse_dev_files(path: str, mix: str, data_root: str | None) -> None:
    """Synthesising from the references of a dev-mix file would train on the rows checkpoints are chosen on."""
    from nlgmetrics.metaeval.devmix import mix_files
    from sescore.synthesis.inputs import InputError

    name = mix_files(mix, data_root).get(Path(path).resolve())
    if name is not None:
        raise InputError(
            f"{path} is set '{name}' of the dev mix {mix}: its references would leak into training "
            "and into checkpoint selection; use judged data outside the mix (or your own --mix)"
        )


def _sentences(argv: list[str]) -> int:
    from nlgmetrics.inputs import positive_int
    from nlgmetrics.metaeval import atomic_write
    from sescore.options_file import OptionsFileError, OptionsFileParser, with_options_file
    from sescore.synthesis.inputs import InputError, judged_references, line_range, mix_domains, read_sentences

    parser = OptionsFileParser(
        prog="nlgmetrics-train synthesize sentences",
        formatter_class=DefaultsHelpFormatter,
        description="one input file from several domains (sentences interleaved round-robin, deduplicated)",
        epilog="example:\n  nlgmetrics-train synthesize sentences --config configs/sescore/mpnet_v2_sentences.yaml",
    )
    parser.add_required_option(
        "--input",
        action="append",
        help="a text file, one sentence per line; FILE:START-END for its lines START to END (1-based, inclusive; "
        "e.g. one source of a concatenated corpus); FILE:split for paragraphs (split by spaCy); "
        "FILE.jsonl:refs for the references of a judged file (split by spaCy), refused when "
        "the file is in the dev mix (--mix) that checkpoints are selected on",
    )
    parser.add_argument(
        "--mix", default="devmix/default.yaml", help="dev mix whose judged files may not feed synthesis (:refs inputs)"
    )
    parser.add_argument("--data-root", help="judged-data folder of --mix (default: $NLGMETRICS_DATA)")
    parser.add_required_option("--output", help="new text file (an existing file is never overwritten)")
    parser.add_argument("--take", type=positive_int, help="at most N sentences per input")
    parser.add_argument("--min-words", type=positive_int, default=4, help="drop shorter sentences")
    parser.add_argument("--spacy", default="packaged:en_core_web_sm", help="spaCy pipeline for :split inputs")
    parser.add_argument(
        "--config",
        help="options file: these options as YAML keys (input, take, min_words, "
        "output...), e.g. configs/sescore/mpnet_v2_sentences.yaml; options on the "
        "command line win (an --input there replaces the file's inputs)",
    )
    try:
        argv = with_options_file(parser, argv)
    except OptionsFileError as error:
        return _fail(error)
    args = parser.parse_args(argv)
    if Path(args.output).exists():
        return _fail(InputError(f"{args.output} exists; choose a new file (synthesis runs pin their input's hash)"))
    try:
        sources, splits = [], []
        for spec in args.input:
            path, lines = line_range(spec)
            path, _, how = path.rpartition(":") if path.endswith((":split", ":refs")) else (path, "", "")
            if how == "refs":
                if lines:
                    raise InputError(f"{spec}: a line range applies to text files, not to judged files (:refs)")
                _refuse_dev_files(path, args.mix, args.data_root)
                sources.append(judged_references(path))
            else:
                first, last = lines or (1, None)
                sentences = read_sentences(path)[0]
                if sentences[-1].index + 1 < first:
                    raise InputError(
                        f"{spec}: the file has {sentences[-1].index + 1} lines, the range starts at {first}"
                    )
                sources.append([s.text for s in sentences if s.index + 1 >= first and (last is None or s.index < last)])
            splits.append(bool(how))
    except _user_errors() as error:
        return _fail(error)
    nlp = None
    if any(splits):
        from nlgmetrics.modelroles import load_spacy

        nlp = load_spacy(args.spacy)

    def split(texts):
        return [[s.text for s in doc.sents] for doc in nlp.pipe(texts, batch_size=64)]

    per_source = [
        mix_domains([lines], None, args.min_words, split if wanted else None) for lines, wanted in zip(sources, splits)
    ]
    mixed = mix_domains(per_source, args.take, args.min_words)
    with atomic_write(args.output) as handle:
        handle.write("".join(line + "\n" for line in mixed))
    print(
        json.dumps(
            {
                "output": args.output,
                "sentences": len(mixed),
                "per_input": {spec: min(len(p), args.take or len(p)) for spec, p in zip(args.input, per_source)},
            }
        )
    )
    return 0


# the modes ``synthesize`` dispatches on its first argument, each with its own parser (``run`` is the default); in
# the order a recipe uses them (docs/gen/cli_reference.py documents each)
MODES = {"run": _run, "sentences": _sentences, "merge": _merge, "calibrate": _calibrate}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MODES:
        return MODES[argv[0]](argv[1:])
    return _run(argv)


if __name__ == "__main__":
    sys.exit(main())
