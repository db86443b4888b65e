# fwdoctor: the two commands a newcomer needs are `make doctor` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CUDA 13.0 build of torch: imports without a GPU and still reports cuDNN, NCCL and
# its arch list, which the live tests judge. Override for another machine.
TEST_TORCH ?= torch==2.14.1
PYTEST_ARGS ?=
# Parallel pytest workers (pytest-xdist) for `make test` and `make test-fast`: each test file,
# and each group of files that share one Docker engine, Slurm node, browser or venv, runs
# whole in one worker (tests/conftest.py SERIAL_GROUPS); the real extension build and the
# Docker group wait on the disk and on nvcc, so a 2-core machine runs 3 (issue 30).
# TEST_WORKERS=0 runs in this process (for --pdb).
TEST_WORKERS ?= 3
PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
# Many tests start `python -m fwdoctor` (or the wheel's venv) as a child process; where
# PYTHONDONTWRITEBYTECODE is set, as on CI's machines, each child from the editable venv
# compiled every module it imports (~0.15 s of CPU, as much as the rest of a static check).
# The tests keep bytecode (an empty value is unset to Python) under the venv rather than
# beside the sources; users' installs have bytecode already (pip compiles a wheel's modules
# when it installs them).
test test-fast: export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
test test-fast: export PYTHONDONTWRITEBYTECODE :=
# Where the CPU torch wheel lies on this kind of machine (a copy of download.pytorch.org's).
CPU_TORCH_WHEELS ?= /opt/wheels
STACKS := $(wildcard stacks/*.yaml)

.PHONY: doctor test test-fast venv test-venv bench mutants gpu-check dockerfiles lockfiles docs kb-refresh clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.base: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

$(VENV)/.torch: $(VENV)/.base
	$(BIN)/pip install -q '$(TEST_TORCH)'
	touch $@

venv: $(VENV)/.base

test-venv: $(VENV)/.torch

## doctor: set up a venv and inspect this machine (exit 1 means error findings were found)
doctor: venv
	$(BIN)/fwdoctor check; rc=$$?; [ $$rc -le 1 ] || exit $$rc

## test: set up the test venv (with torch) and run the whole suite; prints the 15 slowest tests
test: test-venv
	$(BIN)/python -m pytest $(PARALLEL) --durations=15 $(PYTEST_ARGS)

## test-fast: the suite without Docker, downloads or the torch download (minutes, not tens of
## minutes): the tests that need a torch venv or an engine are skipped and say so; slow ones
## (gpuhost, conda end to end, Slurm, fuzzing) and network ones (PyPI) are left out
test-fast: venv
	$(BIN)/python -m pytest $(PARALLEL) -m "not docker and not slow and not network" $(PYTEST_ARGS)

## bench: speed figures (printed, not asserted)
bench: test-venv
	$(BIN)/python benchmarks/check_speed.py
	$(BIN)/python benchmarks/allreduce_overhead.py

## mutants: mutation score of the rules, selection and triage readers (mutmut on the fast
## tests, in a staged copy under build/mutants; hours on 2 cores, not in CI). One module:
## make mutants MUTANTS_ONLY='fwdoctor.triage.nvcc.*'
mutants: venv
	$(BIN)/python benchmarks/mutation_score.py --run $(if $(MUTANTS_ONLY),--only '$(MUTANTS_ONLY)')

## gpu-check: every GPU-only path (check --deep, smoke kernel on each GPU and on the CPU,
## compile-only + run, NCCL all-reduce with its transports, image validation when Docker is
## here) in under 10 minutes -> gpu-check-report/gpu-check.{json,md}; no GPU: a clear skip report.
## GPU_PYTHON=python3: use that interpreter (its torch; fwdoctor installed in it or on its
## PYTHONPATH) and build no venv, for a GPU machine that reaches no package index
ifdef GPU_PYTHON
gpu-check:
	$(GPU_PYTHON) tools/gpu_check.py --python $(GPU_PYTHON) --out gpu-check-report
else
gpu-check: test-venv
	$(BIN)/python tools/gpu_check.py --python $(BIN)/python --out gpu-check-report
endif

## lockfiles: re-lock the committed stacks (needs PyPI; see lockfiles/README.md)
lockfiles: venv
	$(BIN)/fwdoctor lock stacks/cu130-py312.yaml
	$(BIN)/fwdoctor lock stacks/cu128-py310.yaml
	$(BIN)/fwdoctor lock stacks/cu126-pascal.yaml
	$(BIN)/fwdoctor lock stacks/cpu-py311.yaml $(if $(wildcard $(CPU_TORCH_WHEELS)/torch-2.13.0+cpu-*.whl),--index-url https://pypi.org/simple --find-links $(CPU_TORCH_WHEELS) --record-stack-indexes)
	# The conda stack is locked against its committed local channel, served where the stack says.
	$(BIN)/python -m tests.condachannel serve lockfiles/conda-cu126-local/channel --port 38417 -- $(BIN)/fwdoctor lock stacks/conda-cu126-local.yaml

## dockerfiles: regenerate dockerfiles/<stack>/Dockerfile from the stacks and their locks
dockerfiles: venv
	for stack in $(STACKS); do $(BIN)/fwdoctor docker generate $$stack || exit 1; done

## kb-refresh: ask PyPI which releases are newer than the KB and which cited wheels moved;
## writes a proposed change to kb-refresh.yaml (tools/kb_refresh.py; review before editing doctor/kb)
kb-refresh: venv
	$(BIN)/python tools/kb_refresh.py --out kb-refresh.yaml

## docs: regenerate docs/findings.md from the finding catalog and rule docstrings
docs: venv
	$(BIN)/python -m fwdoctor.render.explain > docs/findings.md

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
