# make demo: the full site run against the local lab.  make test: everything CI checks.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
export CONTAINERS_CONF := $(CURDIR)/ds41f/lab/containers.conf
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: demo test venv lint unit molecule host-before host-after clean-lab engine

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt setup.py
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q -e .
	touch $@

# The lab's inputs (minbase + the lab image lock, vLLM CPU + a tiny model), the 4-node ring, every stage.
demo: venv
	ds41f lab image-inputs
	python -m ds41f.lab.engine build --only site,model
	ds41f lab up inventories/lab
	ds41f run site

lint: venv
	ruff check .
	ansible-lint

# The lab engine (real vLLM CPU, a tiny model, the lab engine image) under .lab/shared/engine; a no-op once built.
engine: venv
	python -m ds41f.lab.engine build

unit: venv
	pytest -q tests/unit

# Each scenario has 20 minutes: a hung one fails CI with its name instead of using up its deadline.
molecule: venv
	@set -e; for s in $(SCENARIOS); do echo "== molecule test -s $$s"; timeout --kill-after=60 1200 molecule test -s $$s; done

host-before:
	@mkdir -p .ansible && tests/host_state.sh > .ansible/host-before.txt

host-after:
	@tests/host_state.sh > .ansible/host-after.txt
	@diff -u .ansible/host-before.txt .ansible/host-after.txt && echo "host state unchanged"

test: venv host-before lint engine unit molecule host-after

clean-lab:
	-for lab in $$(ds41f lab status | awk '/^lab /{print $$2}' | tr -d :); do ds41f lab down $$lab; done
