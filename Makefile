# Two entry points: `make demo` and `make test`. Both create the virtual environment first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
OUT ?= out

.PHONY: demo test check test-deep lint bench clean fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[notebooks,batch,test]"
	touch $(STAMP)

demo: $(STAMP)
	@mkdir -p $(OUT)
	$(VENV)/bin/workbench show lenet5 --batch 8
	$(VENV)/bin/workbench platforms
	$(VENV)/bin/workbench explore lenet5 --platform idsp --batch 8 --jobs 2
	$(VENV)/bin/workbench report lenet5 --platform idsp --params batch=8 --out $(OUT)/report.html

lint: $(STAMP)
	$(PY) -m ruff check workbench tests benchmarks data

# one BLAS thread per process: pytest-xdist already runs a process per core, and OpenBLAS's
# spinning threads beside another busy process made numpy-heavy tests up to 2x slower
PYTEST := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q

# the whole suite, as CI runs it: every tier, the CI hypothesis profile (fixed examples)
test: lint
	HYPOTHESIS_PROFILE=ci $(PYTEST) -n auto --dist loadfile

# the edit loop: ruff, the unit tests and the property tests at a tenth of their examples
check: lint
	HYPOTHESIS_PROFILE=check $(PYTEST) -n auto --dist loadfile -m "not oracle and not e2e and not browser"

# the property and oracle tests with ten times the examples, fresh ones each run
test-deep: $(STAMP)
	HYPOTHESIS_PROFILE=deep $(PYTEST) -n auto --dist worksteal -m "property"

# The long fuzzing profile: 2,000+ mutated files per format (network YAML, grid YAML, ONNX,
# prototxt; and network, grid, hierarchy YAML with numbers at their extremes), each loaded
# under a 10 s bound; prints per format the files, clean errors, clean loads, tracebacks and
# time-outs (both must be 0). `make test` runs the same tests, fewer files.
fuzz: $(STAMP)
	WORKBENCH_FUZZ_FILES=$${WORKBENCH_FUZZ_FILES:-2000} $(PY) -m pytest -q -p no:cacheprovider \
		tests/test_fuzz_yaml.py tests/test_import_fuzz.py tests/test_fuzz_extremes.py -k "mutated"

# every benchmark, its output kept in benchmarks/results/ with the commit and the machine
bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .hypothesis
