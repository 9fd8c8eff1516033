"""``make test`` on a user's clone: without the judged data every test that needs it skips, naming the reason.

The guard runs the data tests (marked ``needs_data`` by ``conftest.py``) with ``NLGMETRICS_DATA`` pointing at an
empty folder: a test that reaches for the data any other way fails here instead of on a user's machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_data_tests_skip_with_the_reason_when_there_is_no_data(tmp_path):
    empty = tmp_path / "no-data"
    empty.mkdir()
    env = {**os.environ, "NLGMETRICS_DATA": str(empty), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "needs_data", "-rs", "tests"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert "skipped" in summary and "failed" not in summary and "error" not in summary, summary
    assert f"shared data not found at {empty}" in done.stdout
