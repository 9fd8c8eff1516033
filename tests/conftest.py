"""Shared fixtures: offline hub, tiny models of every architecture, and the path to ../shared/data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("WANDB_MODE", "offline")
sys.path.insert(0, str(Path(__file__).parent))

import nlgmetrics  # noqa: E402,F401  (before any test's first matrix product: it puts MKL in its strict mode)

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    from nlgmetrics.resources import data_folder

    return data_folder(beside=REPO)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that reads the judged data asks for ``data_dir`` and is marked ``needs_data``: on a machine
    without the data (a user's clone) it skips with the reason instead of failing (tests/test_without_data.py)."""
    for item in items:
        if "data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs_data)


# the folders of the judged data the tests read (schema and protocol: the data's own README)
DATA_FOLDERS = ("judgments", "multiref", "adversarial", "nli", "pairs", "corpus")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data_dir()
    missing = [name for name in DATA_FOLDERS if not (path / name).is_dir()]
    if missing:
        pytest.skip(f"shared data not found at {path} (no {', '.join(missing)}; set NLGMETRICS_DATA)")
    return path


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny model, built once per session."""
    from tiny_models import build_all

    return build_all(tmp_path_factory.mktemp("tiny_models"))


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A per-test ``$NLGMETRICS_CACHE``: conversion tests never write into the user's cache."""
    monkeypatch.setenv("NLGMETRICS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real packaged models convert into the user's cache (once per machine), as they would in use."""
    monkeypatch.delenv("NLGMETRICS_CACHE", raising=False)
