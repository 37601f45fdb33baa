VENV ?= .venv
PY := $(VENV)/bin/python
export VENV

.PHONY: setup demo test test-gpu bench bench-all clean

setup:
	@bash scripts/install.sh

demo: setup
	$(PY) examples/quickstart.py

test: setup
	$(PY) -m pytest -q

test-gpu: setup
	$(PY) -m pytest -q -m gpu

bench: setup
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/suite.py

bench-all: setup
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache
