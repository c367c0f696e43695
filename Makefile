# make demo: the full site run against the local lab.  make test: everything CI checks.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
export CONTAINERS_CONF := $(CURDIR)/ds41f/lab/containers.conf
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: demo test prereqs venv lint unit molecule sanity galaxy core-oldest core-oldest-lab host-before host-after clean-lab engine sglang-parser

# The Debian packages the lab and .venv need: installed when missing (as root), else the one apt command to run.
prereqs:
	@python3 ds41f/lab/prereqs.py

venv: prereqs $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt setup.py | prereqs
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

# SGLang's argument parser for tests/unit/serve/test_sglang_parser.py: sglang and what its import needs beyond
# the lab engine's site (torch CPU, numpy, msgspec, ...), without dependencies; a no-op once installed.
SGLANG_PARSER := .lab/shared/sglang-parser
sglang-parser: engine $(SGLANG_PARSER)/.installed
$(SGLANG_PARSER)/.installed:
	rm -rf $(SGLANG_PARSER) && $(BIN)/python -m pip install -q --no-deps --target $(SGLANG_PARSER) \
	  sglang==0.5.23 triton==3.9.0 orjson==3.13.0 ipython==9.18.1 traitlets==5.16.1
	touch $@

unit: venv
	pytest -q tests/unit

# Each scenario has 20 minutes: a hung one fails CI with its name instead of using up its deadline.
molecule: venv
	@set -e; for s in $(SCENARIOS); do echo "== molecule test -s $$s"; timeout --kill-after=60 1200 molecule test -s $$s; done

# ansible-test sanity against the built tarball; tests/sanity/ignore-2.19.txt gives each entry's reason.
sanity: venv
	tests/galaxy/sanity.sh

# The built tarball in an empty user project: validation, a quoted boolean refused, an unparsable site stopped.
galaxy: venv
	tests/galaxy/user_project.sh

# Another ansible-core beside .venv's (default: the oldest meta/runtime.yml allows): the unit tests and the tarball
# in a user project; core-oldest-lab adds the host-baseline scenario. Not in `test` while the claim is .venv's own
# 2.19.14 (meta/runtime.yml says why); `make core-oldest CORE_OLDEST=2.19.1` is how an older claim is tried.
CORE_OLDEST ?= $(shell sed -n 's/^requires_ansible: ">=\([0-9.]*\).*/\1/p' meta/runtime.yml)
CORE_VENV := $(CURDIR)/.cache/core-$(CORE_OLDEST)
$(CORE_VENV)/.installed: $(VENV)/.installed meta/runtime.yml
	tests/galaxy/core_venv.sh $(CORE_OLDEST) $(CORE_VENV)
	touch $@
core-oldest: venv $(CORE_VENV)/.installed
	PATH=$(CORE_VENV)/bin:$$PATH pytest -q tests/unit
	PATH=$(CORE_VENV)/bin:$$PATH tests/galaxy/user_project.sh
core-oldest-lab: venv $(CORE_VENV)/.installed
	PATH=$(CORE_VENV)/bin:$$PATH timeout --kill-after=60 1200 molecule test -s host-baseline

host-before:
	@mkdir -p .ansible && tests/host_state.sh > .ansible/host-before.txt

host-after:
	@tests/host_state.sh > .ansible/host-after.txt
	@diff -u .ansible/host-before.txt .ansible/host-after.txt && echo "host state unchanged"

test: venv host-before lint engine sglang-parser unit molecule sanity galaxy host-after

clean-lab:
	-for lab in $$(ds41f lab status | awk '/^lab /{print $$2}' | tr -d :); do ds41f lab down $$lab; done
