# llmops.sglang developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
# pytest workers (pytest-xdist); a plain `pytest FILE` runs in one process.
PYTEST_WORKERS ?= 4
export PATH := $(BIN):$(PATH)
export ANSIBLE_HOST_KEY_CHECKING := false

# Debian packages the tests need: nspawn + debootstrap for the systemd test hosts, the ssh
# client Ansible uses, venv for the toolchain, git for ansible-test's file listing, shellcheck for
# ansible-test sanity's shellcheck test (skipped, with a warning only, where it is missing).
APT_PACKAGES := systemd-container debootstrap openssh-client python3-venv git make shellcheck

.PHONY: help deps venv install lint sanity pytest molecule test demo testhosts-down clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

deps:  ## Install the Debian packages the tests need (root)
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

venv: $(VENV)/.installed  ## Create the pinned toolchain venv (.venv)

$(VENV)/.installed: requirements-dev.txt $(wildcard simulator/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements-dev.txt
	if [ -f simulator/pyproject.toml ]; then $(BIN)/pip install -q -e simulator; fi
	touch $@

install: venv  ## Install this checkout as llmops.sglang into .ansible/collections
	ansible-galaxy collection install --force -p .ansible/collections . >/dev/null

# The shell tools (ansible-test's shellcheck test reads only *.sh files).
SHELL_SCRIPTS := .ci/run tools/demo.sh tools/run-molecule tools/run-sanity tools/run-tests \
	tools/sglang-reference-venv.sh tools/lib/idle-cgroup.bash tools/lib/test-slots.bash

lint: venv install  ## ansible-lint (production profile) and shellcheck of the shell tools
	ansible-lint --profile production
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: make deps installs it"; exit 1; }
	shellcheck -x $(SHELL_SCRIPTS)

sanity: venv  ## ansible-test sanity on a copy under ansible_collections/llmops/sglang
	tools/run-sanity

pytest: venv  ## Unit, contract and integration tests (pytest, on $(PYTEST_WORKERS) workers)
	pytest -n $(PYTEST_WORKERS) --dist loadfile

molecule: venv deps  ## Every molecule scenario on real systemd test hosts
	tools/run-molecule

test: deps venv  ## Everything CI runs: lint, sanity, pytest, molecule
	tools/run-tests

demo: deps venv install  ## A full speculative sweep against the simulator on a local test host
	tools/demo.sh

testhosts-down:  ## Stop every test host tools/testhost started, of any run (make test stops only its own)
	tools/testhost destroy --all

clean: testhosts-down  ## Remove the venv and build outputs (keeps the rootfs cache)
	rm -rf $(VENV) .ansible build tests/output results
