# Veil — the two commands: `make run` (install and start the embedded service) and
# `make test` (install and run the whole suite). Everything installs into .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
# The Python versions Veil is tested under: pyproject.toml's requires-python says the same
# (tests/test_python_versions.py). Not 3.13: pgserver 0.1.4, the embedded PostgreSQL, publishes
# wheels for 3.9-3.12 only (no sdist), so `pip install` finds none.
PYTHONS := 3.11 3.12
# Before the venv is made: the interpreter it is made with (or was, when $(VENV) exists).
CHECK_PYTHON = py=$(PYTHON); hint="choose one with PYTHON=, e.g. make $(or $(MAKECMDGOALS),install) PYTHON=python$(lastword $(PYTHONS))"; \
	if test -x $(PY); then py=$(PY); hint="$(VENV) was made with it: rm -r $(VENV), then make $(or $(MAKECMDGOALS),install) PYTHON=python$(lastword $(PYTHONS))"; fi; \
	v=$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])') || { echo "$$py: no such Python; Veil supports Python $(PYTHONS) ($$hint)" >&2; exit 1; }; \
	case " $(PYTHONS) " in *" $$v "*) ;; *) echo "$$py is Python $$v; Veil supports Python $(PYTHONS) ($$hint)" >&2; exit 1;; esac

.PHONY: install run test test-fast bench openapi clean fuzz faults stress load reliability check-python

$(STAMP): pyproject.toml
	@$(CHECK_PYTHON)
	@echo "Installing Veil and its dependencies into $(VENV) (a minute or two the first time)..."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

check-python:
	@$(CHECK_PYTHON)

run: install
	$(VENV)/bin/veil serve

# pytest exits 5 when it collects no test: that fails this target (and CI), as it should.
# ruff first (under a second): bug-class rules only, pyproject.toml's [tool.ruff].
test: install
	$(VENV)/bin/ruff check --quiet .
	$(PY) -m pytest -q -p no:cacheprovider -m "not long"

test-fast: install
	$(PY) -m pytest -q -p no:cacheprovider tests/privacy tests/api

# Reliability runs that take minutes (docs/reliability.md); `make test` runs small versions.
LONG := $(PY) -m pytest -q -s -p no:cacheprovider --timeout 1800

fuzz: install  # schemathesis, every operation, >= 2,000 requests (VEIL_FUZZ_EXAMPLES per operation and mode)
	$(LONG) -m long tests/reliability/test_fuzz.py

faults: install  # every fault test, including 50 jobs under repeated SIGKILLs of the workers
	$(LONG) tests/reliability/test_faults.py tests/reliability/test_postgres_outage.py

stress: install  # 1,000 two-request budget races, five 50-request races
	$(LONG) tests/reliability/test_races.py

load: install  # constant-rate load on a real `veil serve` (60 s; VEIL_LOAD_SECONDS, VEIL_LOAD_READS, VEIL_LOAD_SUBMITS)
	$(PY) -m benchmarks.load

reliability: fuzz faults stress load

# Peers that pin old pandas/numpy or mbi 1.1 (anjana, pycanon, smartnoise-synth)
# get their own venv and run in their own interpreter (VEIL_PEERS_PYTHON); the rest install
# beside Veil.
PEERS := .venv-peers
# smartnoise-synth's MST and AIM without its declared extras: its dependencies pull torch and
# several GB of CUDA libraries (through opacus) that MST and AIM never import.
SMARTNOISE := smartnoise-synth==1.0.8 smartnoise-sql==1.0.10 mbi==1.1.0 disjoint-set PyYAML \
	SQLAlchemy antlr4-python3-runtime==4.9.3 opendp==0.14.2 Deprecated wrapt Faker attrs \
	jax==0.10.2 jaxlib==0.10.2 ml_dtypes opt_einsum chex absl-py toolz optax networkx
bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet anjana pycanon || true
	$(PEERS)/bin/python -m pip install --quiet --no-deps $(SMARTNOISE) || true
	VEIL_PEERS_PYTHON=$(PEERS)/bin/python $(PY) -m benchmarks

openapi: install
	$(VENV)/bin/veil openapi

clean:
	rm -rf $(VENV) .veil
