#!/usr/bin/env bash
# The GPU check on a CUDA machine without network access (bench/gpu_check.py says what it runs). Such a machine
# needs PyTorch, Lightning, transformers and torchmetrics installed; any wheels carried in wheels/ (for example
# datasets, peft and their dependencies, made elsewhere with `pip download -d wheels <package>`) are installed
# first, then the toolkit itself from this checkout.
# Usage: bench/gpu_check.sh [RESULTS_FOLDER]   (default bench/results; DEVICE=cpu for a dry run)
set -euo pipefail
cd "$(dirname "$0")/.."
if compgen -G "wheels/*.whl" > /dev/null; then
  python -m pip install --quiet --no-index --no-deps wheels/*.whl
fi
python -m pip install --quiet --no-index --no-deps --no-build-isolation -e .
python -m bench.gpu_check --device "${DEVICE:-cuda}" --results "${1:-bench/results}"
