"""The metric flags of every ``evaluate.py`` subcommand, built from the metric registry's declarations.

The command line knows no metric by itself: each flag is an option some registered metric declares
(``nlgmetrics.registry``), with that option's name, default, help and choices, so ``--nli-model X`` on the command
line and ``load_metric("menli", nli_model="X")`` in Python are one thing. A flag set to something other than its
default that none of the named metrics takes is an error (it would otherwise be ignored without a word).
"""

from __future__ import annotations

import argparse
import sys
import typing
import warnings
from typing import Any, Sequence

from nlgmetrics.registry import UNIONS, Option, accepted_options, load_metric, metric_specs, options_of, without_none


def cli_type(opt: Option) -> tuple[Any, str | None]:
    """How the command line reads an option: (type or parser, nargs)."""
    if opt.parse is not None:
        return opt.parse, None
    annotation = without_none(opt.type)
    if typing.get_origin(annotation) in UNIONS:
        return str, None
    if typing.get_origin(annotation) in (list, tuple, Sequence):
        inner = (typing.get_args(annotation) or (str,))[0]
        return inner, "+"
    return (annotation if annotation in (bool, int, float, str) else str), None


def registry_options() -> dict[str, tuple[Option, list[str]]]:
    """Every command-line option of every registered metric and combination, with the metrics that take it.

    Two metrics declaring one name must declare the same type, default and choices (they share one flag); a
    metric whose option clashes is left out of that flag with a warning, so one badly declared plugin cannot take
    the command line down.
    """
    out: dict[str, tuple[Option, list[str]]] = {}
    for spec in metric_specs():
        owners = [(spec.name, spec.option_list())]
        if spec.combination is not None:
            owners.append((f"{spec.name}+<metric>", options_of(spec.combination.options)))
        for owner, options in owners:
            for opt in options:
                if not opt.cli:
                    continue
                if opt.name not in out:
                    out[opt.name] = (opt, [owner])
                elif out[opt.name][0].same_as(opt):
                    out[opt.name][1].append(owner)
                else:
                    warnings.warn(
                        f"metric {owner} declares option {opt.name} unlike {out[opt.name][1][0]} "
                        f"(default {opt.default!r} vs {out[opt.name][0].default!r}); its flag "
                        f"{opt.flag} keeps the first declaration",
                        stacklevel=2,
                    )
    return out


def add_metric_options(parser: argparse.ArgumentParser, metric: bool = True, several: bool = False) -> None:
    """The ``metric options`` group: ``--metric`` and one flag per registered option, plus ``--quiet``.

    Args:
        parser: the subcommand's parser.
        metric: whether the subcommand takes ``--metric`` (self-bias builds its own).
        several: ``--metric`` takes a comma-separated list (stress, robustness).
    """
    group = parser.add_argument_group("metric options")
    if metric:
        names = ", ".join(spec.name for spec in metric_specs())
        group.add_argument(
            "--metric",
            required=True,
            metavar="NAME" + ("[,NAME...]" if several else ""),
            help=f"one of {names}; menli+<metric>[+<metric>...] (a MENLI mix); or "
            "py:module:function for your own function(hyps, refs, srcs) -> list[float]"
            + ("; several, comma-separated, are measured side by side" if several else ""),
        )
    for opt, owners in registry_options().values():
        kind, nargs = cli_type(opt)
        kwargs: dict[str, Any] = {"default": opt.default, "help": f"{opt.help} [{', '.join(owners)}]"}
        if kind is bool:  # --flag, or --flag/--no-flag when it is on by default
            kwargs["action"] = argparse.BooleanOptionalAction if opt.default else "store_true"
        else:
            kwargs["type"] = kind
            if nargs:
                kwargs["nargs"] = nargs
            if opt.choices:
                kwargs["choices"] = opt.choices
            if opt.metavar:
                kwargs["metavar"] = opt.metavar
        group.add_argument(opt.flag, **kwargs)
    group.add_argument(
        "--save-normalization",
        metavar="FILE",
        help="menli+<metric>[+<metric>...]: write the recipe (weights and min-max ranges) fitted or "
        "used here to this JSON, for --normalization FILE later",
    )
    group.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bars and no library warnings (transformers, Lightning, datasets)",
    )


def check_flags(args: argparse.Namespace, names: Sequence[str], extra: Sequence[str] = ()) -> None:
    """A metric flag set away from its default that none of ``names`` takes is an error naming both.

    Args:
        args: the parsed command line.
        names: the metric names of this run (a combination counts with all its parts).
        extra: options the subcommand reads itself (stress's BERTScore variants read --encoder and --layer).
    """
    from nlgmetrics.metaeval import InputError

    taken: set[str] = set(extra)
    for name in names:
        taken.update(accepted_options(name))
    for opt, owners in registry_options().values():
        value = getattr(args, opt.name, opt.default)
        if value != opt.default and opt.name not in taken:
            raise InputError(
                f"{opt.flag} is not an option of {', '.join(names)}: it is for {', '.join(owners)} "
                f"(leave it out for {'this metric' if len(names) == 1 else 'these metrics'})"
            )


def explicit_options(args: argparse.Namespace, name: str, reference_free: bool = False) -> dict[str, Any]:
    """The options of metric ``name`` as the command line set them: flags away from their defaults, progress bars
    unless ``--quiet``, and ``reference_free`` for a metric that scores against the source.

    Args:
        args: the parsed command line.
        name: one metric name (or combination).
        reference_free: the subcommand scores against the source (``score --reference-free``).

    Returns:
        Keywords for :func:`nlgmetrics.registry.load_metric`.
    """
    accepted = accepted_options(name)
    out: dict[str, Any] = {}
    for opt in accepted.values():
        if opt.cli and hasattr(args, opt.name) and getattr(args, opt.name) != opt.default:
            out[opt.name] = getattr(args, opt.name)
    if "progress" in accepted and getattr(args, "quiet", False):
        out["progress"] = False
    if reference_free and "reference_free" in accepted:
        out["reference_free"] = True
    return out


def metric_from_args(
    name: str,
    args: argparse.Namespace,
    reference_free: bool = False,
    run_names: Sequence[str] | None = None,
    overrides: dict[str, Any] | None = None,
    check: bool = True,
) -> Any:
    """The scorer of ``--metric NAME`` with the flags of this command line; the registry's notes go to stderr.

    Args:
        name: one metric name (or combination) of ``--metric``.
        args: the parsed command line.
        reference_free: the subcommand scores against the source.
        run_names: every metric of this run (stress and robustness measure several): a flag is checked against
            all of them.
        overrides: options set by the subcommand itself (devmix's ``--versus-encoder`` for its baseline).
        check: False when the subcommand already ran :func:`check_flags` over its whole run.

    Returns:
        A Scorer.
    """
    if check:
        check_flags(args, run_names or [name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        options = {**explicit_options(args, name, reference_free), **(overrides or {})}
        scorer = load_metric(name, devices=getattr(args, "devices", 1), **options)
    for warning in caught:
        if issubclass(warning.category, UserWarning):
            print(f"note: {warning.message}", file=sys.stderr)
    return scorer


def save_normalization(scorer: Any, args: argparse.Namespace) -> None:
    """``--save-normalization FILE``: the recipe a MENLI mix used (fitted on these rows, or stored)."""
    path = getattr(args, "save_normalization", None)
    if not path:
        return
    recipe = getattr(scorer, "last_recipe", None)
    if recipe is None:
        from nlgmetrics.metaeval import InputError

        raise InputError("--save-normalization applies to menli+<metric>[+<metric>...] only")
    recipe.save(path)
