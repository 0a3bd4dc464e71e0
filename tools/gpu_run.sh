#!/usr/bin/env bash
# One command for a whole-course run on a CUDA machine (written for the course's lent H200, whose
# image has torch + numpy + matplotlib + scikit-learn + pytest; the Jupyter stack travels as wheels
# made by tools/gpu_wheels.sh). It
#   1. runs the unit tests on CUDA (CUDA-only tests included),
#   2. runs every lesson at full size on CUDA with papermill and stores the figures as results/h200.json,
#   3. runs strict nbval on CUDA against the stored CPU outputs,
# and copies results, logs and executed notebooks to $OUT (or build/gpu-run).
#   tools/gpu_run.sh [reference-name]     default h200
set -uo pipefail
cd "$(dirname "$0")/.."
NAME="${1:-h200}"
OUT="${OUT:-build/gpu-run}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# Kernels must use ipykernel's inline backend (MPLBACKEND=Agg would drop every figure, and nbval
# would then miss outputs), and float32 must stay float32: NGC images turn on TF32 for all matmuls.
unset MPLBACKEND TORCH_ALLOW_TF32_CUBLAS_OVERRIDE
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="/tmp/site/bin:$PATH"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"

echo "== 1. unit tests on CUDA"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests --ignore=tests/test_notebooks.py \
    --ignore=tests/test_packaging.py -x 2>&1 | tee "$OUT/unit.log" | tail -15

echo "== 2. every lesson at full size on CUDA -> results/$NAME.json"
timeout 420 python3 -m course_utils.run --device cuda --results "$NAME" --out build/run 2>&1 | tee "$OUT/run.log"
cp "results/$NAME.json" "$OUT/" 2>/dev/null
tar czf "$OUT/executed-notebooks.tar.gz" -C build/run . 2>/dev/null

echo "== 3. strict nbval on CUDA"
timeout 420 python3 -m pytest -q -p no:cacheprovider -n 4 --dist loadfile --nbval --nbval-current-env \
    --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks 2>&1 | tee "$OUT/nbval.log" | tail -25
echo "done; files in $OUT"
