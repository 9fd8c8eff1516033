"""SEScore stratified error synthesis: raw sentences -> (reference, candidate, score) triples as a dataset.

Pure parts: ``tokens`` (word units), ``budget`` (stratification), ``planning`` (all random draws), ``edits``,
``severity``. Model parts: ``fillers`` (masked LM, seq2seq, causal LM) and the shared ``nli`` package. Shell:
``run`` (blocks, resume, shards), ``store`` (Arrow blocks -> datasets), ``summary``, ``calibration``, ``cli``.

Every name is imported on first access (``nlgmetrics.lazy`` says why): reading a recipe with
``sescore.synthesis.config`` loads no model code.
"""

from nlgmetrics.lazy import lazy_exports

_EXPORTS = {
    "sescore.synthesis.budget": ("BudgetTable",),
    "sescore.synthesis.config": (
        "ConfigError",
        "FillerConfig",
        "SeverityConfig",
        "SpanLength",
        "SynthesisConfig",
        "load_config",
    ),
    "sescore.synthesis.fillers": ("FillRequest", "build_filler"),
    "sescore.synthesis.inputs": ("InputError",),
    "sescore.synthesis.pipeline": ("Sentence", "SynthesisModels", "synthesize_group"),
    "sescore.synthesis.run": ("load_models", "merge_outputs", "run_synthesis"),
    "sescore.synthesis.severity": ("rescale", "severities"),
}

__getattr__ = lazy_exports("sescore.synthesis", {name: module for module, names in _EXPORTS.items() for name in names})

__all__ = sorted(name for names in _EXPORTS.values() for name in names)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
