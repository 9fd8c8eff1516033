"""One registry of metrics: the Python API, every command-line subcommand and users' own packages use it.

Why: a metric known in several places (a command-line factory, each subcommand's flags, the Python classes) gets
different names for the same option (``--nli-model`` vs ``model=``), and a user's metric could join only as
``py:module:function``. Each metric is declared once, as a :class:`MetricSpec` with a typed options dataclass
(names, defaults, help, choices); the command line builds its flags from those declarations, so Python keywords
and flags are the same words with the same defaults (``nli_model=`` is ``--nli-model``).

Metrics are found through the Python entry-point group ``nlgmetrics.metrics`` (the toolkit's own are declared in
its ``pyproject.toml`` like anybody else's), so a separately installed package that declares::

    [project.entry-points."nlgmetrics.metrics"]
    mymetric = "mypackage.registration:SPEC"

works in ``evaluate.py score``, ``compare``, ``correlate``, ``adversarial`` and ``stress`` unchanged. Loading a
spec must stay cheap (no model, no torch): the command line loads every spec to build its ``--help``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import os
import sys
import types
import typing
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

ENTRY_POINT_GROUP = "nlgmetrics.metrics"
TRAIN_GROUP = "nlgmetrics.train_commands"
MISSING = dataclasses.MISSING


class RegistryError(ValueError):
    """A metric name or option the registry cannot resolve (a ValueError: the command line reports it as input)."""


def option(
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] | None = None,
    parse: Callable[[str], Any] | None = None,
    metavar: str | None = None,
    cli: bool = True,
) -> Any:
    """A field of a metric's options dataclass, with what the command line and the docs need to show it.

    Args:
        default: the default value (a list default is copied for each options object).
        help: one sentence for ``--help`` and the docs; say what the default ``None`` means where it is ``None``.
        choices: the allowed values, checked for Python callers too.
        parse: how the command line turns the flag's text into a value (e.g. comma-separated numbers).
        metavar: the placeholder shown in ``--help``.
        cli: False for options that a subcommand sets itself (e.g. ``reference_free`` from ``score``'s flag).

    Returns:
        A ``dataclasses.field`` carrying that metadata.
    """
    metadata = {
        "help": help,
        "choices": tuple(choices) if choices is not None else None,
        "parse": parse,
        "metavar": metavar,
        "cli": cli,
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


# -- the options several metrics share, defined once -------------------------------------------------------------
# The precisions users are offered (nlgmetrics.modelroles.precision.PRECISIONS, kept import-free). int8 dynamic
# quantization exists there for bench/bench_roofline.py to measure, but it is not offered: its Kendall with float32
# was 0.34-0.79 on the metrics' fixed inputs (bench/results/roofline.json), below the 0.99 a fast path must keep.
PRECISIONS = ("float32", "bfloat16")


def batch_size_option(default: int = 64) -> Any:
    """``batch_size``: texts (or text pairs) per model call."""
    return option(default, "texts (or NLI pairs) per model call")


def device_option() -> Any:
    """``device``: where the models run."""
    return option(None, "cpu, cuda, cuda:1 ... (default: a GPU if there is one, else the CPU)")


def precision_option() -> Any:
    """``precision``: the models' forward pass (the metric arithmetic stays float32)."""
    return option(
        "float32",
        "the models' forward pass: bfloat16 takes about half of float32's time for the MPNet-sized defaults on "
        "CPUs with AVX-512 BF16 or AMX and on recent GPUs (small encoders gain less), and moves scores slightly; "
        "metric arithmetic stays float32",
        choices=PRECISIONS,
    )


def lang_option() -> Any:
    """``lang``: the references' language; by default identified from them (``nlgmetrics.language``)."""
    return option(
        None,
        "language of the references as an ISO 639-1 code (en, de, ...); default: identified from the references "
        "(py3langid), and text in a language the metric's models do not cover is refused",
        metavar="LANG",
    )


def progress_option() -> Any:
    """``progress``: progress bars on stderr (the command line's ``--quiet`` turns them off)."""
    return option(True, "progress bars on stderr", cli=False)


@dataclass(frozen=True)
class Option:
    """One option of a metric as the command line and the docs see it (read off an options dataclass field)."""

    name: str
    type: Any
    default: Any
    help: str
    choices: tuple | None = None
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    cli: bool = True

    @property
    def flag(self) -> str:
        """The command-line spelling: ``nli_model`` -> ``--nli-model``."""
        return "--" + self.name.replace("_", "-")

    def same_as(self, other: "Option") -> bool:
        """Whether two metrics' options of one name can share one flag (same type and default)."""
        return self.type == other.type and self.default == other.default and self.choices == other.choices


def options_of(options_type: type) -> list[Option]:
    """The options of an options dataclass, in declaration order."""
    if not dataclasses.is_dataclass(options_type):
        raise RegistryError(f"{options_type!r} is not a dataclass of options")
    hints = typing.get_type_hints(options_type)
    out = []
    for f in dataclasses.fields(options_type):
        meta = f.metadata or {}
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        if default is MISSING:
            raise RegistryError(f"{options_type.__name__}.{f.name} needs a default: every metric option has one")
        out.append(
            Option(
                f.name,
                hints.get(f.name, Any),
                default,
                meta.get("help") or "",
                meta.get("choices"),
                meta.get("parse"),
                meta.get("metavar"),
                meta.get("cli", True),
            )
        )
    return out


@dataclass(frozen=True)
class Combination:
    """How ``<head>+<metric>[+<metric>...]`` is built: its own options and a builder.

    ``build(name, parts, explicit, options, devices)`` gets the whole name, the partner names, the options the
    caller set explicitly (all of them, so the builder can pass each part its own with :func:`part_options`), the
    combination's options object and the ``devices`` count, and returns a Scorer.
    """

    options: type
    build: str | Callable[..., Any]


@dataclass(frozen=True)
class MetricSpec:
    """A metric, declared once.

    Args:
        name: what ``--metric`` and :func:`load_metric` call it.
        summary: one line: what it measures.
        options: a dataclass whose fields (made with :func:`option`) are the metric's options.
        build: ``"module:function"`` (imported on first use, so declaring stays cheap) or a callable taking the
            options object and returning a Scorer (``score(hyps, refs, srcs) -> list[float]``, ``signature()``).
        languages: which languages it reads, for the docs' metric table.
        licence: the licences of the models its default setting loads (and of their training data where that
            is the stricter one), for the docs' metric table: what a user accepts by using it.
        combination: set when ``<name>+<metric>...`` names a combination led by this metric.
    """

    name: str
    summary: str
    options: type
    build: str | Callable[[Any], Any]
    languages: str = "any"
    licence: str = "no model"
    combination: Combination | None = None

    def option_list(self) -> list[Option]:
        return options_of(self.options)

    def make_options(self, **values: Any) -> Any:
        """The options object, checked: unknown names, wrong types and values outside the choices are errors."""
        known = {o.name: o for o in self.option_list()}
        return _checked_options(self.options, known, values, f"metric '{self.name}'")


def _checked_options(options_type: type, known: Mapping[str, Option], values: Mapping[str, Any], what: str) -> Any:
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise RegistryError(f"{what} has no option {', '.join(unknown)}; its options: {', '.join(known) or 'none'}")
    for name, value in values.items():
        _check_value(known[name], value, what)
    return options_type(**values)


def _check_value(opt: Option, value: Any, what: str) -> None:
    if opt.choices is not None and value is not None and value not in opt.choices:
        raise RegistryError(f"{what}: {opt.name}={value!r} is not one of {', '.join(map(str, opt.choices))}")
    expected = _plain_type(opt.type)
    if value is None or expected is None:
        return
    ok = {
        bool: lambda v: isinstance(v, bool),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        str: lambda v: isinstance(v, str),
        list: lambda v: isinstance(v, (list, tuple)),
    }[expected](value)
    if not ok:
        raise RegistryError(f"{what}: {opt.name} must be {expected.__name__}, got {type(value).__name__} {value!r}")


UNIONS = (typing.Union, types.UnionType)


def without_none(annotation: Any) -> Any:
    """``X | None`` -> ``X`` (other unions stay as they are)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if typing.get_origin(annotation) in UNIONS and len(args) == 1 else annotation


def _plain_type(annotation: Any) -> type | None:
    """``int | None`` -> int, ``list[str] | None`` -> list; None for anything else (not checked)."""
    annotation = without_none(annotation)
    if typing.get_origin(annotation) in UNIONS:
        return None
    if typing.get_origin(annotation) in (list, tuple, Sequence):
        return list
    return annotation if annotation in (bool, int, float, str) else None


# -- discovery --------------------------------------------------------------------------------------------------
def _resolve(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """``"module:attribute"`` -> the attribute (imported now), a callable as it is."""
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@functools.lru_cache(maxsize=1)
def _registered() -> dict[str, MetricSpec]:
    """Every spec of the entry-point group; a package whose spec fails to load is skipped with a warning (one
    broken plugin must not take the command line down) and a second spec of a taken name is refused."""
    specs: dict[str, MetricSpec] = {}
    for entry in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.value):
        try:
            spec = entry.load()
        except Exception as error:  # noqa: BLE001 - any import error of a third-party package
            warnings.warn(
                f"metric entry point {entry.name} = {entry.value} could not be loaded ({error}); skipping it",
                stacklevel=2,
            )
            continue
        if not isinstance(spec, MetricSpec):
            warnings.warn(
                f"metric entry point {entry.name} = {entry.value} is not a nlgmetrics.registry.MetricSpec; skipping it",
                stacklevel=2,
            )
            continue
        if spec.name in specs:
            warnings.warn(
                f"metric '{spec.name}' is declared twice ({entry.value} and an earlier entry point); keeping the first",
                stacklevel=2,
            )
            continue
        if "+" in spec.name or "," in spec.name or spec.name.startswith("py:"):
            warnings.warn(
                f"metric name '{spec.name}' ({entry.value}) may not contain '+' or ',' or start with "
                "'py:'; skipping it",
                stacklevel=2,
            )
            continue
        specs[spec.name] = spec
    return specs


def refresh() -> None:
    """Read the entry points again (after installing a metric package into a running interpreter)."""
    _registered.cache_clear()
    importlib.invalidate_caches()


def list_metrics() -> list[str]:
    """Names of every registered metric (toolkit and installed packages), sorted.

    Returns:
        The names :func:`load_metric` and ``--metric`` accept; combinations (``menli+<metric>``) and
            ``py:module:function`` are accepted besides these.
    """
    return sorted(_registered())


def metric_spec(name: str) -> MetricSpec:
    """The declaration of one registered metric.

    Args:
        name: a name from :func:`list_metrics`.

    Returns:
        The metric's declaration: a :class:`MetricSpec` (options, summary, languages).

    Raises:
        RegistryError: no metric of that name is registered (the message lists those that are).
    """
    specs = _registered()
    if name not in specs:
        raise RegistryError(
            f"unknown metric '{name}'; choose from {', '.join(sorted(specs))}, "
            "<metric>+<metric> (e.g. menli+bertscore) or py:module:function"
        )
    return specs[name]


def metric_specs() -> list[MetricSpec]:
    """Every registered spec, in name order (the command line builds its flags from these)."""
    return [spec for _, spec in sorted(_registered().items())]


def parts_of(name: str) -> list[str]:
    """``menli+sescore`` -> ``["menli", "sescore"]``; a plain name -> ``[name]``."""
    if name.startswith("py:"):
        return [name]
    parts = name.split("+")
    if not all(parts):
        raise RegistryError(f"unknown metric '{name}': combinations are written <metric>+<metric>[+<metric>...]")
    return parts


def accepted_options(name: str) -> dict[str, Option]:
    """Every option a metric name takes: its own, or for a combination every part's plus the combination's."""
    parts = parts_of(name)
    if parts[0].startswith("py:"):
        return {}
    out: dict[str, Option] = {}
    for part in parts:
        out.update({o.name: o for o in metric_spec(part).option_list()})
    if len(parts) > 1:
        combination = _combination_of(name)
        out.update({o.name: o for o in options_of(combination.options)})
    return out


def part_options(name: str, explicit: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``explicit`` that metric ``name`` (one registered metric) takes."""
    known = {o.name for o in metric_spec(name).option_list()}
    return {k: v for k, v in explicit.items() if k in known}


def _combination_of(name: str) -> Combination:
    head = parts_of(name)[0]
    combination = metric_spec(head).combination
    if combination is None:
        raise RegistryError(
            f"unknown metric '{name}': {head} does not combine with other metrics "
            f"(combinations start with {', '.join(s.name for s in metric_specs() if s.combination)})"
        )
    return combination


def load_metric(name: str, *, devices: int = 1, **options: Any) -> Any:
    """A ready-to-score metric by name, with its options as keywords (the command-line flags' names and defaults).

    Args:
        name: a registered metric (:func:`list_metrics`), a combination ``menli+<metric>[+<metric>...]``, or
            ``py:package.module:function`` for a plain function ``fn(hyps, refs, srcs) -> list[float]``.
        devices: score in that many processes (one per GPU with ``device="cuda"``, else CPU processes); the scores
            are identical to one process's.
        **options: the metric's options (``help(load_metric)`` of a name: :func:`metric_spec` ``(name).options``);
            for a combination, any part's options and the combination's own.

    Returns:
        A Scorer: ``score(hyps, refs, srcs=None) -> list[float]`` (higher is better) and ``signature()``.

    Raises:
        RegistryError: an unknown name or option, or a value of the wrong type or outside its choices.
    """
    if devices < 1:
        raise RegistryError(f"devices must be >= 1, got {devices}")
    parts = parts_of(name)
    if name.startswith("py:"):
        if options:
            raise RegistryError(f"'{name}' takes no options, got {', '.join(sorted(options))}")
        if devices > 1:
            return _process_scorer(name, {}, devices, None)
        return callable_scorer(name)
    if len(parts) > 1:
        accepted = accepted_options(name)
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise RegistryError(f"{name} has no option {', '.join(unknown)}; its options: {', '.join(accepted)}")
        for key, value in options.items():
            _check_value(accepted[key], value, name)
        combination = _combination_of(name)
        own = {o.name for o in options_of(combination.options)}
        combo_options = combination.options(**{k: v for k, v in options.items() if k in own})
        explicit = {k: v for k, v in options.items() if k not in own}
        return _resolve(combination.build)(name, parts[1:], explicit, combo_options, devices)
    spec = metric_spec(name)
    checked = spec.make_options(**options)
    if devices > 1:
        return _process_scorer(name, options, devices, options.get("device"))
    return _resolve(spec.build)(checked)


def _process_scorer(name: str, options: Mapping[str, Any], devices: int, device: str | None) -> Any:
    from nlgmetrics.parallel import ProcessScorer

    return ProcessScorer(functools.partial(_build_in_process, name, dict(options)), devices, device, name)


def _build_in_process(name: str, options: dict[str, Any], index: int, device: str | None) -> Any:
    """The scorer of one worker process: its own device; progress bars from the first process only."""
    from nlgmetrics.quiet import silence_libraries

    options = dict(options)
    quiet = not options.get("progress", True) or index > 0
    if quiet:
        silence_libraries()
    if name.startswith("py:"):
        return callable_scorer(name)
    known = accepted_options(name)
    if "device" in known:
        options["device"] = device
    if "progress" in known:
        options["progress"] = not quiet
    return load_metric(name, **options)


def callable_scorer(name: str) -> Any:
    """``py:module:function`` -> a Scorer around the user's function (imported with the working directory first).

    Args:
        name: ``py:package.module:function``; the function takes ``(hyps, refs, srcs)`` and returns one float per
            hypothesis.

    Returns:
        A ``FunctionScorer`` named ``name``.
    """
    from nlgmetrics.metaeval.scorer import FunctionScorer

    module_name, _, function_name = name[3:].rpartition(":")
    if not module_name or not function_name:
        raise RegistryError(f"'{name}': write a Python callable as py:package.module:function")
    saved = list(sys.path)
    # only for this import, so the working directory cannot shadow later imports; the absolute path, because
    # Python caches the finder of "." with the directory it was first used in
    sys.path.insert(0, os.getcwd())
    importlib.invalidate_caches()
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as error:
        raise RegistryError(f"'{name}': cannot import {module_name}:{function_name} ({error})") from error
    finally:
        sys.path[:] = saved
    if not callable(function):
        raise RegistryError(f"'{name}' is not callable")
    return FunctionScorer(function, name)


@dataclass(frozen=True)
class TrainCommand:
    """A ``train.py`` subcommand, declared by the package that owns it (entry-point group
    ``nlgmetrics.train_commands``).

    Args:
        name: the subcommand (``train.py NAME ...``).
        summary: one line for ``train.py --help``.
        run: ``"module:function"``, imported only when the command runs; ``function(argv) -> int`` (exit status).
    """

    name: str
    summary: str
    run: str | Callable[[list[str]], int]

    def __call__(self, argv: list[str]) -> int:
        return _resolve(self.run)(argv)


def train_commands() -> dict[str, TrainCommand]:
    """Every declared ``train.py`` subcommand by name, in the order of their declaring packages' entry points."""
    out: dict[str, TrainCommand] = {}
    for entry in importlib.metadata.entry_points(group=TRAIN_GROUP):
        try:
            command = entry.load()
        except Exception as error:  # noqa: BLE001 - any import error of a third-party package
            warnings.warn(f"train command {entry.name} = {entry.value} could not be loaded ({error})", stacklevel=2)
            continue
        if isinstance(command, TrainCommand) and command.name not in out:
            out[command.name] = command
    return out


__all__ = [
    "Combination",
    "ENTRY_POINT_GROUP",
    "MetricSpec",
    "Option",
    "RegistryError",
    "TRAIN_GROUP",
    "TrainCommand",
    "accepted_options",
    "batch_size_option",
    "callable_scorer",
    "device_option",
    "list_metrics",
    "load_metric",
    "metric_spec",
    "metric_specs",
    "option",
    "options_of",
    "part_options",
    "precision_option",
    "progress_option",
    "refresh",
    "train_commands",
    "without_none",
]
