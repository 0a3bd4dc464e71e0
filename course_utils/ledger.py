"""The results ledger: what a lesson measured, beside what the course measured elsewhere.

A lesson calls ``record("iris.cpu_seconds", 4.6, unit="s")`` for each figure it measures.
Interactively the values stay in memory. In a headless run (``make run``, the tests) the runner
sets ``COURSE_LEDGER`` to a JSON path and every ``record`` rewrites that file, so what a notebook
measured survives even if a later cell fails. Each machine's figures are kept as a results card, ``results/<machine>.json`` (``cpu-ci``, ``h200``,
any card a student contributed: ``course_utils.cards``), and ``compare`` shows every card beside
this machine's figures.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from . import published
from .atomic import atomic_write_text
from .cards import load_cards
from .i18n import t
from .paths import checkout
from .tables import Table

ENV_VAR = "COURSE_LEDGER"
KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")


@dataclass
class Result:
    value: float
    unit: str = ""
    note: str = ""


_recorded: dict[str, Result] = {}


def results_dir() -> Path:
    """Where the results cards live: ``$COURSE_RESULTS_DIR``; in a checkout ``<repo>/results`` (the copy
    people edit, where ``make run RESULTS=...`` writes); in an installed wheel the copy it carries,
    ``course_utils/results/`` (pyproject.toml maps results/ onto that package)."""
    if os.environ.get("COURSE_RESULTS_DIR"):
        return Path(os.environ["COURSE_RESULTS_DIR"])
    repo = checkout()
    return repo / "results" if repo else Path(__file__).resolve().parent / "results"


def record(key: str, value: float, unit: str = "", note: str = "") -> float:
    """Store one measured figure under a dotted key (``lesson.what``) and return the value.

    Used by: every notebook.
    """
    if not KEY.match(key):
        raise ValueError(f"ledger keys look like 'lesson.what' (lower case, digits, '_'), got {key!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"ledger values are numbers; got {type(value).__name__} for {key!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{key!r}: refusing to record a non-finite value ({v})")
    _recorded[key] = Result(v, unit, note)
    target = os.environ.get(ENV_VAR)
    if target:
        _write(Path(target), {k: asdict(r) for k, r in _recorded.items()})
    return v


def recorded() -> dict[str, Result]:
    """Everything recorded in this process so far (a copy)."""
    return dict(_recorded)


def clear() -> None:
    """Forget what was recorded (tests use this)."""
    _recorded.clear()


def _write(path: Path, data: dict) -> None:
    """Replace the ledger file atomically: a reader, a crash or a second process recording into the
    same file (two lessons run at once) never leaves half a JSON file behind."""
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))


def references() -> dict[str, dict]:
    """Every valid results card in :func:`results_dir`, by name (an invalid one: one warning line, skipped)."""
    return load_cards(results_dir())


def available_references() -> list[str]:
    """Names of the valid results cards, e.g. ``['cpu-ci', 'h200']``."""
    return sorted(references())


def _flatten(card: dict) -> dict[str, Result]:
    """Every result of a card by key. A deeper notebook may record a key its core records too (lesson 02
    re-measures the epoch): the core's value wins, so a core compares with the card's run of itself."""
    notebooks = sorted(card.get("notebooks", {}).items(), key=lambda item: not item[0].startswith("deeper/"))
    return {key: Result(**r) for _, nb in notebooks for key, r in nb.get("results", {}).items()}


def load_reference(name: str) -> dict[str, Result]:
    """All results of one card, flattened over its notebooks. Missing or invalid card: ``{}``.

    Used by: every notebook that shows reference figures (02, 04-09).
    """
    card = references().get(name)
    return _flatten(card) if card else {}


def reference_environment(name: str) -> dict:
    """The machine description stored with a card (``{}`` if absent or invalid)."""
    return references().get(name, {}).get("environment", {})


def compare(keys: list[str] | None = None, references: tuple[str, ...] | None = None) -> Table:
    """This machine's figures beside every results card present, as a :class:`~course_utils.tables.Table`.

    ``keys`` defaults to everything recorded in this process; ``references`` to every valid card in
    :func:`results_dir` (cpu-ci, h200, any card a student contributed). A card that is absent, or has
    none of these figures, gets no column; a dash means "not measured there". A figure that no GPU
    card has measured but that a published measurement covers (``course_utils.published``) gets
    that figure in a column labelled "published", with its source under the table: never as if the
    course had measured it. In HTML the table is folded under one line (one compact table per lesson,
    opened with a click); its text form is the whole table. Used by: every notebook's "This machine vs the references" cell.
    """
    cards = load_cards(results_dir())
    names = [n for n in (references if references is not None else sorted(cards)) if n in cards]
    keys = list(keys if keys is not None else _recorded)
    refs = {n: _flatten(cards[n]) for n in names}
    names = [n for n in names if any(k in refs[n] for k in keys)]
    on_gpu = [n for n in names if cards[n].get("environment", {}).get("gpus")]
    stand_in = {k: published.figures(k) for k in keys if not any(k in refs[n] for n in on_gpu)}
    pub_devices = sorted({f.device for figs in stand_in.values() for f in figs})
    header = [t("result"), t("unit"), t("this machine"), *names, *(t("{device} (published)", device=d) for d in pub_devices)]
    rows = []
    for k in keys:
        mine = _recorded.get(k)
        unit = mine.unit if mine else next((r[k].unit for r in refs.values() if k in r), "")
        by_device = {f.device: f.value for f in stand_in.get(k, [])}
        rows.append([k, unit, mine.value if mine else None, *(refs[n][k].value if k in refs[n] else None for n in names),
                     *(by_device.get(d) for d in pub_devices)])
    lines = [f"{n}: {cards[n]['device']}, torch {cards[n]['environment'].get('torch')}, {cards[n]['created'][:10]}"
             for n in names]
    sources = sorted({f.source for figs in stand_in.values() for f in figs})
    lines += [t("published, not measured by the course: {source}", source=s) for s in sources]
    against = ", ".join(names + [t("{device} (published)", device=d) for d in pub_devices]) or t("no reference")
    fold = (t("This machine vs {against}: 1 figure (click to open)", against=against) if len(rows) == 1 else
            t("This machine vs {against}: {n} figures (click to open)", against=against, n=len(rows)))
    return Table(header, rows, note="\n".join(lines) or None, fold=fold)


def save_card(name: str, lesson: str | None = None, device: str = "auto") -> Path:
    """Save what this session recorded as the results card ``NAME.json``, to contribute it as a reference.

    Where: ``results/`` of a checkout (as ``make run RESULTS=NAME``), else ``results/`` in the current
    folder (a lesson opened alone: the notebook's folder). An existing card of that name keeps its other
    lessons; this lesson's entry is replaced. ``lesson``: the entry's name, by default the notebook's
    file name where Jupyter tells it (``JPY_SESSION_NAME``), else the recorded keys' prefixes.
    ``docs/contributing-results.md`` says how to submit the file. Call it at the end of a lesson::

        save_card("my-colab-t4")
    """
    from .cards import new_card, problems
    from .device import environment_report

    if not _recorded:
        raise ValueError("nothing recorded in this session yet: run the lesson first, then save_card(...)")
    session = os.environ.get("JPY_SESSION_NAME", "")
    lesson = lesson or (Path(session).stem if session.endswith(".ipynb") else
                        "session-" + "-".join(sorted({k.split(".")[0] for k in _recorded})))
    repo = checkout()
    target = (repo / "results" if repo else Path.cwd() / "results") / f"{name}.json"
    card = new_card(name, environment_report(), device, f"course_utils.ledger.save_card({name!r}) in {lesson}")
    if target.exists():
        old = json.loads(target.read_text(encoding="utf-8"))
        card["notebooks"] = dict(old.get("notebooks", {})) if not problems(old, name) else {}
    card["notebooks"][lesson] = {"status": "ok", "seconds": None, "parameters": {}, "error": None,
                                 "results": {k: asdict(r) for k, r in sorted(_recorded.items())}}
    found = problems(card, name)
    if found:
        raise ValueError(f"the card would not be valid: {found[0]}")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, json.dumps(card, indent=1, sort_keys=True))
    print(f"saved {target}: {len(_recorded)} figures of {lesson} on {card['device']} "
          "(docs/contributing-results.md: how to submit it)")
    return target


def gpu_cards() -> list[str]:
    """Names of the results cards measured on a GPU (``environment.gpus`` non-empty)."""
    return sorted(gpu_card_results())


def gpu_card_results() -> dict[str, dict[str, Result]]:
    """Every results card measured on a GPU, by name, with all its results flattened over its notebooks.
    The cards are read once: lessons that draw the GPU cards beside this run (02, 01, 04, 05) call this
    instead of ``load_reference`` per card, which reads every card again."""
    return {n: _flatten(c) for n, c in sorted(references().items()) if c.get("environment", {}).get("gpus")}


def missing_gpu_line(figures: list[str], device: "object | None" = None) -> None:
    """One line, on a machine without a GPU, saying which of the lesson's GPU figures this run lacks
    and how to get them; nothing on a GPU. Replaces "not measured" outputs scattered through a lesson.

    ``device`` is the lesson's device (a ``torch.device`` or string); by default, whether PyTorch sees
    CUDA or MPS here.
    """
    if device is not None:
        on_gpu = str(getattr(device, "type", device)).split(":")[0] in {"cuda", "mps", "xpu"}
    else:
        import torch

        on_gpu = torch.cuda.is_available() or (hasattr(torch.backends, "mps") and torch.backends.mps.is_available())
    if on_gpu or not figures:
        return
    cards = gpu_cards()
    shown = (t("The table at the end shows them from the GPU results card(s) {cards}", cards=", ".join(cards))
             if cards else t("No GPU results card is shipped yet"))
    print(t("No GPU here, so this run does not measure: {figures}. {shown}. "
            "To measure them, run this lesson on a GPU (Colab or Kaggle: Runtime > change runtime type > GPU) "
            "and save a results card (docs/contributing-results.md).", figures=t("; ").join(figures), shown=shown))
