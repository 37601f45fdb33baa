VENV ?= .venv
PY := $(VENV)/bin/python
export VENV

.PHONY: setup demo doctor lint test docs test-gpu gpu-check bench bench-all docker docker-test clean

setup:
	@bash scripts/install.sh

demo: setup
	$(PY) examples/quickstart.py

doctor: setup
	$(PY) -m frontend doctor

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# two test processes (one per core; a test file stays in one process: module fixtures such as Dask clusters)
test: lint
	$(PY) -m pytest -q -n 2 --dist loadfile

# the documentation site (docs/*.md and the public API's docstrings) as HTML in docs/_build/html; warnings fail
docs: setup
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

test-gpu: setup
	$(PY) -m pytest -q -m gpu

# doctor --require-gpu, the gpu tests, benchmarks/bench_gpu.py -> one report in benchmarks/results/
# (stops after doctor with one line where no CUDA device exists)
gpu-check: setup
	$(PY) benchmarks/gpu_check.py

bench: setup
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/suite.py

bench-all: setup
	$(PY) benchmarks/run.py

# container images (docker/): docker when its daemon answers, else rootful podman (scripts/docker.sh)
docker:
	bash scripts/docker.sh build

docker-test:
	bash scripts/docker.sh test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache docs/_build
