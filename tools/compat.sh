#!/usr/bin/env bash
# Run every lesson at SMOKE size on one Python + torch combination, in a throwaway virtual environment.
#
#   tools/compat.sh PYTHON TORCH          e.g.  tools/compat.sh 3.10 2.4     tools/compat.sh 3.13 latest
#
# PYTHON  a version (3.10, 3.12, ...: looked up under `pyenv root`/versions, then as pythonX.Y on PATH)
#         or the path of an interpreter.
# TORCH   a release (2.4 -> torch==2.4.*), "latest" (the newest pip offers here), or a wheel file.
# The venv gets that torch, then the course (`pip install REPO`, lower bounds only, so torch stays),
# papermill and ipykernel; each lesson runs with papermill (-p SMOKE True) in its own kernel from that
# venv. One line per lesson, then a summary; the exit status is non-zero when a lesson fails or prints a
# DeprecationWarning/FutureWarning. The venv is deleted at the end (COMPAT_KEEP=1 keeps it).
# Other settings: COMPAT_DIR (where the venv and outputs go, default /tmp), NOTEBOOKS (a subset, e.g.
# "04 06"), COMPAT_LOG (a file the summary line is appended to), COMPAT_CELL_TIMEOUT (seconds a cell may
# take, default 600) and COMPAT_LESSON_TIMEOUT (seconds a lesson may take, default 1800).
# PyPI's Linux torch wheels are CUDA builds (several GB with their nvidia-* packages); they run on a CPU.
set -euo pipefail

usage() { echo "usage: tools/compat.sh PYTHON TORCH   (e.g. tools/compat.sh 3.10 2.4)" >&2; exit 2; }
[ $# -eq 2 ] || usage
PY_REQ=$1 TORCH_REQ=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)

find_python() {
  local v=$1 root
  if [ -x "$v" ]; then echo "$v"; return; fi
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for cand in "$root"/versions/"$v".*/bin/python "$root"/versions/"$v"/bin/python; do
    [ -x "$cand" ] && { echo "$cand"; return; }
  done
  command -v "python$v" 2>/dev/null && return
  echo "no Python $v: not under $root/versions and no python$v on PATH" >&2; exit 2
}
PY=$(find_python "$PY_REQ")

case $TORCH_REQ in
  latest) TORCH_SPEC=torch ;;
  *.whl) TORCH_SPEC=$TORCH_REQ ;;
  [0-9]*.[0-9]*.[0-9]*) TORCH_SPEC="torch==$TORCH_REQ" ;;
  [0-9]*.[0-9]*) TORCH_SPEC="torch==$TORCH_REQ.*" ;;
  *) usage ;;
esac

BASE=${COMPAT_DIR:-/tmp}
PY_LABEL=$("$PY" -c 'import platform; print(platform.python_version())')
WORK=$(mktemp -d "$BASE/compat-py$PY_LABEL-torch$(basename "$TORCH_REQ").XXXX")
VENV=$WORK/venv
cleanup() { [ "${COMPAT_KEEP:-0}" = 1 ] || rm -rf "$VENV" "$WORK/scratch" "$WORK/src"; }
trap cleanup EXIT
echo "compat: $("$PY" -V 2>&1) ($PY), $TORCH_SPEC; work dir $WORK; free disk: $(df -h --output=avail "$BASE" | tail -n 1 | tr -d ' ')"

start=$(date +%s)
# A snapshot of the checkout: edits made while the (long) run goes on do not leak into it.
mkdir -p "$WORK/src"
tar -C "$REPO" --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./node_modules --exclude='*.egg-info' -cf - . \
  | tar -C "$WORK/src" -xf -
COMMIT=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT+uncommitted changes"
REPO=$WORK/src
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" --upgrade pip >/dev/null
"${PIP[@]}" "$TORCH_SPEC"
# The course after torch: its requirement is torch>=2.4, so pip keeps the torch just installed.
"${PIP[@]}" "$REPO" papermill ipykernel
TORCH_VERSION=$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')
installed=$(( $(date +%s) - start ))
echo "compat: installed torch $TORCH_VERSION and the course in ${installed}s"

# A package built before the packaging fix of issue 16 lacks course_utils.exercises: then the
# checkout's copy goes first on the path, and the summary says so.
NOTE=""
if ! (cd "$WORK" && "$VENV/bin/python" -c 'import course_utils.exercises' 2>/dev/null); then
  export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
  NOTE=" (installed package lacks course_utils.exercises: ran with the checkout on PYTHONPATH)"
  echo "compat: note$NOTE"
fi

# A kernel spec of this venv only, found first: a user-wide "python3" kernel would run another Python.
"$VENV/bin/python" -m ipykernel install --prefix "$VENV" --name course-compat >/dev/null
export JUPYTER_PATH=$VENV/share/jupyter COURSE_PROGRESS=0 COURSE_SCRATCH=$WORK/scratch

lessons=()
for nb in "$REPO"/notebooks/[0-9][0-9]_*.ipynb "$REPO"/notebooks/deeper/[0-9][0-9]_*.ipynb; do
  [ -e "$nb" ] || continue
  stem=$(basename "$nb" .ipynb)
  if [ -n "${NOTEBOOKS:-}" ] && ! [[ " $NOTEBOOKS " == *" ${stem:0:2} "* ]]; then continue; fi
  lessons+=("$nb")
done

failed=() warned=() below=()
for nb in "${lessons[@]}"; do
  stem=$(basename "$nb" .ipynb)
  [ "$(basename "$(dirname "$nb")")" = deeper ] && stem="deeper-$stem"  # a deeper part shares its core's file name
  out=$WORK/$stem.ipynb log=$WORK/$stem.log
  t0=$(date +%s)
  # A cell that never returns (seen once: nbclient waiting for a reply the idle kernel never sent) fails
  # after COMPAT_CELL_TIMEOUT seconds instead of stopping the whole run.
  if timeout "${COMPAT_LESSON_TIMEOUT:-1800}" "$VENV/bin/papermill" -k course-compat --execution-timeout "${COMPAT_CELL_TIMEOUT:-600}" \
      "$nb" "$out" -p SMOKE True --cwd "$(dirname "$nb")" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED; failed+=("$stem")
  fi
  # Warnings that a lesson printed (stderr streams of the executed notebook).
  warns=$("$VENV/bin/python" - "$out" <<'EOF' || true
import json, re, sys
try:
    nb = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit()
seen = []
for cell in nb["cells"]:
    for o in cell.get("outputs", []):
        text = "".join(o.get("text", "")) if o.get("name") == "stderr" else ""
        for m in re.finditer(r"(\w*(DeprecationWarning|FutureWarning)): ?([^\n]{0,100})", text):
            line = f"{cell.get('id')}: {m.group(1)}: {m.group(3)}"
            if line not in seen:
                seen.append(line)
print("; ".join(seen))
EOF
)
  dt=$(( $(date +%s) - t0 ))
  if [ -n "$warns" ]; then warned+=("$stem"); status="$status, warnings: $warns"; fi
  # A lesson that states its own floor and stops below it with one line (course_utils.sharding.TorchTooOld)
  # did what it promises: reported as such, not as a failure.
  if [ "${status%%,*}" = FAILED ] && floor=$(grep -ao "Lesson [0-9][0-9] needs torch >= [0-9.]*" "$out" 2>/dev/null | head -n 1); then
    failed=("${failed[@]:0:${#failed[@]}-1}"); below+=("$stem"); status="stopped below its floor (${floor})"
  fi
  if [ "${status%%,*}" = FAILED ]; then
    reason=$(grep -E "^[A-Za-z_.]*(Error|Exception)\b" "$log" | tail -n 1 | cut -c1-200 || true)
    status="$status${reason:+ ($reason)}; log $log"
  fi
  printf '%-36s %4ds  %s\n' "$stem" "$dt" "$status"
done

total=$(( $(date +%s) - start ))
py_version=$("$VENV/bin/python" -c 'import platform; print(platform.python_version())')
summary="$(date -u +%F) Python $py_version + torch $TORCH_VERSION: $(( ${#lessons[@]} - ${#failed[@]} - ${#below[@]} ))/${#lessons[@]} notebooks passed"
[ ${#failed[@]} -eq 0 ] || summary="$summary; failed: ${failed[*]}"
[ ${#below[@]} -eq 0 ] || summary="$summary; stopped below their stated floor: ${below[*]}"
[ ${#warned[@]} -eq 0 ] || summary="$summary; deprecation warnings: ${warned[*]}"
summary="$summary; wall ${total}s (install ${installed}s); course at $COMMIT$NOTE"
echo "compat: $summary"
[ -z "${COMPAT_LOG:-}" ] || echo "$summary" >>"$COMPAT_LOG"
[ ${#failed[@]} -eq 0 ] && [ ${#warned[@]} -eq 0 ]
