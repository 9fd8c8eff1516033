"""MARS's declaration for the metric registry (``nlgmetrics.registry``).

Importing this module loads no model and no torch: the command line reads it for ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mars.config import ABLATIONS
from nlgmetrics.registry import MetricSpec, option, progress_option

DEFAULT_CONFIG = "mars/offline.yaml"


@dataclass
class MARSOptions:
    mars_config: str | None = option(None, f"mars: YAML config, a path or a packaged name (default: {DEFAULT_CONFIG})")
    ablation: str | None = option(
        None, "mars: the paper's ablations (default: the config's, i.e. full)", choices=tuple(ABLATIONS)
    )
    mars_cache: str | None = option(None, "mars: folder of the augmentation cache (default: the config's cache_dir)")
    mars_window_words: int | None = option(
        None,
        "mars: only the first N words of a reference may be masked, which "
        "bounds the cost of long references (default: the config's "
        "masking.window_words; 0 = no bound, the paper)",
        metavar="N",
    )
    progress: bool = progress_option()


def build_mars(options: MARSOptions) -> Any:
    from mars.scorer import build
    from nlgmetrics.resources import config_path

    overrides: dict[str, Any] = {"progress": options.progress}
    if options.mars_cache:
        overrides["cache_dir"] = options.mars_cache
    if options.mars_window_words is not None:
        overrides["masking.window_words"] = options.mars_window_words
    return build(config_path(options.mars_config or DEFAULT_CONFIG), ablation=options.ablation, overrides=overrides)


MARS = MetricSpec(
    "mars",
    "weighted cosine to the reference and LM-augmented (cloze-filled) references (MARS)",
    MARSOptions,
    build_mars,
    languages="English (spaCy and the causal LM)",
    licence="Apache-2.0 (SmolLM2, MiniLM), MIT (spaCy's en_core_web_sm)",
)
