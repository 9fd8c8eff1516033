"""Fit the stored min-max ranges `menli+<metric>` uses with the default models, so its scores never depend on
which rows are scored together.

MENLI's paper min-max normalises both parts over the scored set: a segment's combined score then changes with its
neighbours, and a single segment cannot be scored at all. The MENLI issue asks for fixed, stored normalisation.
Ranges do not rank anything (no human score is read here); they set the two parts' scales, so they are fitted once
on texts like the ones the metric is meant for: the candidates and references of the dev mix's select half (TED
zh-en MT, SummEval summaries, WebNLG data-to-text), the first ``--limit-items`` items of each set, pooled, with the
toolkit's default NLI model, pooling and encoder (or the ones given). One file per partner,
``menli/<nli>+<partner>.json`` under the packaged configs, recording what it was fitted with; ``evaluate.py
--normalization auto`` (the default) finds it by those models. The run's record (rows, seconds) goes to
bench/results/menli_ranges.json.

    python -m bench.fit_menli_ranges [--partners bertscore,chrf,lm-ratio] [--limit-items 100] [--force]

An existing file is never overwritten without ``--force``. Cost: MENLI and each partner on ~1,300 select-half rows,
about 15 min on 2 cores with the default models.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.harness import RESULTS, data_dir, machine, metric


def short_model_name(role: str) -> str:
    """A role value without ``packaged:`` and a weights hash; of a path or hub name, its last part."""
    return Path(role.split(":", 1)[-1].split("@", 1)[0]).name


def partner_name(partner_signature: str, partner: str) -> str:
    """``<partner>[-<encoder or LM>]`` (``bertscore-me5-small``, ``lm-ratio-smollm2``), read off its signature."""
    fields = dict(part.split(":", 1) for part in partner_signature.split("|") if ":" in part)
    model = fields.get("encoder") or fields.get("lm")
    return partner + (f"-{short_model_name(model)}" if model else "")


def file_name(nli_model: str, partner_signature: str, partner: str) -> str:
    """``<nli>+<partner>[-<encoder>]``: the NLI role value and the partner's model without the ``packaged:``
    prefix, or the last part of a path or hub name (``nli-mpnet+bertscore-me5-small``), so two encoders' ranges
    never share a file."""
    return f"{short_model_name(nli_model)}+{partner_name(partner_signature, partner)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--partners", default="bertscore,chrf,lm-ratio")
    parser.add_argument("--nli-model", help="default: the toolkit's default NLI model")
    parser.add_argument("--encoder", help="bertscore's encoder (default: the toolkit's default encoder)")
    parser.add_argument("--limit-items", type=int, default=100, help="items per set of the select half")
    parser.add_argument("--out-dir", help="default: the packaged configs' menli folder")
    parser.add_argument("--force", action="store_true", help="overwrite existing range files")
    args = parser.parse_args()

    from menli import MinMax, MixRecipe, fitted_with
    from nlgmetrics.metaeval.devmix import load_mix, set_rows
    from nlgmetrics.nli import DEFAULT_NLI
    from nlgmetrics.resources import CONFIG_DIR

    out_dir = Path(args.out_dir) if args.out_dir else CONFIG_DIR / "menli"
    nli_model = args.nli_model or DEFAULT_NLI
    settings = {"nli_model": nli_model, **({"encoder": args.encoder} if args.encoder else {})}
    partners = [p for p in args.partners.split(",") if p]
    scorers = {name: metric(name, **settings) for name in ["menli", *partners]}
    targets = {p: out_dir / f"{file_name(nli_model, scorers[p].signature(), p)}.json" for p in partners}
    existing = [str(t) for t in targets.values() if t.exists()]
    if existing and not args.force:
        raise SystemExit(
            f"{', '.join(existing)} exist: pass --force to refit (a packaged file changes every default combined score)"
        )

    mix = load_mix(args.mix)
    rows = [
        r
        for entry in mix["sets"]
        for r in set_rows(entry, data_dir(), "select", int(mix["split_seed"]), args.limit_items)
    ]
    hyps, refs = [r["hyp"] for r in rows], [list(r["refs"]) for r in rows]
    started = time.perf_counter()
    scores, seconds = {}, {}
    for name, scorer in scorers.items():
        t0 = time.perf_counter()
        scores[name] = scorer.score(hyps, refs)
        seconds[name] = round(time.perf_counter() - t0, 1)
        print(f"{name}: {len(rows)} rows, {seconds[name]} s", flush=True)
    nli = MinMax.fit(scores["menli"])
    out_dir.mkdir(parents=True, exist_ok=True)
    for partner, target in targets.items():
        records = fitted_with(scorers["menli"].signature(), scorers[partner].signature())
        MixRecipe.from_ranges([nli, MinMax.fit(scores[partner])], records).save(target)
        print(f"wrote {target}")
    record = {
        "rows": len(rows),
        "limit_items": args.limit_items,
        "mix": args.mix,
        "seconds": seconds,
        "total_seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "files": {p: t.name for p, t in targets.items()},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "menli_ranges.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
