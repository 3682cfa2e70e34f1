# skewbench — `make bench` runs the main job, `make test` runs the tests; both set themselves up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
OUT    ?= results/$(shell date -u +%Y%m%dT%H%M%SZ)
MESSAGES ?=

BENCH_WORKERS ?= 2
BENCH_CORES   ?= 50
# Memory per worker node and executor heap: heaps of 512m spent seconds per task in GC at W >= 50.
BENCH_MEMORY  ?= 5g
BENCH_EXECUTOR_MEMORY ?= 4g
# The default studies (bench/studies/*.yaml); engine calibrates the predictions of the others.
STUDIES       ?= engine matrix storm offered aggregation levers efficiency centre emulation dkg fang naivebayes sustainable scaleout megaphone fang-live fang-theta advice

.PHONY: setup browser test fuzz study study-tw speed bench api-bench report clean

setup: $(STAMP)

# pip -qq: errors only (this machine's pip configuration may warn about every package it looks up).
$(STAMP): pyproject.toml
	@echo "setup: skewbench and its libraries (numpy, numba, pandas, pyarrow, seaborn, pytest, ...) into $(VENV), once"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -qq --upgrade pip
	@$(PY) -m pip install -qq -e '.[test]'
	@touch $@

# The HTML report's browser test renders the page in Debian's Chromium through its chromedriver.
BROWSER_PKGS := chromium chromium-driver fonts-dejavu-core

browser:  ## Debian's chromium + chromedriver for tests/test_html_report.py (apt-get as root; a no-op when present)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	    echo "setup: Debian's Chromium and ChromeDriver with apt-get (the HTML report's browser test), once"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	        $(BROWSER_PKGS) >/dev/null; \
	else \
	    echo "warning: chromium and chromedriver are missing and only root can install them, so the HTML report's" >&2; \
	    echo "  browser test will be skipped: sudo apt-get install $(BROWSER_PKGS)" >&2; \
	fi

# The tests without a cluster run on both cores (pytest-xdist) while the infrastructure's venvs are built; then
# the cluster's tests: the pipeline's one at a time on their shared cluster (tests/spark/conftest.py), and
# meanwhile the infrastructure's on clusters of their own, their output after (cluster-ups take turns at the
# plays, which install into the shared .venv-cluster). What this machine cannot run is said first and, with
# every skip counted, last (tests/skips.py); SKEWBENCH_NO_SKIP=1 (CI) makes a skip fail.
INFRA_LOG := .cache/tests-infra.log
SKIPS_LOG := .cache/tests-skipped.txt
SKIPS_END := $(PY) tests/skips.py end $(SKIPS_LOG)

test: setup browser  ## unit + conformance + analytical tests (the slowest listed: the suite must stay under 35 min)
	@mkdir -p $(dir $(SKIPS_LOG)) && rm -f $(SKIPS_LOG) && $(PY) tests/skips.py start
	@export SKEWBENCH_SKIPS=$(abspath $(SKIPS_LOG)); \
	$(MAKE) --no-print-directory -f infra/cluster.mk infra-setup infra-lint-setup & venvs=$$!; \
	$(PY) -m pytest -q -n 2 --durations=10 tests --ignore=tests/spark --ignore=tests/infra; unit=$$?; \
	wait $$venvs && [ $$unit = 0 ] || { $(SKIPS_END); exit 1; }
	@export SKEWBENCH_SKIPS=$(abspath $(SKIPS_LOG)); \
	$(PY) -m pytest -q -p no:cacheprovider --durations=10 tests/infra > $(INFRA_LOG) 2>&1 & infra=$$!; \
	$(PY) -m pytest -q --durations=20 tests/spark; spark=$$?; \
	wait $$infra; infra=$$?; echo "--- tests/infra (run beside tests/spark; $(INFRA_LOG)):"; cat $(INFRA_LOG); \
	$(SKIPS_END) && [ $$spark = 0 ] && [ $$infra = 0 ]

# The fuzz tests of what users give (tests/test_fuzz.py, the file loaders' too), which `make test` runs with few fixed
# examples: here from a fresh seed, printed first, with 20 times as many (SEED=N draws a run's examples again).
FUZZ_TESTS := tests/test_fuzz.py tests/workloads/test_files_fuzz.py

fuzz: setup  ## the fuzz tests with a fresh random seed and 20x the examples (SEED=N repeats a run)
	@seed=$(if $(SEED),$(SEED),$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')); \
	echo "fuzz: hypothesis seed $$seed (make fuzz SEED=$$seed draws the same examples)"; \
	SKEWBENCH_FUZZ=1 $(PY) -m pytest -q -n 2 -p no:cacheprovider --hypothesis-seed=$$seed $(FUZZ_TESTS)

study: setup  ## the papers' simulations at their sizes (MESSAGES=N caps every stream), into $(OUT)
	$(VENV)/bin/skewbench study --out $(OUT) $(if $(MESSAGES),--messages $(MESSAGES))

study-tw: setup  ## the long simulations: TW at its 1.2G messages (hours; prints the peak memory), into $(OUT)
	$(VENV)/bin/skewbench study --long --out $(OUT) $(if $(MESSAGES),--messages $(MESSAGES))

speed: setup  ## routing rate of every scheme vs key grouping (10M messages, S=5, W=100)
	$(VENV)/bin/skewbench speed

# The named study files that send a stream through the broker (ingest: locust) need the cluster's broker node.
BROKER_STUDIES = $(shell grep -lE '^ *ingest:.*locust' $(STUDIES:%=bench/studies/%.yaml) 2>/dev/null)

bench: setup  ## the study files $(STUDIES) on a local Spark cluster into $(OUT) (QUICK=1: a smoke run; FULL=1: the full sweep; RESUME=1 OUT=DIR: finish DIR; INGEST=locust: every stream through the broker)
	$(MAKE) cluster-up WORKERS=$(BENCH_WORKERS) CORES=$(BENCH_CORES) MEMORY=$(BENCH_MEMORY) \
	    EXECUTOR_MEMORY=$(BENCH_EXECUTOR_MEMORY) $(if $(filter locust,$(INGEST))$(BROKER_STUDIES),BROKER=1)
	SPARK_CONF_DIR=$(CLUSTER_DIR)/loadgen/conf $(VENV)/bin/skewbench bench $(STUDIES:%=bench/studies/%.yaml) \
	    --out $(OUT) $(if $(QUICK),--quick) $(if $(FULL),--full) $(if $(RESUME),--resume) $(if $(INGEST),--ingest $(INGEST))

api-bench: setup  ## skewbench.spark in a Structured Streaming job, plain Spark vs balanced (bench/studies/api.yaml), into $(OUT)
	$(MAKE) cluster-up WORKERS=$(BENCH_WORKERS) CORES=$(BENCH_CORES) MEMORY=$(BENCH_MEMORY) \
	    EXECUTOR_MEMORY=$(BENCH_EXECUTOR_MEMORY)
	SPARK_CONF_DIR=$(CLUSTER_DIR)/loadgen/conf $(VENV)/bin/skewbench api-bench bench/studies/api.yaml --out $(OUT)

report: setup  ## rewrite OUT/index.html, report.md and fidelity.csv from the result files in OUT
	$(VENV)/bin/skewbench report $(OUT)

clean:
	rm -rf $(VENV) .pytest_cache

include infra/cluster.mk
