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
# Examples:  make lab TORCH_INDEX=https://download.pytorch.org/whl/cu128
#            make test TORCH_SPEC=torch==2.13.0 TORCH_INDEX=

PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch>=2.4
TORCH_INDEX ?= auto
DEVICE      ?= auto
SMOKE       ?= 0
RESULTS     ?=
PORT        ?= 8888
PYTEST_ARGS ?=

PY    := $(VENV)/bin/python
STAMP := $(VENV)/.course-installed
CPU_INDEX := https://download.pytorch.org/whl/cpu

TORCH_INSTALL := $(TORCH_SPEC)
ifeq ($(TORCH_INDEX),auto)
  HAS_GPU    := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
  PIP_CONFIG := $(shell $(PYTHON) -m pip config list 2>/dev/null)
  HAS_MIRROR := $(findstring index-url,$(PIP_CONFIG))$(findstring find-links,$(PIP_CONFIG))$(PIP_INDEX_URL)$(PIP_FIND_LINKS)
  ifneq ($(or $(HAS_GPU),$(HAS_MIRROR),$(filter Darwin,$(shell uname -s))),)
    TORCH_INDEX_RESOLVED :=
  else
    TORCH_INDEX_RESOLVED := $(CPU_INDEX)
  endif
  ifeq ($(HAS_GPU)$(origin TORCH_SPEC),file)
    # No GPU and the default spec: prefer a CPU wheel from a configured wheelhouse, if there is one.
    PYTAG     := $(shell $(PYTHON) -c 'import sys; print("%d%d" % sys.version_info[:2])')
    WHEELDIRS := $(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/.*find-links='\(.*\)'/\1/p") $(PIP_FIND_LINKS)
    CPU_WHEEL := $(if $(strip $(WHEELDIRS)),$(shell ls -d $(addsuffix /torch-*+cpu-cp$(PYTAG)-*.whl,$(WHEELDIRS)) 2>/dev/null | sort -V | tail -n 1))
    ifneq ($(CPU_WHEEL),)
      TORCH_INSTALL := $(CPU_WHEEL)
    endif
  endif
else
  TORCH_INDEX_RESOLVED := $(TORCH_INDEX)
endif

.PHONY: help setup lab test run reference nbval outputs clean

help:
	@echo "make lab        set up .venv and open JupyterLab on notebooks/ (token-protected)"
	@echo "make test       set up .venv and run all tests: course_utils, papermill runs, nbval"
	@echo "make run        run every notebook headless into build/run/ [DEVICE=auto|cpu|cuda|mps] [SMOKE=1] [RESULTS=name]"
	@echo "make outputs    re-execute the notebooks in place (the stored outputs nbval compares against)"
	@echo "torch: TORCH_SPEC='$(TORCH_SPEC)' TORCH_INDEX='$(TORCH_INDEX)' -> installs '$(TORCH_INSTALL)' from '$(or $(TORCH_INDEX_RESOLVED),default pip sources)'"

# The venv is rebuilt when pyproject.toml or this Makefile changes.
$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing $(TORCH_INSTALL) from $(or $(TORCH_INDEX_RESOLVED),your default pip sources)"
	$(PY) -m pip install --disable-pip-version-check -q "$(TORCH_INSTALL)" $(if $(TORCH_INDEX_RESOLVED),--index-url $(TORCH_INDEX_RESOLVED) --extra-index-url https://pypi.org/simple)
	$(PY) -m pip install --disable-pip-version-check -q -e ".[test,lab,dev]"
	@touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	@# Always a token (an empty one would switch authentication off). JupyterLab masks a token it was
	@# given, so print the login URL here; JUPYTER_TOKEN=... chooses your own.
	@token="$${JUPYTER_TOKEN:-$$($(PY) -c 'import secrets; print(secrets.token_hex(24))')}"; \
	echo "Open JupyterLab at: http://127.0.0.1:$(PORT)/lab?token=$$token"; \
	exec $(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(if $(filter 0,$(shell id -u)),--allow-root) \
		--IdentityProvider.token="$$token"

test: $(STAMP)
	env -u MPLBACKEND $(PY) -m pytest tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider --durations=12 $(PYTEST_ARGS)

run: $(STAMP)
	env -u MPLBACKEND $(PY) -m course_utils.run --device $(DEVICE) $(if $(filter 1 yes true,$(SMOKE)),--smoke) $(if $(RESULTS),--results $(RESULTS))

outputs: $(STAMP)
	$(PY) tools/store_outputs.py

clean:
	rm -rf build .pytest_cache
