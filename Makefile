# Two set-up commands on a fresh machine: `make demo` and `make test`.
# Both create .venv and install the package with what it needs, then run.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= test,dev,plot,progress,data,dask,fast,xarray,sktime,river

# The well log ships with the package: the tests need neither POSSIBLY_DATA_DIR nor a network.

.PHONY: demo test docs reproduce bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/possibly demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	POSSIBLY_NO_SKIP=1 $(BIN)/python -m pytest

# The paper's figures and numbers at its repeat counts; the report and PNGs are kept in docs/.
reproduce: $(STAMP)
	$(BIN)/possibly reproduce all --out docs/reproductions/results

docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	$(BIN)/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build dist .pytest_cache
