"""docs/teaching.md quotes "the reference run", results/cpu-ci.json: keep the two in step.

The card was re-measured (3b7c12b) and teaching.md kept the old figures: lesson 02 "20 s" against
the card's 34 s, lesson 11 "not in cpu-ci.json yet", 220 GFLOP/s against 171. Here every figure the doc
attributes to the reference run is formatted from the card, as the doc rounds it, and must appear in
the doc; the words that judge a figure ("slowed", "little or no speed-up") are checked against it. After
re-measuring the card, the failures list what in the doc to update. The lessons-at-a-glance table
gives each core's and each deeper notebook's seconds from the card, and each core's minutes as the
sum of its deck's slide minutes; the class plans give each section's minutes from the deck.
"""
from __future__ import annotations

import json
import math
import re
import sys
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
FLAT = " ".join(DOC.split())  # sentences wrap anywhere in the Markdown source
CARD = json.loads((ROOT / "results" / "cpu-ci.json").read_text(encoding="utf-8"))


class _Figures(dict):
    """The card's figures by key; a key the card lacks (a notebook that failed) reads as NaN."""

    def __missing__(self, key: str) -> float:
        return math.nan


V = _Figures({key: r["value"] for nb in CARD["notebooks"].values() for key, r in nb["results"].items()})


def _lesson_table(column_name: str = "reference run") -> dict[str, str]:
    """Lesson number -> its cell in one column of the lessons-at-a-glance table."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and "| reference run |" in line)
    column = [c.strip() for c in lines[start].strip("|").split("|")].index(column_name)
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[column]
    return rows


def _card_seconds(deeper: bool) -> dict[str, str]:
    """Lesson number -> the card's wall time of its core (or its deeper notebook), rounded as the table does."""
    prefix = "deeper/" if deeper else ""
    return {name[len(prefix):][:2]: f"{round(nb['seconds'])} s" for name, nb in CARD["notebooks"].items()
            if name.startswith("deeper/") == deeper}


def test_lesson_table_has_each_lessons_seconds_from_the_card():
    core = _card_seconds(deeper=False)
    assert _lesson_table() == core
    # the deeper notebooks' column: the card's time, or a dash where the card has none
    deeper = _card_seconds(deeper=True)
    assert _lesson_table("deeper run") == {lesson: deeper.get(lesson, "—") for lesson in core}


def _deck(number: str) -> tuple[object, dict]:
    import nbformat

    sys.path.insert(0, str(ROOT / "tools"))
    import deck

    [path] = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    return deck, nbformat.read(path, as_version=4), deck.load(path)


def _half_up(minutes: float) -> int:
    """Minutes as the doc rounds them: 2.5 -> 3 (Python's round() would give 2)."""
    return math.floor(minutes + 0.5)


def test_lesson_minutes_are_the_decks():
    """The "minutes" column is the sum of each deck's slide minutes, as the doc says it is."""
    assert "the sum of the minutes of its deck's slides" in FLAT
    decks = {}
    for number in _lesson_table("minutes"):
        _, _, spec = _deck(number)
        decks[number] = _half_up(sum(s["minutes"] for s in spec["slides"]))
    assert {k: int(v) for k, v in _lesson_table("minutes").items()} == decks


CLASS_ROW = re.compile(r"^\|[^|]*\| (\d\d) \| ([^|]*)\|", re.M)
SECTION = re.compile(r"(?:§(\d+)|\b(Exercises)) [^()]*?\((\d+)\)")


def test_the_class_plans_give_each_sections_slide_minutes():
    """Each "§N title (M)" in the 2-hour and 1-day plans is the minutes of that section's slides in the
    lesson's deck; "the whole core (M)" is the deck's total."""
    checked = 0
    for number, present in CLASS_ROW.findall(DOC.split("## A 2-hour class", 1)[1].split("## Lesson by lesson", 1)[0]):
        deck, nb, spec = _deck(number)
        groups = {}
        for g in deck.groups(nb, spec):
            key = (re.match(r"(\d+)\.", g["title"]) or [None, g["title"].split()[0]])[1]
            groups[key] = groups.get(key, 0) + g["minutes"]
        whole = re.search(r"the whole core \((\d+)\)", present)
        if whole:
            assert int(whole[1]) == _half_up(sum(s["minutes"] for s in spec["slides"])), (number, present)
            checked += 1
        for sec, exercises, minutes in SECTION.findall(present):
            key = sec or exercises
            assert key in groups, f"lesson {number}: the plan names {key}, which has no slides in the deck"
            assert int(minutes) == _half_up(groups[key]), f"lesson {number} {key}: the plan says {minutes}, the deck {groups[key]:g}"
            checked += 1
    assert checked > 20


def test_the_plan_adds_up_and_places_every_lesson():
    """The total the doc states is the minutes column's sum, and the half-day plan covers each lesson once."""
    lines = DOC.splitlines()
    header = next(line for line in lines if line.startswith("|") and "| minutes |" in line)
    column = [c.strip() for c in header.strip("|").split("|")].index("minutes")
    minutes = {}
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        minutes[int(cells[0])] = int(cells[column])
    assert f"in all ({sum(minutes.values())} minutes)" in FLAT
    plan = FLAT.split("five half days with ", 1)[1].split(".", 1)[0].replace(" and ", ", ").split(", ")
    placed = [n for part in plan for lo, _, hi in [part.partition("–")] for n in range(int(lo), int(hi or lo) + 1)]
    assert sorted(placed) == sorted(minutes), f"the half days hold {plan}, the table lists lessons {sorted(minutes)}"


def test_the_run_is_described_as_the_card_records_it():
    env = CARD["environment"]
    torch = ".".join(env["torch"].split(".")[:2]) + (" CPU build" if env["torch"].endswith("+cpu") else "")
    day = datetime.fromisoformat(CARD["created"])
    assert f"(`results/cpu-ci.json`: {env['cpu_count']}-core {env['cpu_model']}, torch {torch}, " \
           f"{day.day} {day:%b %Y}, every lesson at its default size)" in FLAT
    assert all(not nb["parameters"]["SMOKE"] and nb["status"] == "ok" for nb in CARD["notebooks"].values())


_PEAK_N = next((n for n in (64, 128, 256, 512, 1024, 2048)  # the size at which the 2-thread curve peaked
                if V[f"tensors.mm_gflops_cpu_{n}"] == V["tensors.mm_gflops_cpu_peak"]), math.nan)

# (how the doc writes it, the card's values); the template is filled with str.format
FIGURES = [
    ("recorded {:.0f} passed, {:.0f} failed", V["env.checks_passed"], V["env.checks_failed"]),
    ("peaked at about {:.0f} GFLOP/s with {:.0f} threads at n = {}",
     V["tensors.mm_gflops_cpu_peak"], V["tensors.mm_cpu_threads"], _PEAK_N),
    ("about {:.0f} GFLOP/s on one thread", V["tensors.mm_gflops_cpu_1thread_peak"]),
    ("trained 20 000 epochs in {:.1f} s on one thread, reading the loss every epoch (test accuracy {:.0f}/30)",
     V["iris.cpu_seconds"], 30 * V["iris.test_accuracy"]),
    ("a step at hidden width 16 000 took about {:.0f} ms", V["iris.sweep_cpu_ms_h16000"]),
    ("`ident(x)` at about {:.1f} µs against {:.2f} µs for `ident.forward(x)`, {:.1f} µs with one hook",
     V["module.identity_call_us"], V["module.identity_forward_us"], V["module.identity_hooked_call_us"]),
    ("measured {:.2f} TFLOP/s in fp32, {:.2f} TFLOP/s in bf16", V["hw.matmul_fp32_tflops"], V["hw.matmul_bf16_tflops"]),
    ("{:.0f} GB/s for a copy", V["hw.copy_gbps"]),
    ("within {:.2f} % of the real step measured by the same tracker and within {:.1f} % of the profiler's",
     V["memory.fake_vs_real_worst_pct"], V["memory.estimate_vs_independent_worst_pct"]),
    ("predicted the 1 200-step run {:.0f} % " + ("short" if V["memory.plan_error_pct"] < 0 else "long"),
     abs(V["memory.plan_error_pct"])),
    ("took {:.2f}× the fp32 time, and {:.1f}× the fp32 time when PyTorch was limited to AVX2",
     V["amp.cpu_bf16_slowdown"], V["amp.cpu_bf16_slowdown_without_bf16_hw"]),
    ("bf16 made the wide MLP's step {:.1f}× faster", V["amp.speedup_bf16"]),
    ("({:.2f}× on the reference CPU)", V["amp.iris_speedup_bf16"]),
    ("saved {:.0f} % of one step's memory at {:.0f} segments ({:.0f} % of the activations) for {:.0f} % more step time",
     V["ckpt.memory_saving_pct"], V["ckpt.sqrt_segments"], V["ckpt.activation_saving_pct"], V["ckpt.slowdown_pct"]),
    ("spent {:.0f} % of each step waiting", 100 * V["data.wait_fraction_w0"]),
    ("two workers made steps {:.1f}× faster", V["data.step_s_w0"] / V["data.step_s_w2"]),
    ("one process with two threads ({:.2f}×) and the all-reduce was {:.0f} % of a step",
     V["ddp.speedup_2proc"], 100 * V["ddp.comm_share_2proc"]),
    ("reached {:.1f}× over the slow loop", V["profile.total_speedup"]),
    ("on the CPU ({:.2f}× and {:.2f}×)", V["compile.iris_speedup"], V["compile.mid_speedup"]),
    # to the thousand, grouped with a space as the doc writes it
    ("about {} steps to pay off", f"{round(V['compile.opt_breakeven_steps'], -3):,.0f}".replace(",", " ")),
    ("ZeRO-3 moves {:.0f}× DDP's bytes there", V["fsdp.gloo_wire_ratio_zero3_vs_ddp"]),
]


@pytest.mark.parametrize("template, values", [(f[0], f[1:]) for f in FIGURES], ids=[f[0][:40] for f in FIGURES])
def test_prose_figure_matches_the_card(template, values):
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        pytest.fail(f"results/cpu-ci.json has no figure for {template!r} (did its notebook fail?)")
    expected = template.format(*values)
    assert expected in FLAT, f"docs/teaching.md should say {expected!r} (from results/cpu-ci.json)"


def test_verdicts_in_the_prose_follow_the_card():
    assert "compiling *slowed* both small models" in FLAT
    assert V["compile.iris_speedup"] < 1 and V["compile.mid_speedup"] < 1
    assert "The iris MLP is slower in bf16" in FLAT and V["amp.iris_speedup_bf16"] < 1
    # lesson 09's own verdict bands: above 1.2x a speed-up, below 0.8x a slow-down
    speedup = V["ddp.speedup_2proc"]
    assert not math.isnan(speedup), "results/cpu-ci.json has no ddp.speedup_2proc (did lesson 09 fail?)"
    words = "brought little or no speed-up over" if 0.8 <= speedup <= 1.2 else "were slower than" if speedup < 0.8 else "were faster than"
    assert f"two processes {words} one process with two threads" in FLAT
    # lesson 05's claims table calls the probe sound within 10 %
    assert ("outside the lesson's 10 % aim" if abs(V["memory.plan_error_pct"]) > 10 else "within the lesson's 10 % aim") in FLAT
    assert "(that CPU has native bf16)" in FLAT
    note = next(nb["results"]["amp.cpu_bf16_slowdown"]["note"] for nb in CARD["notebooks"].values()
                if "amp.cpu_bf16_slowdown" in nb["results"])
    assert "native bf16: True" in note
