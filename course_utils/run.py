"""Run the course's notebooks headless with papermill: ``python -m course_utils.run`` (``make run``).

Each notebook is executed into ``build/run/`` with ``DEVICE`` and ``SMOKE`` (and any ``-p NAME=VALUE``)
injected into its ``parameters`` cell; its ledger goes to ``build/run/ledger/<notebook>.json``.
A parameter name that a notebook does not have is an error before anything runs: papermill would
only warn and the lesson would silently run with its defaults. At the end a table
(notebook, status, seconds) is printed and ``build/run/summary.json`` is written; with
``--results NAME`` the same summary also becomes the results card ``results/NAME.json`` (its schema:
``course_utils.cards``), a reference every lesson then shows beside its own figures.
"""
from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

from .atomic import atomic_write
from .cards import SCHEMA, device_label
from .device import CHOICES, environment_report
from .ledger import results_dir
from .paths import all_notebooks, notebook_key, zh_notebooks

REPO = Path(__file__).resolve().parents[1]


def notebooks(folder: Path, names: list[str] | None = None) -> list[Path]:
    """The core lessons in ``folder`` (``NN_*.ipynb``), then their deeper parts (``deeper/NN_*.ipynb``),
    optionally filtered by prefix: ``02`` is lesson 02's core, ``deeper/02`` its deeper part, ``deeper``
    every deeper part. The Chinese cores run only when asked for: ``zh`` (all) or ``zh/02``."""
    found = all_notebooks(folder)
    if names and any(n.startswith("zh") for n in names):
        found += zh_notebooks(folder)
    if names:
        found = [p for p in found if any(notebook_key(p).startswith(n) or p.name == n for n in names)]
    return found


def parse_param(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` -> (NAME, VALUE); VALUE is a Python literal (``3``, ``[64, 128]``, ``True``)
    when it parses as one, else the string itself (``START_METHOD=spawn``)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return name.strip(), value.strip()


def unknown_parameters(nbs: list[Path], names: set[str]) -> list[str]:
    """One message per notebook that lacks one of ``names``, listing the parameters it does have
    (read from its ``parameters`` cell by ``papermill.inspect_notebook``)."""
    import papermill as pm

    problems = []
    for nb in nbs:
        real = list(pm.inspect_notebook(str(nb)))
        missing = sorted(names - set(real))
        if missing:
            problems.append(f"{notebook_key(nb)} has no parameter {', '.join(missing)}; its parameters are: {', '.join(real)}")
    return problems


def run_one(nb: Path, out_dir: Path, parameters: dict, timeout: int) -> dict:
    """Execute one notebook; return its summary entry (status, seconds, results, error)."""
    import papermill as pm  # imported here: only headless runs need it

    from .kernels import LocalKernelManager

    ledger = out_dir / "ledger" / f"{notebook_key(nb)}.json"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.unlink(missing_ok=True)
    os.environ["COURSE_LEDGER"] = str(ledger)  # the kernel inherits this environment
    os.environ["COURSE_PROGRESS"] = "0"  # no live status lines in stored outputs (course_utils.progress)
    t0 = time.perf_counter()
    status, error = "ok", None
    try:
        pm.execute_notebook(
            str(nb), str(out_dir / f"{notebook_key(nb)}.ipynb"), parameters=parameters, cwd=str(nb.parent),
            kernel_name="python3", progress_bar=False, execution_timeout=timeout,
            kernel_manager_class=LocalKernelManager,  # ipc, not TCP: no transport warning per lesson
        )
    except Exception as exc:  # a failing notebook is reported, the others still run
        status, error = "failed", f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    finally:
        os.environ.pop("COURSE_LEDGER", None)
    seconds = time.perf_counter() - t0
    results = json.loads(ledger.read_text()) if ledger.exists() else {}
    return {"status": status, "seconds": round(seconds, 2), "parameters": parameters, "results": results, "error": error}


def write_reference(name: str, summary: dict) -> Path:
    """Merge ``summary`` into ``results/NAME.json``: notebooks run now replace their old entries,
    notebooks not run now keep theirs (so one lesson can be re-measured alone)."""
    target = results_dir() / f"{name}.json"
    merged = json.loads(target.read_text()) if target.exists() else {"notebooks": {}}
    merged.update({k: v for k, v in summary.items() if k != "notebooks"})
    merged["name"] = name
    merged.setdefault("notebooks", {}).update(summary["notebooks"])
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(merged, indent=1, sort_keys=True).encode()
    return atomic_write(target, lambda f: f.write(text))  # a run killed mid-write keeps the old file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="notebook prefixes to run, e.g. 02 03 (default: all)")
    ap.add_argument("--device", default="auto", help=f"one of {CHOICES} (default auto)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks the notebooks run, not the figures")
    ap.add_argument("--notebooks", type=Path, default=REPO / "notebooks")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "run")
    ap.add_argument("--results", metavar="NAME", help="also write the summary to results/NAME.json")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds allowed per cell")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="set a lesson parameter, e.g. -p EPOCHS=2000 (repeatable; checked against each notebook)")
    args = ap.parse_args(argv)
    if args.results and args.smoke:
        ap.error("--results stores reference figures; smoke sizes are not reference figures")
    if args.device.split(":")[0] not in CHOICES:
        ap.error(f"--device must be one of {CHOICES}, got {args.device!r}")
    nbs = notebooks(args.notebooks, args.names)
    if not nbs:
        ap.error(f"no notebooks matching {args.names or '*'} in {args.notebooks}")
    try:
        extra = dict(parse_param(p) for p in args.param)
    except ValueError as exc:
        ap.error(f"-p: {exc}")
    if {"DEVICE", "SMOKE"} & set(extra):
        ap.error("set DEVICE and SMOKE with --device and --smoke, not -p")
    problems = unknown_parameters(nbs, set(extra) | {"DEVICE", "SMOKE"})
    if problems:
        ap.error("unknown parameter name:\n  " + "\n  ".join(problems)
                 + "\nchoose the notebooks that have it, e.g. `python -m course_utils.run 02 -p EPOCHS=2000`"
                 " or `make run NOTEBOOKS=02 PARAMS=EPOCHS=2000`")
    for sub in ("deeper", "zh"):
        (args.out / sub).mkdir(parents=True, exist_ok=True)

    environment = environment_report()
    summary = {  # the shape of a results card (course_utils.cards), so --results can store it as one
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m course_utils.run", *(argv if argv is not None else sys.argv[1:])]),
        "device": device_label(environment, args.device),
        "environment": environment,
        "notebooks": {},
    }
    print(f"{'notebook':<36} {'status':<8} {'seconds':>8}", flush=True)
    for nb in nbs:
        entry = run_one(nb, args.out, {"DEVICE": args.device, "SMOKE": args.smoke, **extra}, args.timeout)
        key = notebook_key(nb)
        summary["notebooks"][key] = entry
        print(f"{key:<36} {entry['status']:<8} {entry['seconds']:>8.1f}", flush=True)
        if entry["error"]:
            print(f"    {entry['error'][:300]}", flush=True)
        # Written after every notebook: a run stopped by a time limit keeps what finished.
        text = json.dumps(summary, indent=1, sort_keys=True).encode()
        atomic_write(args.out / "summary.json", lambda f: f.write(text))
        if args.results:
            reference = write_reference(args.results, {**summary, "notebooks": {key: entry}})
    total = sum(e["seconds"] for e in summary["notebooks"].values())
    failed = [k for k, e in summary["notebooks"].items() if e["status"] != "ok"]
    print(f"{'total':<36} {('FAILED ' + str(len(failed))) if failed else 'ok':<8} {total:>8.1f}")
    print(f"summary: {args.out / 'summary.json'}")
    if args.results:
        print(f"reference results: {reference}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
