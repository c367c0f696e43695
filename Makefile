# make demo: the full site run against the local lab.  make test: everything CI checks.
SHELL := /bin/bash
comma := ,
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
# .venv's Python: the newest pair CI runs (with requirements-dev.txt's ansible-core 2.21). Pythons are found on this
# machine (PATH, then pyenv's versions) by tests/galaxy/find_python.sh.
PYTHON ?= 3.12
# The per-version checks (make matrix): PYTHON:ANSIBLE-CORE:ANSIBLE (the community package of that core, which
# brings the collections Galaxy would). The first is also the lab engine's venv (ENGINE_PAIR).
MATRIX ?= 3.11:2.19.14:12.3.0 3.12:2.20.10:13.8.0 3.13:2.21.5:14.5.0
# The lab engine keeps Python 3.11 (its torch 2.13.0+cpu wheel is cp311, and so is bookworm's python3 in the lab
# nodes): a venv of its own, with the test tooling, so the tests that import its site run there (engine_python).
ENGINE_PAIR ?= 3.11:2.19.14:12.3.0
ENGINE_VENV := $(CURDIR)/.cache/matrix/py$(word 1,$(subst :, ,$(ENGINE_PAIR)))-core$(basename $(word 2,$(subst :, ,$(ENGINE_PAIR))))
export DS41F_ENGINE_PYTHON := $(ENGINE_VENV)/bin/python
export PATH := $(BIN):$(PATH)
export CONTAINERS_CONF := $(CURDIR)/ds41f/lab/containers.conf
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))

.PHONY: mutate checks demo test prereqs venv engine-venv lint unit unit-engines unit-controller molecule sanity galaxy role-docs matrix ee core-oldest core-oldest-lab host-before host-after clean-lab engine sglang-parser proxy-nginx engine-flags

# The Debian packages the lab and .venv need: installed when missing (as root), else the one apt command to run.
prereqs:
	@python3 ds41f/lab/prereqs.py

venv: prereqs $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt setup.py | prereqs
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma) ,$(PYTHON))))' 2>/dev/null \
	  || { [ ! -d $(VENV) ] || echo "$(VENV) is not Python $(PYTHON): making it anew"; rm -rf $(VENV); }
	$$(tests/galaxy/find_python.sh $(PYTHON)) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q -e .
	touch $@

# The lab's inputs (minbase + the lab image lock, vLLM CPU + a tiny model), the 4-node ring, every stage.
demo: venv engine-venv
	ds41f lab image-inputs
	python -m ds41f.lab.engine build --only site,model
	ds41f lab up inventories/lab
	ds41f run site

lint: venv
	ruff check .
	ansible-lint

# The lab engine (real vLLM CPU, a tiny model, the lab engine image) under .lab/shared/engine; a no-op once built.
engine: venv engine-venv
	python -m ds41f.lab.engine build

# The lab engine's own Python 3.11 venv (DS41F_ENGINE_PYTHON): builds its site, runs its server and the tests that
# import its site. It is also the matrix's 3.11 pair, made once and cached under .cache/matrix/.
engine-venv:
	@tests/galaxy/matrix.sh --venv $(ENGINE_PAIR) >/dev/null

# SGLang's argument parser for tests/unit/serve/test_sglang_parser.py: sglang and what its import needs beyond
# the lab engine's site (torch CPU, numpy, msgspec, ...), without dependencies, for the engine's Python; a no-op
# once installed.
SGLANG_PARSER := .lab/shared/sglang-parser
sglang-parser: engine $(SGLANG_PARSER)/.installed
$(SGLANG_PARSER)/.installed:
	rm -rf $(SGLANG_PARSER) && $(DS41F_ENGINE_PYTHON) -m pip install -q --no-deps --target $(SGLANG_PARSER) \
	  sglang==0.5.23 triton==3.9.0 orjson==3.13.0 ipython==9.18.1 traitlets==5.16.1
	touch $@

# The distribution's nginx, unpacked (never installed: no service starts on this machine) for
# tests/unit/firewall/test_proxy_routes.py, which puts the API proxy's config in front of every route of the pinned
# engines' own tables; a no-op once unpacked. apt-get download needs the package lists (.ci/run updates them).
PROXY_NGINX := .lab/shared/nginx
proxy-nginx: $(PROXY_NGINX)/.installed
$(PROXY_NGINX)/.installed:
	rm -rf $(PROXY_NGINX) && mkdir -p $(PROXY_NGINX)/debs
	cd $(PROXY_NGINX)/debs && apt-get download -q nginx nginx-common 2>/dev/null
	for deb in $(PROXY_NGINX)/debs/*.deb; do dpkg -x $$deb $(PROXY_NGINX)/root; done
	$(PROXY_NGINX)/root/usr/sbin/nginx -v
	touch $@

# The engines' flag tables the validation checks serve_args with (plugins/module_utils/engines/*_flags.json), from
# the lab engine's vLLM and SGLang's parser; tests/unit/serve/test_engine_flag_tables.py fails when one is stale.
engine-flags: engine sglang-parser
	python -m ds41f.engine_flags

# .venv runs every test but those that import the lab engine's cp311 site (engine_python) or need torch and
# TileLang (torch, cp311 here too): the engine's venv runs those.
unit: unit-engines unit-controller

# The tests that run real engines (vLLM, SGLang's parser, torch: lab_engine, engine_python, torch) and keep time
# budgets of their own: make test runs them at the normal priority, once the engine is built (tests/checks.sh).
unit-engines: venv engine-venv
	pytest -q -m "lab_engine and not engine_python and not torch" tests/unit
	$(ENGINE_VENV)/bin/pytest -q -m "engine_python or torch" tests/unit

# Every other test: the controller's code on .venv's pair.
unit-controller: venv
	pytest -q -m "not lab_engine and not engine_python and not torch" tests/unit

# The per-version checks on every pair of MATRIX, side by side, without containers: the unit tests (lab_engine ones
# left out), sanity, the tarball in a user project (tests/galaxy/matrix.sh; logs in .cache/matrix/logs/).
matrix: venv
	tests/galaxy/matrix.sh $(MATRIX)

# Each scenario has 20 minutes: a hung one fails CI with its name instead of using up its deadline.
molecule: venv
	@set -e; for s in $(SCENARIOS); do echo "== molecule test -s $$s"; t=$$(date +%s); \
	  timeout --kill-after=60 1200 molecule test -s $$s; echo "== molecule test -s $$s: $$(( $$(date +%s) - t )) s"; done

# The doctor's mutation test (tests/mutation/doctor_mutations.py): on verify-doctor's converged 4-node ring, every
# object the stages declare they manage is changed in turn, and random sets of five at once; the doctor must name
# each in exactly one row whose fix repairs it. Too long for CI (about a minute and a half per change), which runs a
# random sample of it in verify-doctor; the latest full report is docs/mutation.md.
MUTATION_ARGS ?= --sets 3
mutate: venv engine
	molecule destroy -s verify-doctor
	molecule create -s verify-doctor && molecule prepare -s verify-doctor && molecule converge -s verify-doctor
	tests/mutation/doctor_mutations.py --lab molecule-verify-doctor --report docs/mutation $(MUTATION_ARGS); \
	  rc=$$?; molecule destroy -s verify-doctor; exit $$rc

# ansible-test sanity against the built tarball; tests/sanity/ignore-<core>.txt gives each entry's reason.
sanity: venv
	tests/galaxy/sanity.sh

# A tool venv of its own beside .venv: .cache/NAME-tools from requirements-NAME.txt (make galaxy, make ee).
$(CURDIR)/.cache/%-tools/.installed: requirements-%.txt
	rm -rf $(@D) && $$(tests/galaxy/find_python.sh $(PYTHON)) -m venv $(@D)
	$(@D)/bin/python -m pip install -q -r $<
	touch $@

# galaxy-importer and antsibull-docs (requirements-galaxy.txt), with the ansible-core and ansible-lint it runs.
GALAXY_TOOLS := $(CURDIR)/.cache/galaxy-tools
# The built tarball in an empty user project (validation, a quoted boolean refused, an unparsable site stopped), then
# through Galaxy's import checks and antsibull-docs' docs linter (tests/galaxy/importer.sh says what they cover).
galaxy: venv $(GALAXY_TOOLS)/.installed
	tests/galaxy/user_project.sh
	tests/galaxy/importer.sh $(GALAXY_TOOLS)

# Each role's README.md and meta/main.yml, from its meta/argument_specs.yml and galaxy.yml (tests/galaxy/role_docs.py);
# tests/unit/galaxy/test_role_docs.py fails while one is stale.
role-docs: venv
	python tests/galaxy/role_docs.py

# Another ansible-core beside .venv's (default: the oldest meta/runtime.yml allows), on .venv's Python: the unit
# tests and the tarball in a user project; core-oldest-lab adds the host-baseline scenario. `make core-oldest
# CORE_OLDEST=2.19.1` is how an older claim is tried (meta/runtime.yml says why 2.19.14 is the floor).
CORE_OLDEST ?= $(shell sed -n 's/^requires_ansible: ">=\([0-9.]*\).*/\1/p' meta/runtime.yml)
CORE_VENV := $(CURDIR)/.cache/core-$(CORE_OLDEST)
$(CORE_VENV)/.installed: $(VENV)/.installed meta/runtime.yml
	tests/galaxy/matrix_venv.sh $(CORE_VENV) $(PYTHON) $(CORE_OLDEST)
	touch $@
core-oldest: venv $(CORE_VENV)/.installed
	PATH=$(CORE_VENV)/bin:$$PATH pytest -q -m "not engine_python and not torch" tests/unit
	PATH=$(CORE_VENV)/bin:$$PATH tests/galaxy/user_project.sh
core-oldest-lab: venv $(CORE_VENV)/.installed
	PATH=$(CORE_VENV)/bin:$$PATH timeout --kill-after=60 1200 molecule test -s host-baseline

# The execution environment (execution-environment.yml, docs/install.md): its Debian trixie base by mmdebstrap,
# ansible-builder, then ansible-navigator runs the validation in it (ee/build.sh). Not in `make test`: most of its
# time is pip and apt inside the build (the base alone: 20-40 s here, 185 s under a loaded machine).
EE_TOOLS := $(CURDIR)/.cache/ee-tools
ee: venv $(EE_TOOLS)/.installed
	PATH=$(EE_TOOLS)/bin:$$PATH flock /tmp/ds41f-lab.lock ee/build.sh

host-before:
	@mkdir -p .ansible && tests/host_state.sh > .ansible/host-before.txt

host-after:
	@tests/host_state.sh > .ansible/host-after.txt
	@diff -u .ansible/host-before.txt .ansible/host-after.txt && echo "host state unchanged"

# make test's checks, three streams at once (tests/checks.sh): the molecule scenarios (those without the lab
# engine while it builds, then those with it), the lab engine's build and its tests (make unit-engines), and BESIDE,
# the checks that start no container, at the lowest CPU and I/O priority in a session of their own (tests/beside.sh
# says why nice alone is not enough): they take the CPU the other two leave idle, and the scenarios' time budgets
# see the machine as if alone. The two other streams' output follows molecule's.
# unit-controller and sanity are not among them: the per-version checks run both on every pair (one is .venv's
# ansible-core), so running them again on .venv's pair only cost CI their CPU time.
BESIDE := lint galaxy matrix
# The scenarios whose nodes run the lab engine (its image, its vLLM or torch): they wait for its build.
LAB_ENGINE_SCENARIOS := ring serve-lab switched verify-doctor
# The per-version checks in make test run every unit test on the newest pair and a third of them on each other
# pair (a different third each run: tests/galaxy/matrix.sh); `make matrix` alone runs all of them on every pair.
CHECKS_MATRIX_SAMPLE ?= 0.34
# The scenarios make test runs: serve-lab and verify-doctor (serving, the doctor, its mutation sample and the bad
# day) every time, and CHECKS_SCENARIO_SAMPLE of the others at random (the seed is printed; SCENARIO_SEED=N picks
# the same ones). `make molecule` runs all of them; its latest run is in docs/measured.md.
CHECKS_SCENARIOS_ALWAYS := serve-lab verify-doctor
CHECKS_SCENARIO_SAMPLE ?= 2
checks: venv
	@MATRIX_UNIT_SAMPLE="$(CHECKS_MATRIX_SAMPLE)" BESIDE="$(BESIDE)" SCENARIOS="$(SCENARIOS)" \
	  SCENARIOS_ALWAYS="$(CHECKS_SCENARIOS_ALWAYS)" SCENARIO_SAMPLE="$(CHECKS_SCENARIO_SAMPLE)" \
	  LAB_ENGINE_SCENARIOS="$(LAB_ENGINE_SCENARIOS)" tests/checks.sh

test: venv host-before checks host-after

clean-lab:
	-for lab in $$(ds41f lab status | awk '/^lab /{print $$2}' | tr -d :); do ds41f lab down $$lab; done
