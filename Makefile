# skewbench — `make bench` runs the main job, `make test` runs the tests; both set themselves up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
OUT    ?= results/$(shell date -u +%Y%m%dT%H%M%SZ)
MESSAGES ?= 2000000

BENCH_WORKERS ?= 2
BENCH_CORES   ?= 50
# Memory per worker node and executor heap: heaps of 512m spent seconds per task in GC at W >= 50.
BENCH_MEMORY  ?= 5g
BENCH_EXECUTOR_MEMORY ?= 4g
ONLY          ?= storm,offered,efficiency,aggregation

.PHONY: setup test study speed bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

test: setup  ## unit + conformance + analytical tests
	$(PY) -m pytest -q

study: setup  ## the PKG paper's simulations (Table II, Fig. 2) plus every newer scheme, into $(OUT)
	$(PY) -m skewbench.bench.paper_study --out $(OUT) --messages $(MESSAGES)

speed: setup  ## routing rate of every scheme vs key grouping (10M messages, S=5, W=100)
	$(VENV)/bin/skewbench speed

bench: setup  ## the cluster experiments (PKG's Storm experiments on Spark, engine efficiency vs W) into $(OUT)
	$(MAKE) cluster-up WORKERS=$(BENCH_WORKERS) CORES=$(BENCH_CORES) MEMORY=$(BENCH_MEMORY) \
	    EXECUTOR_MEMORY=$(BENCH_EXECUTOR_MEMORY)
	SPARK_CONF_DIR=$(CLUSTER_DIR)/loadgen/conf .venv-cluster/bin/python -m skewbench.bench.cluster_bench \
	    --out $(OUT) --only $(ONLY) $(if $(QUICK),--quick)

clean:
	rm -rf $(VENV) .pytest_cache

include infra/cluster.mk
