#!/usr/bin/env bash
# Download (here, with internet/PyPI) the wheels the course needs on a GPU box whose Python image
# already has torch, numpy, matplotlib, scikit-learn and pytest but not the Jupyter stack.
# Result: .whl/ (git-ignored), to be carried to that machine and installed by tools/gpu_run.sh
# (which also needs pytest-xdist for its nbval step: the lent H200's image has it, see
# /work/.library/device/KINDS.md in this workplace). A lent machine takes at most 64 MiB of tree.
#   tools/gpu_wheels.sh [python-version]        default 3.12 (the lent H200's python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER="${1:-3.12}"
rm -rf .whl && mkdir .whl
python3 -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d .whl papermill nbval nbclient nbformat ipykernel ipywidgets 2>&1 | grep -v '^WARNING: Location' || true
# Packages the GPU image already has (a newer copy on PYTHONPATH would shadow them): drop them.
for pkg in anyio attrs certifi charset_normalizer click coverage h11 httpcore httpx idna iniconfig jinja2 \
           markupsafe MarkupSafe packaging pluggy psutil pygments pytest pytest_xdist execnet python_dateutil \
           pyyaml PyYAML requests rich six tabulate tqdm typing_extensions urllib3; do
    rm -f .whl/"$pkg"-*.whl
done
ls .whl | wc -l | xargs echo "wheels:"; du -sh .whl
# tools/gpu_run.sh installs them with: pip install --no-index --no-deps --target /tmp/site .whl/*.whl
