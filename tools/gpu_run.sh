#!/usr/bin/env bash
# One command for a whole-course run on a CUDA machine, sized to fit one 9-minute call of a lent
# GPU (written for the course's lent H200, whose image has torch + numpy + matplotlib + scikit-learn
# + pytest; the Jupyter stack travels as wheels made by tools/gpu_wheels.sh). It
#   1. runs the unit tests on CUDA (CUDA-only tests included),
#   2. runs every lesson at full size on CUDA with papermill and stores the figures as results/NAME.json
#      (course_utils.run rewrites that file after every lesson, so a timeout keeps what finished),
#   3. runs strict nbval on CUDA against the stored CPU outputs,
# writing each step's log and results to $OUT (default build/gpu-run) as soon as the step ends,
# then one summary line. The exit code is 0 only if every step passed.
#   tools/gpu_run.sh [reference-name]     default h200
# Time budget (seconds, override by environment): the whole script stops starting work after
# TOTAL_S = 520; the steps get at most UNIT_S = 100, LESSONS_S = 270 and NBVAL_S = 130, each cut to
# what is left of TOTAL_S. Setup (wheels, nvidia-smi) takes about 20 s of it.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME="${1:-h200}"
OUT="${OUT:-build/gpu-run}"; mkdir -p "$OUT"
TOTAL_S="${TOTAL_S:-520}"; UNIT_S="${UNIT_S:-100}"; LESSONS_S="${LESSONS_S:-270}"; NBVAL_S="${NBVAL_S:-130}"
START=$SECONDS
export PYTHONUNBUFFERED=1
# Kernels must use ipykernel's inline backend (MPLBACKEND=Agg would drop every figure, and nbval
# would then miss outputs), and float32 must stay float32: NGC images turn on TF32 for all matmuls.
unset MPLBACKEND TORCH_ALLOW_TF32_CUBLAS_OVERRIDE
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="/tmp/site/bin:$PATH"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
    | tee -a "$OUT/nvidia-smi.txt"

SUMMARY=()
FAILED=0
# step NAME BUDGET_S COMMAND...: run with a timeout, log to $OUT/NAME.log, record the outcome.
step() {
    local name=$1 budget=$2 left rc=0 t0=$SECONDS
    shift 2
    left=$(( TOTAL_S - (SECONDS - START) ))
    (( budget > left )) && budget=$left
    if (( budget < 10 )); then
        SUMMARY+=("$name=skipped(no-time)"); FAILED=1
        echo "== $name: skipped, ${left}s left of TOTAL_S=$TOTAL_S" | tee "$OUT/$name.log"
        return 0
    fi
    echo "== $name (at most ${budget}s)"
    timeout --kill-after=10 "$budget" "$@" 2>&1 | tee "$OUT/$name.log" || rc=$?  # pipefail: the command's status
    local took=$(( SECONDS - t0 )) status=ok
    if (( rc == 124 || rc == 137 )); then status="TIMEOUT(${budget}s)"; elif (( rc != 0 )); then status="FAILED(rc=$rc)"; fi
    (( rc == 0 )) || FAILED=1
    SUMMARY+=("$name=$status/${took}s")
    printf '%s\t%s\t%ss\n' "$name" "$status" "$took" >> "$OUT/steps.tsv"
}

step unit "$UNIT_S" python3 -m pytest -q -p no:cacheprovider tests --ignore=tests/test_notebooks.py \
    --ignore=tests/test_packaging.py
step lessons "$LESSONS_S" python3 -m course_utils.run --device cuda --results "$NAME" --out build/run
cp "results/$NAME.json" "$OUT/" 2>/dev/null || echo "no results/$NAME.json written"
cp build/run/summary.json "$OUT/lessons-summary.json" 2>/dev/null || true
tar czf "$OUT/executed-notebooks.tar.gz" -C build/run . 2>/dev/null || true
step nbval "$NBVAL_S" python3 -m pytest -q -p no:cacheprovider -n 4 --dist loadfile --nbval --nbval-current-env \
    --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

line="gpu_run: ${SUMMARY[*]} total=$(( SECONDS - START ))s -> $([ "$FAILED" = 0 ] && echo PASS || echo FAIL)"
echo "$line" | tee "$OUT/summary.txt"
exit "$FAILED"
