"""Package a measured MENLI mix as a recipe ``evaluate.py --metric menli+<a>+<b>`` finds by itself.

The fluency ablation (``ablate_menli_fluency.py``, removed after its run; in git history at commit 6764470) chose
its combination under a rule fixed before the run and wrote the chosen weights, the ranges every part was
normalised with and each part's signature to its result file. A toolkit option must score exactly what was
measured, so the recipe is not refitted: this script copies those weights and ranges, and the parts' ``fitted_with``
records derived from the stored signatures, into ``menli/mix/<nli>+<partner>+<fluency>[-<model>].json`` under the
packaged configs. ``MixedScorer`` (default ``recipe="auto"``) then takes it whenever the run's models match every
part's record, and refuses it otherwise.

    python -m bench.export_menli_mix bench/results/menli_fluency_nli-mpnet.json [--out-dir DIR] [--force]

No model is loaded and nothing is scored (it takes a second); an existing recipe is never overwritten without
``--force``. The packaged ``nli-mpnet+sescore-minilm+lm-ratio-smollm2.json`` recipe is this script's output for
``bench/results/menli_fluency_nli-mpnet.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.fit_menli_ranges import partner_name, short_model_name
from bench.harness import REPO


def recipe_from_result(result: dict, source: str):
    """The carried combination of a fluency-ablation result as a ``MixRecipe`` (MENLI, partner, fluency term)."""
    from menli import MinMax, MixPart, MixRecipe
    from menli.scorer import metric_fitted_with, nli_fitted_with

    chosen = result.get("chosen")
    if not chosen or not str(result.get("verdict", "")).startswith("carried"):
        raise SystemExit(
            f"{source}: no combination was carried to the report half ({result.get('verdict')!r}); "
            "a recipe is only packaged for a carried choice"
        )
    names = ["menli", chosen["partner"], result.get("fluency", "lm-ratio")]
    signatures, ranges = result["signatures"], result["ranges"]
    missing = [n for n in names if n not in signatures or n not in ranges]
    if missing:
        raise SystemExit(f"{source}: no stored signature or range for {', '.join(missing)}")
    nli = nli_fitted_with(signatures["menli"])
    if nli is None:
        raise SystemExit(f"{source}: the MENLI signature names no NLI model, formula and direction")
    records = [nli] + [metric_fitted_with(signatures[n]) for n in names[1:]]
    parts = tuple(
        MixPart(n, float(w), MinMax(float(ranges[n]["low"]), float(ranges[n]["high"])), f)
        for n, w, f in zip(names, chosen["weights"], records)
    )
    return MixRecipe(parts, source)


def recipe_name(result: dict, recipe) -> str:
    """``<nli>+<partner>[-<model>]+<fluency>[-<model>]``, the two-way files' naming extended by one part."""
    partners = [partner_name(result["signatures"][p.name], p.name) for p in recipe.parts[1:]]
    return "+".join([short_model_name(result["nli_model"]), *partners])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", help="a fluency-ablation result JSON (bench/results/menli_fluency*.json)")
    parser.add_argument("--out-dir", help="default: the packaged configs' menli/mix folder")
    parser.add_argument("--force", action="store_true", help="overwrite an existing recipe")
    args = parser.parse_args()

    from nlgmetrics.resources import CONFIG_DIR

    path = Path(args.result)
    try:
        source = str(path.resolve().relative_to(REPO))
    except ValueError:
        source = str(path)
    result = json.loads(path.read_text(encoding="utf-8"))
    recipe = recipe_from_result(result, source)
    out_dir = Path(args.out_dir) if args.out_dir else CONFIG_DIR / "menli" / "mix"
    target = out_dir / f"{recipe_name(result, recipe)}.json"
    if target.exists() and not args.force:
        raise SystemExit(
            f"{target} exists: pass --force to replace it (a packaged recipe changes every default mixed score)"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    recipe.save(target)
    print(f"wrote {target}: " + " + ".join(f"{p.weight:g} {p.name}" for p in recipe.parts))


if __name__ == "__main__":
    main()
