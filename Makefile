# Training PyTorch models on GPUs -- the course's commands. `make help` lists them.
#
# Which PyTorch gets installed is a choice, not a hidden assumption:
#   TORCH_SPEC   the requirement, default "torch>=2.4"
#   TORCH_INDEX  where pip looks for it:
#                auto (default) = PyTorch's CPU-only wheel index on Linux without an NVIDIA GPU
#                (a ~200 MB CPU build instead of a multi-GB CUDA build); PyPI's default build on
#                macOS (includes MPS) or where nvidia-smi exists (CUDA); your own pip sources
#                when pip is configured with a mirror or wheelhouse (index-url / find-links) --
#                and then, without a GPU and with TORCH_SPEC left alone, the newest CPU build
#                (torch-*+cpu-*.whl) found in that wheelhouse for this Python.
#                Set it to a URL, or to nothing (TORCH_INDEX=) for your default pip sources.
# Examples:  make lab TORCH_INDEX=https://download.pytorch.org/whl/cu126
#            make test TORCH_SPEC=torch==2.13.0 TORCH_INDEX=
# Changing TORCH_SPEC or TORCH_INDEX reinstalls torch ($(VENV)/.torch-choice records the last choice).
#
# NVIDIA drivers: since torch 2.11 the default Linux wheel on PyPI is a CUDA 13 build (13.0 for 2.11:
# https://github.com/googlecolab/colabtools/issues/5925), and CUDA 13.x needs driver >= 580 (CUDA 12.x:
# >= 525), https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
# `make setup` warns when nvidia-smi reports an older driver and pip would install PyPI's build; the
# override is TORCH_INDEX=https://download.pytorch.org/whl/cu126 (published for 2.11 and later).
#
# The Jupyter token never goes on a command line (any user of the machine reads those with `ps`):
# `make lab` hands it to Jupyter Server in the JUPYTER_TOKEN environment variable. Choose your own with
#   JUPYTER_TOKEN=<secret> make lab          (not `make lab JUPYTER_TOKEN=...`: that is make's argv)

PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch>=2.4
TORCH_INDEX ?= auto
DEVICE      ?= auto
SMOKE       ?= 0
RESULTS     ?=
NOTEBOOKS   ?=
PARAMS      ?=
PORT        ?= 8888
FROM        ?=
LAB_ARGS    ?=
PYTEST_ARGS ?=
# What installs the packages: uv (pip puts it into the venv first: one ~20 MB wheel) fetches and unpacks
# them in parallel: from a fresh clone on CI's 2 cores the venv took 78 s with uv (no cache, bytecode compiled) against 184 s with pip
# (the same versions). INSTALLER=pip uses pip alone; so does a machine where uv cannot be installed.
INSTALLER   ?= uv

PY    := $(VENV)/bin/python
STAMP := $(VENV)/.course-installed
TORCH_CHOICE := $(VENV)/.torch-choice
WEB := build/web
WEB_STAMP := $(WEB)/node_modules/.package-lock.json
CPU_INDEX := https://download.pytorch.org/whl/cpu
CU12_INDEX := https://download.pytorch.org/whl/cu126
CUDA13_MIN_DRIVER := 580

# pip's wheelhouses (find-links): where a CPU wheel of torch may lie, and what uv is handed.
# `pip config list` starts a Python (0.4 s): asked once per make, and only when something needs it (the
# eval replaces this lazy variable by its value on first use); its lines kept joined by '|', quotes as ".
PIP_CONFIG_LINES = $(eval PIP_CONFIG_LINES := $$(shell $(PYTHON) -m pip config list 2>/dev/null | tr "\n'" '|"'))$(PIP_CONFIG_LINES)
pip_config = $(shell printf '%s' '$(PIP_CONFIG_LINES)' | tr '|' '\n' | sed -n 's/$(1)="\(.*\)"/\1/p')
PIP_LINKS    = $(PIP_FIND_LINKS) $(call pip_config,.*find-links)

TORCH_INSTALL := $(TORCH_SPEC)
ifeq ($(TORCH_INDEX),auto)
  HAS_GPU    := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
  PIP_CONFIG := $(PIP_CONFIG_LINES)
  HAS_MIRROR := $(findstring index-url,$(PIP_CONFIG))$(findstring find-links,$(PIP_CONFIG))$(PIP_INDEX_URL)$(PIP_FIND_LINKS)
  ifneq ($(or $(HAS_GPU),$(HAS_MIRROR),$(filter Darwin,$(shell uname -s))),)
    TORCH_INDEX_RESOLVED :=
  else
    TORCH_INDEX_RESOLVED := $(CPU_INDEX)
  endif
  ifeq ($(HAS_GPU)$(origin TORCH_SPEC),file)
    # No GPU and the default spec: prefer a CPU wheel from a configured wheelhouse, if there is one.
    PYTAG     := $(shell $(PYTHON) -c 'import sys; print("%d%d" % sys.version_info[:2])')
    WHEELDIRS := $(PIP_LINKS)
    CPU_WHEEL := $(if $(strip $(WHEELDIRS)),$(shell ls -d $(addsuffix /torch-*+cpu-cp$(PYTAG)-*.whl,$(WHEELDIRS)) 2>/dev/null | sort -V | tail -n 1))
    ifneq ($(CPU_WHEEL),)
      TORCH_INSTALL := $(CPU_WHEEL)
    endif
  endif
else
  TORCH_INDEX_RESOLVED := $(TORCH_INDEX)
endif
# uv reads no pip configuration: it is handed pip's configured mirror, extra indexes and wheelhouses
# (`=`, not `:=`: pip is asked only when an install runs, not on every make command).
PIP_INDEX    = $(PIP_INDEX_URL) $(call pip_config,.*[.]index-url)
PIP_EXTRA    = $(PIP_EXTRA_INDEX_URL) $(call pip_config,.*[.]extra-index-url)
UV_SOURCES   = $(if $(strip $(PIP_INDEX)),--index-url $(firstword $(PIP_INDEX))) $(addprefix --extra-index-url ,$(sort $(PIP_EXTRA))) \
               $(addprefix --find-links ,$(sort $(PIP_LINKS)))
# `$(INSTALL) ARGS`: uv when chosen and the venv has it (unsafe-best-match: pick from every index as pip does), else pip.
INSTALL = sh -c 'if [ "$(INSTALLER)" = uv ] && [ -x "$(VENV)/bin/uv" ]; then exec "$(VENV)/bin/uv" pip install --python "$(PY)" -q --compile-bytecode \
            --index-strategy unsafe-best-match $(UV_SOURCES) "$$@"; else exec "$(PY)" -m pip install --disable-pip-version-check -q "$$@"; fi' install

TORCH_CHOICE_TEXT := $(TORCH_INSTALL) from $(or $(TORCH_INDEX_RESOLVED),default pip sources)

# PyPI's build (torch >= 2.11: CUDA 13.0) on Linux with an NVIDIA driver older than CUDA 13 needs?
DRIVER_WARNING :=
ifeq ($(TORCH_INDEX_RESOLVED)$(shell uname -s),Linux)
  NV_DRIVER := $(shell nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  ifneq ($(NV_DRIVER),)
    ifeq ($(shell [ "$(firstword $(subst ., ,$(NV_DRIVER)))" -lt $(CUDA13_MIN_DRIVER) ] 2>/dev/null && echo old),old)
      DRIVER_WARNING := WARNING: NVIDIA driver $(NV_DRIVER) is older than $(CUDA13_MIN_DRIVER), which PyPI's torch >= 2.11 (a CUDA 13 build) needs: torch would not see the GPU. Use a CUDA 12.6 build instead (driver >= 525): make setup TORCH_INDEX=$(CU12_INDEX)
    endif
  endif
endif
IS_ROOT := $(filter 0,$(shell id -u))
ROOT_WARNING := WARNING: JupyterLab runs as root here: notebook code runs as root, and anyone with the token gets a root shell. Prefer an ordinary user.
ifeq ($(origin JUPYTER_TOKEN),command line)
  $(warning JUPYTER_TOKEN given as a make argument is visible to every user in `ps`; use JUPYTER_TOKEN=... make lab)
endif

.PHONY: help setup web lab test test-fast test-zh run reference nbval outputs slides site clean FORCE
FORCE:

help:
	@echo "make lab        set up .venv and open JupyterLab on notebooks/ (token-protected) [PORT=8888] [LAB_ARGS=--no-browser]"
	@echo "                your own token: JUPYTER_TOKEN=<secret> make lab (it never appears on a command line)"
	@echo "make setup      set up .venv only (warns if the NVIDIA driver is too old for the torch build)"
	@echo "make test       set up .venv and run all tests: course_utils, each lesson alone from the wheel vs its stored outputs, browser"
	@echo "make nbval      nbval itself on notebooks/ (strict: every cell's output vs the stored one) [NOTEBOOKS='02 03']"
	@echo "make test-fast  unit tests only (no lesson runs, no process launches): the inner loop, under a minute"
	@echo "make test-zh    every Chinese lesson (notebooks/zh/) alone from the wheel vs its stored outputs"
	@echo "make run        run every notebook headless into build/run/ [DEVICE=auto|cpu|cuda|mps] [SMOKE=1] [RESULTS=name]"
	@echo "                [NOTEBOOKS='02 03'] [PARAMS='EPOCHS=2000 READ_EVERY=100'] (an unknown parameter name is an error)"
	@echo "make outputs    re-execute the notebooks in place (the stored outputs nbval compares against), regenerate solutions/"
	@echo "make slides     each lesson's deck (notebooks/decks/) as offline reveal.js slides into build/slides/ (npm ci fetches the JS once)"
	@echo "                [FROM=build/run: show the outputs of that run, e.g. after make run on a GPU]"
	@echo "make site       the course as a static site, build/site/index.html: works from file:// with no network"
	@echo "make web        the pinned browser assets and JupyterHub's proxy into build/web/ (npm ci; make slides runs it)"
	@echo "torch: TORCH_SPEC='$(TORCH_SPEC)' TORCH_INDEX='$(TORCH_INDEX)' -> installs '$(TORCH_INSTALL)' from '$(or $(TORCH_INDEX_RESOLVED),default pip sources)'"
	$(if $(DRIVER_WARNING),@echo "$(DRIVER_WARNING)" >&2)

# The torch choice, as a file whose content changes only when TORCH_SPEC / TORCH_INDEX resolve
# differently: the install below depends on it, so a new choice reinstalls torch.
$(TORCH_CHOICE): FORCE
	@mkdir -p $(VENV)
	@if [ "$$(cat $@ 2>/dev/null)" != '$(TORCH_CHOICE_TEXT)' ]; then printf '%s\n' '$(TORCH_CHOICE_TEXT)' > $@; fi

# The venv is rebuilt when pyproject.toml, this Makefile or the torch choice changes.
$(STAMP): pyproject.toml Makefile $(TORCH_CHOICE)
	$(if $(DRIVER_WARNING),@echo "$(DRIVER_WARNING)" >&2)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(if $(filter uv,$(INSTALLER)),@test -x $(VENV)/bin/uv || $(PY) -m pip install --disable-pip-version-check -q uv \
		|| echo "uv could not be installed: installing with pip (slower)" >&2)
	@echo "installing $(TORCH_INSTALL) from $(or $(TORCH_INDEX_RESOLVED),your default pip sources)"
	$(if $(filter $(TORCH_CHOICE),$?),-@$(PY) -m pip uninstall --disable-pip-version-check -q -y torch 2>/dev/null)
	@$(INSTALL) "$(TORCH_INSTALL)" $(if $(TORCH_INDEX_RESOLVED),--index-url $(TORCH_INDEX_RESOLVED) --extra-index-url https://pypi.org/simple)
	@$(INSTALL) -e ".[test,lab,dev]"
	@touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	@# Always a token (an empty one would switch authentication off), passed in the environment, never
	@# in argv. JupyterLab masks a token it was given, so print the login URL here. port_retries=0:
	@# a busy port is an error, not a silent move to another port that the printed URL does not name.
	@# The repository is the root (solutions/ opens from the lab, beside notebooks/); the lab starts in notebooks/.
	$(if $(IS_ROOT),@echo "$(ROOT_WARNING)" >&2)
	@JUPYTER_TOKEN="$${JUPYTER_TOKEN:-$$($(PY) -c 'import secrets; print(secrets.token_hex(24))')}"; \
	export JUPYTER_TOKEN; \
	echo "Open JupyterLab at: http://127.0.0.1:$(PORT)/lab/tree/notebooks?token=$$JUPYTER_TOKEN"; \
	exec $(VENV)/bin/jupyter lab --notebook-dir=. --ServerApp.default_url=/lab/tree/notebooks --port=$(PORT) --ServerApp.port_retries=0 \
		$(if $(IS_ROOT),--allow-root) $(LAB_ARGS)

# The inner loop: unit tests only (no lesson runs, no real launches), under a minute.
test-fast: $(STAMP)
	env -u MPLBACKEND $(PY) -m pytest tests -m "not slow" -p no:cacheprovider -q $(PYTEST_ARGS)

# Two pytest workers, a file each at a time (tests/conftest.py starts the longest files first).
# The browser assets and JupyterHub's proxy are installed first, once, so no two workers run npm at once.
TEST_WORKERS ?= 2
# Each lesson executes once: alone in an empty folder of a fresh venv, from the wheel, at its default
# size, every cell compared with its stored outputs by nbval's comparison (tests/test_standalone.py).
test: $(STAMP) $(if $(shell command -v npm 2>/dev/null),$(WEB_STAMP))
	env -u MPLBACKEND $(PY) -m pytest tests -p no:cacheprovider --durations=12 \
		$(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(PYTEST_ARGS)

# Every Chinese lesson (notebooks/zh/) alone from the wheel, compared with its stored outputs, as `make test`
# does for the English ones (make test runs zh/00 live and checks the others' stored outputs against the English).
test-zh: $(STAMP)
	COURSE_ZH_LIVE=all env -u MPLBACKEND $(PY) -m pytest tests/test_standalone.py tests/test_zh.py -k "zh" -p no:cacheprovider \
		$(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) $(PYTEST_ARGS)

# nbval itself on notebooks/, in this venv (tools/gpu_run.sh runs the same on CUDA). [NOTEBOOKS='02 03']
nbval: $(STAMP)
	env -u MPLBACKEND COURSE_PROGRESS=0 $(PY) -m pytest -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg \
		$(if $(NOTEBOOKS),$(foreach n,$(NOTEBOOKS),$(wildcard notebooks/$(n)_*.ipynb)),notebooks) \
		$(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

run: $(STAMP)
	env -u MPLBACKEND $(PY) -m course_utils.run $(NOTEBOOKS) --device $(DEVICE) $(if $(filter 1 yes true,$(SMOKE)),--smoke) \
		$(if $(RESULTS),--results $(RESULTS)) $(foreach p,$(PARAMS),-p '$(p)')

outputs: $(STAMP)
	$(PY) tools/store_outputs.py
	$(PY) tools/make_solutions.py

# Browser assets (reveal.js, require.js, jQuery, the widgets HTML manager) and JupyterHub's proxy
# (configurable-http-proxy, for deploy/ and tests/test_jupyterhub.py) pinned by package.json +
# package-lock.json; npm ci installs them into build/web/ (never committed), again only when the
# lockfile changes. --ignore-scripts: no install script runs, nothing else is downloaded.

$(WEB_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "make slides / make site (and the JupyterHub test) need Node.js and npm (https://nodejs.org)" >&2; exit 1; }
	@mkdir -p $(WEB) && cp package.json package-lock.json $(WEB)/
	cd $(WEB) && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

web: $(WEB_STAMP)

slides: $(STAMP) $(WEB_STAMP)
	$(PY) tools/slides.py $(if $(FROM),--from $(FROM))

site: slides
	$(PY) tools/site.py

clean:
	rm -rf build .pytest_cache
