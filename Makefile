# gangsched developer entry points. `make demo` and `make test` work on a fresh machine:
# they create the virtualenv, build the local control plane (cached under ~/.cache/gangsched)
# and run everything on free loopback ports.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv cluster demo test lint unit e2e bench bench-planner bench-replay clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

cluster:
	tests/cluster/testbed build
	tests/cluster/testbed tool promrules >/dev/null

# the demo needs the control plane only, not the test tools
demo: venv
	tests/cluster/testbed build
	$(BIN)/python -m tests.cluster.demo

# ruff and mypy read their file lists from pyproject.toml too: the extensionless
# tests/cluster/testbed script is included in both; mypy checks services, bench, tests and it.
lint: venv
	$(BIN)/ruff check services tests bench
	$(BIN)/mypy --strict
	$(BIN)/lint-imports

test: venv cluster lint
	$(BIN)/pytest -p no:cacheprovider -ra --durations=15

unit: venv
	$(BIN)/pytest -p no:cacheprovider tests/unit

e2e: venv cluster
	$(BIN)/pytest -p no:cacheprovider -m e2e

# `make bench` is the cluster benchmark: gangsched against kube-scheduler, its native gang
# scheduling and Coscheduling on the same KWOK control plane, as ratios; about 40 minutes at
# N=1,000 with every workload (BENCH_ARGS="--workloads a" for about 10). See bench/README.md.
bench: bench-cluster

bench-planner: venv
	$(BIN)/python -m bench.planner_bench

bench-replay: venv
	$(BIN)/python -m bench.replay_bench --events 1000000

clean:
	rm -rf $(VENV) .gangsched .gangsched-demo .gangsched-demo-lock

# BENCH_ARGS, e.g. "--nodes 100" or "--workloads a --gangsched-ref HEAD"; see bench/README.md.
.PHONY: bench-cluster
bench-cluster: venv cluster
	$(BIN)/pip install --quiet -e ".[bench]"
	-$(BIN)/python -m bench.cluster.coscheduling  # optional: Coscheduling is skipped if this fails
	$(BIN)/python -m bench.cluster $(BENCH_ARGS)
