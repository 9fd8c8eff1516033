"""The tiny test models are the same in every process, so a test's inputs do not change between sessions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def test_tiny_tokenizers_are_built_identically_in_separate_processes(tmp_path):
    """Trained WordPiece/unigram vocabularies broke ties by a per-process hash order (the bert tokenizer of three
    builds had three vocabularies); the tiny tokenizers are now built from the corpus's words instead."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from tiny_models import _unigram_tokenizer, _wordpiece_tokenizer; "
        "_wordpiece_tokenizer(Path(sys.argv[2]) / 'wordpiece'); _unigram_tokenizer(Path(sys.argv[2]) / 'unigram')"
    )
    for run in ("a", "b"):
        subprocess.run(
            [sys.executable, "-c", code, str(TESTS), str(tmp_path / run)],
            check=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            capture_output=True,
        )
    for kind in ("wordpiece", "unigram"):
        first, second = (tmp_path / run / kind / "tokenizer.json" for run in ("a", "b"))
        assert first.read_bytes() == second.read_bytes(), kind
