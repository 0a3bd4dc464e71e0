"""Results cards: one machine's figures, ``results/<machine>.json``, and the checks every card passes.

A card is what ``make run RESULTS=<machine>`` writes, or :func:`save_card` at the end of a lesson
opened alone (Colab, Kaggle, a lab server). Every card the course ships becomes a reference that
the lessons put beside this machine's figures (``course_utils.ledger.compare``), so a card must say
what it was measured on, not only the numbers. The schema (version :data:`SCHEMA`)::

    {
      "schema": 1,
      "name": "my-colab-t4",                 # = the file name without .json: [a-z0-9][a-z0-9._-]*
      "created": "2026-12-01T10:28:54+00:00",  # ISO 8601 date and time of the run
      "command": "python -m course_utils.run --results my-colab-t4",   # how it was made
      "device": "NVIDIA T4",                 # what the lessons ran on (a GPU's name, or "CPU: <model>")
      "environment": {                       # course_utils.device.environment_report(), at least:
        "python": "3.12.3", "torch": "2.11.0+cu126", "cuda_build": "12.6" | null,
        "nvidia_driver": "550.54.15" | null, "cpu_model": "...", "cpu_count": 2,
        "gpus": [{"name": "Tesla T4", "compute_capability": "7.5", "memory_gib": 14.7, ...}], ...
      },
      "notebooks": {                         # one entry per lesson run
        "02_iris_cpu_vs_gpu": {
          "status": "ok" | "failed", "seconds": 41.2, "parameters": {...}, "error": null | "...",
          "results": {"iris.cpu_seconds": {"value": 4.6, "unit": "s", "note": "..."}, ...}
        }
      }
    }

:func:`problems` lists what is wrong with a card (empty: valid); a lesson skips an invalid card
with one line naming the file (:func:`load_cards`), and ``make test`` fails on it
(``tests/test_cards.py``). No JSON Schema library: the checks below are the schema, in plain Python.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

SCHEMA = 1
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
ENV_REQUIRED: dict[str, tuple[type, ...]] = {
    "python": (str,), "torch": (str,), "cuda_build": (str, type(None)), "nvidia_driver": (str, type(None)),
    "cpu_model": (str,), "cpu_count": (int, type(None)), "gpus": (list,),
}
GPU_REQUIRED: dict[str, tuple[type, ...]] = {"name": (str,), "compute_capability": (str,), "memory_gib": (int, float)}


def _type_error(where: str, value: Any, types: tuple[type, ...]) -> str | None:
    if isinstance(value, bool) and bool not in types:
        return f"{where} must be {' or '.join(t.__name__ for t in types)}, got a boolean"
    return None if isinstance(value, types) else \
        f"{where} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}, got {type(value).__name__}"


def problems(card: Any, name: str | None = None) -> list[str]:
    """What is wrong with ``card`` (a parsed JSON document); ``[]`` when it matches the schema.

    ``name``: the file's stem, which the card's ``name`` must equal.
    """
    if not isinstance(card, dict):
        return [f"a card is a JSON object, got {type(card).__name__}"]
    out: list[str] = []
    if card.get("schema") != SCHEMA:
        out.append(f"'schema' must be {SCHEMA}, got {card.get('schema')!r}")
    for field in ("name", "created", "command", "device"):
        if not isinstance(card.get(field), str) or not card.get(field):
            out.append(f"'{field}' must be a non-empty string")
    if isinstance(card.get("name"), str):
        if not NAME.match(card["name"]):
            out.append(f"'name' {card['name']!r} must be lower case letters, digits, '.', '_' or '-'")
        elif name is not None and card["name"] != name:
            out.append(f"'name' is {card['name']!r} but the file is {name}.json")
    if isinstance(card.get("created"), str):
        try:
            dt.datetime.fromisoformat(card["created"])
        except ValueError:
            out.append(f"'created' {card['created']!r} is not an ISO 8601 date")
    env = card.get("environment")
    if not isinstance(env, dict):
        out.append("'environment' must be an object (course_utils.device.environment_report())")
    else:
        for field, types in ENV_REQUIRED.items():
            if field not in env:
                out.append(f"'environment.{field}' is missing")
            elif (err := _type_error(f"'environment.{field}'", env[field], types)):
                out.append(err)
        for i, gpu in enumerate(env.get("gpus") or []):
            if not isinstance(gpu, dict):
                out.append(f"'environment.gpus[{i}]' must be an object")
                continue
            for field, types in GPU_REQUIRED.items():
                if field not in gpu:
                    out.append(f"'environment.gpus[{i}].{field}' is missing")
                elif (err := _type_error(f"'environment.gpus[{i}].{field}'", gpu[field], types)):
                    out.append(err)
    notebooks = card.get("notebooks")
    if not isinstance(notebooks, dict) or not notebooks:
        out.append("'notebooks' must be an object with at least one lesson")
        return out
    for nb, entry in notebooks.items():
        where = f"'notebooks.{nb}'"
        if not isinstance(entry, dict):
            out.append(f"{where} must be an object")
            continue
        if entry.get("status") not in ("ok", "failed"):
            out.append(f"{where}.status must be 'ok' or 'failed', got {entry.get('status')!r}")
        seconds = entry.get("seconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
            out.append(f"{where}.seconds must be a number >= 0 or null")
        results = entry.get("results")
        if not isinstance(results, dict):
            out.append(f"{where}.results must be an object")
            continue
        for key, r in results.items():
            if not KEY.match(key):
                out.append(f"{where}: result key {key!r} is not 'lesson.what' (lower case, digits, '_')")
            if not isinstance(r, dict) or set(r) - {"value", "unit", "note"} or "value" not in r:
                out.append(f"{where}.results.{key} must be {{'value': number, 'unit': str, 'note': str}}")
                continue
            v = r["value"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                out.append(f"{where}.results.{key}.value must be a finite number, got {v!r}")
            if not isinstance(r.get("unit", ""), str) or not isinstance(r.get("note", ""), str):
                out.append(f"{where}.results.{key}: unit and note must be strings")
    return out


def read_card(path: Path) -> tuple[dict | None, list[str]]:
    """``(card, [])`` for a valid file, ``(None, problems)`` otherwise (unreadable JSON included)."""
    try:
        card = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, [f"not readable as JSON ({type(exc).__name__}: {exc})"]
    found = problems(card, Path(path).stem)
    return (None, found) if found else (card, [])


_warned: set[tuple[str, float]] = set()


def load_cards(folder: Path) -> dict[str, dict]:
    """Every valid card in ``folder`` by name. An invalid one is skipped with one line on stderr
    naming the file and its first problem (once per file and version per process): a card someone
    broke must not stop a lesson, and must not silently vanish either."""
    cards = {}
    for path in sorted(Path(folder).glob("*.json")):
        card, found = read_card(path)
        if card is not None:
            cards[path.stem] = card
            continue
        stamp = (str(path), path.stat().st_mtime)
        if stamp not in _warned:
            _warned.add(stamp)
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            print(f"warning: skipped results card {path}: {found[0]}{more}; check it with "
                  f"`python -m course_utils.cards {path}`", file=sys.stderr)
    return cards


def device_label(environment: dict, device: str = "auto") -> str:
    """What the lessons ran on, for a card's ``device``: the first GPU's name when they used CUDA,
    "Apple MPS" for MPS, else "CPU: <model>"."""
    kind = device.split(":")[0]
    gpus = environment.get("gpus") or []
    if gpus and kind in ("auto", "cuda"):
        return gpus[0]["name"] + (f" (x{len(gpus)})" if len(gpus) > 1 else "")
    if kind == "mps" or (kind == "auto" and environment.get("mps_available")):
        return "Apple MPS"
    return f"CPU: {environment.get('cpu_model') or 'unknown'}"


def new_card(name: str, environment: dict, device: str, command: str) -> dict:
    """An empty card (no lessons yet) for this machine."""
    if not NAME.match(name):
        raise ValueError(f"a card's name is lower case letters, digits, '.', '_' or '-' (e.g. 'my-colab-t4'), got {name!r}")
    return {"schema": SCHEMA, "name": name, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "device": device_label(environment, device), "environment": environment, "notebooks": {}}


def main(argv: list[str] | None = None) -> int:
    """``python -m course_utils.cards FILE...``: check cards, print each problem; exit 1 if any."""
    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    bad = 0
    for path in paths:
        _, found = read_card(path)
        print(f"{path}: " + ("ok" if not found else "INVALID\n  " + "\n  ".join(found)))
        bad += bool(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
