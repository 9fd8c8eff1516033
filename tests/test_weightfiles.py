"""Weights the toolkit writes are readable like its other files: safetensors alone creates them private (0600)."""

from __future__ import annotations

import os
import stat

import torch
from safetensors.torch import load_file

from nlgmetrics.weightfiles import save_weights


def test_saved_weights_get_the_mode_of_a_plain_open(tmp_path):
    old = os.umask(0o022)
    try:
        path = save_weights({"w": torch.arange(3.0)}, tmp_path / "model.safetensors", metadata={"format": "pt"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert torch.equal(load_file(str(path))["w"], torch.arange(3.0))
