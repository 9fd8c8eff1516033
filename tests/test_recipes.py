"""The one recipe loader (``nlgmetrics.recipes``) that MARS, SEScore synthesis and NLI training configs share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nlgmetrics.recipes import (
    RecipeError,
    RecipeNotFoundError,
    apply_overrides,
    load_recipe,
    parse_overrides,
    read_yaml,
)


@dataclass(frozen=True)
class Window:
    words: int = 0
    ratios: tuple[float, ...] = (0.0, 0.2)


@dataclass(frozen=True)
class Extra:
    span: int = 6


@dataclass(frozen=True)
class Recipe:
    name: str = "toy"
    window: Window = field(default_factory=Window)
    extra: Extra | None = None
    weights: dict = field(default_factory=lambda: {"a": 1.0})


def _load(source, overrides=None):
    return load_recipe(
        Recipe, source, overrides, label="toy recipe", ignore=("metric",), optional_sections={"extra": Extra}
    )


def test_files_mappings_objects_and_defaults_build_the_same_nested_dataclass(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("metric: toy\nname: mine\nwindow: {words: 40, ratios: [0.0, 0.4]}\nextra: {span: 3}\n")
    loaded = _load(path)
    assert loaded == Recipe("mine", Window(40, (0.0, 0.4)), Extra(3))
    assert isinstance(loaded.window.ratios, tuple)  # YAML lists become tuples where the default is one
    assert (
        _load(loaded) == loaded
        and _load({"name": "mine", "window": {"words": 40, "ratios": [0.0, 0.4]}, "extra": {"span": 3}}) == loaded
    )
    assert _load(None) == Recipe() and _load({"extra": None}).extra is None  # an optional section stays null


def test_overrides_take_dotted_or_double_underscore_keys(tmp_path: Path) -> None:
    assert _load(None, {"window.words": 8, "window__ratios": [0.0, 0.6], "name": "x"}) == Recipe(
        "x", Window(8, (0.0, 0.6))
    )
    base = {"window": {"words": 1}}
    assert apply_overrides(base, {"window.words": 2}) == {"window": {"words": 2}} and base == {"window": {"words": 1}}
    with pytest.raises(ValueError, match="'name' is not a section"):
        apply_overrides({"name": "x"}, {"name.first": 1})
    assert parse_overrides(["window.words=48", "window.ratios=[0.0, 0.4]", "name=fast"]) == {
        "window.words": 48,
        "window.ratios": [0.0, 0.4],
        "name": "fast",
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides(["window"])


def test_errors_name_the_file_and_the_dotted_key(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("window: {wrods: 3}\n")
    with pytest.raises(
        RecipeError,
        match=rf"toy recipe {path}: unknown key 'window\.wrods'; known in 'window': "
        "ratios, words",
    ):
        _load(path)
    with pytest.raises(RecipeError, match="^toy recipe: unknown keys 'a', 'b'; known at the top level"):
        _load({"b": 1, "a": 2})
    with pytest.raises(RecipeError, match="section 'window' must be a mapping of keys to values, got list"):
        _load({"window": [1]})
    path.write_text("- 1\n")
    with pytest.raises(RecipeError, match="must be a mapping of keys to values, got list"):
        _load(path)
    path.write_text("name: [1, 2\n")
    with pytest.raises(RecipeError, match="is not valid YAML: while parsing a flow sequence"):
        _load(path)
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(RecipeError, match="cannot be read"):
        _load(path)


def test_a_missing_file_is_a_recipe_error_and_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(RecipeNotFoundError, match="config file not found: .*nope.yaml") as caught:
        read_yaml(tmp_path / "nope.yaml")
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, ValueError)
    assert read_yaml("mars/offline.yaml")[1].name == "offline.yaml"  # packaged recipes by their short name


def test_the_three_recipe_kinds_use_the_shared_loader(tmp_path: Path) -> None:
    from mars.config import load_config as load_mars
    from nlgmetrics.nli.training import NLITrainConfig
    from sescore.synthesis.config import ConfigError
    from sescore.synthesis.config import load_config as load_synthesis

    path = tmp_path / "bad.yaml"
    path.write_text("bogus: 1\n")
    for load in (load_mars, load_synthesis, NLITrainConfig.from_yaml):
        with pytest.raises(RecipeError, match=rf"{path}: unknown key 'bogus'; known at the top level"):
            load(path)
    assert ConfigError is RecipeError  # synthesis callers that catch ConfigError catch the loader's errors
    assert NLITrainConfig.from_yaml("nli/minilm_lora.yaml", {"lora.r": 4, "epochs": 2}).lora.r == 4


def test_one_rule_for_the_data_folder_in_recipe_paths(tmp_path, monkeypatch):
    """``${NLGMETRICS_DATA}`` in a recipe path is the folder ``data_root`` finds, for every reader of such paths."""
    from nlgmetrics.nli.training import read_nli_jsonl
    from nlgmetrics.resources import expand_data

    (tmp_path / "nli").mkdir()
    (tmp_path / "nli" / "x.jsonl").write_text('{"premise": "a", "hypothesis": "b", "label": 0}\n', encoding="utf-8")
    monkeypatch.setenv("NLGMETRICS_DATA", str(tmp_path))
    assert expand_data("${NLGMETRICS_DATA}/nli/x.jsonl") == f"{tmp_path}/nli/x.jsonl"
    assert expand_data("runs/plain.txt") == "runs/plain.txt"
    assert read_nli_jsonl("${NLGMETRICS_DATA}/nli/x.jsonl")[0]["label"] == 0
    monkeypatch.setenv("NLGMETRICS_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="judged data folder not found.*NLGMETRICS_DATA"):
        expand_data("${NLGMETRICS_DATA}/nli/x.jsonl")
