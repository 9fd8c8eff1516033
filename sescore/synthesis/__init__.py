"""SEScore stratified error synthesis: raw sentences -> (reference, candidate, score) triples as a dataset.

Pure parts: ``tokens`` (word units), ``budget`` (stratification), ``planning`` (all random draws), ``edits``,
``severity``. Model parts: ``fillers`` (masked LM, seq2seq, causal LM) and the shared ``nli`` package. Shell:
``run`` (blocks, resume, shards), ``store`` (Arrow blocks -> datasets), ``summary``, ``calibration``, ``cli``.
"""
from sescore.synthesis.budget import BudgetTable
from sescore.synthesis.config import ConfigError, FillerConfig, SeverityConfig, SpanLength, SynthesisConfig, load_config
from sescore.synthesis.fillers import FillRequest, build_filler
from sescore.synthesis.inputs import InputError
from sescore.synthesis.pipeline import Sentence, SynthesisModels, synthesize_group
from sescore.synthesis.run import load_models, merge_outputs, run_synthesis
from sescore.synthesis.severity import rescale, severities

__all__ = [
    "BudgetTable", "ConfigError", "FillRequest", "FillerConfig", "InputError", "Sentence", "SeverityConfig",
    "SpanLength", "SynthesisConfig", "SynthesisModels", "build_filler", "load_config", "load_models",
    "merge_outputs", "rescale", "run_synthesis", "severities", "synthesize_group",
]
