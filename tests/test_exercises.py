"""The exercise checker and every registered exercise: right passes, a typical mistake gets its
hint, ``...`` is "not attempted"; every ``check("key")`` in a lesson is registered and used."""
from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from conftest import REPO, every_notebook, lesson_notebooks
from course_utils.exercises import (REGISTRY, ExerciseNotPassed, Verdict, check, evaluate, exercise,
                                    is_unattempted)
from course_utils.exercises import core

KEYS = sorted(REGISTRY)
CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\d\d\.[a-z0-9_]+)["']""")


@pytest.mark.parametrize("key", KEYS)
def test_right_answer_passes(key):
    ex = REGISTRY[key]
    outcome = evaluate(key, ex.right(), **ex.example)
    assert outcome.verdict is Verdict.CORRECT, outcome


@pytest.mark.parametrize("key", KEYS)
def test_typical_mistake_fails_with_a_hint(key):
    ex = REGISTRY[key]
    outcome = evaluate(key, ex.wrong(), **ex.example)
    assert outcome.verdict is Verdict.WRONG, outcome
    assert len(outcome.message) >= 20, f"{key}: the hint must teach something, got {outcome.message!r}"
    assert not outcome.message.startswith("your answer raised"), f"{key}: the judge crashed on the typical mistake"


@pytest.mark.parametrize("key", KEYS)
def test_ellipsis_is_not_attempted(key):
    assert evaluate(key, ..., **REGISTRY[key].example).verdict is Verdict.NOT_ATTEMPTED


def test_stub_functions_and_classes_are_not_attempted():
    def stub(a, b):
        """Docstring only and an ellipsis: the template a student starts from."""
        ...

    def done(a, b):
        return a + b

    class Stub:
        ...

    assert is_unattempted(stub) and is_unattempted(Stub) and not is_unattempted(done)
    assert not is_unattempted(0) and not is_unattempted(None)


@pytest.fixture
def toy():
    key = "99.toy"
    exercise(key, right=lambda: 4, wrong=lambda: 5)(lambda a: None if a == 4 else "two and two make four, not five")
    yield key
    del core.REGISTRY[key]


def test_check_prints_and_never_raises_unless_strict(toy, monkeypatch, capsys):
    monkeypatch.delenv("COURSE_STRICT_CHECKS", raising=False)
    check(toy, 5)
    check(toy, ...)
    check(toy, 4)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("❌ 99.toy: wrong — two and two") and "not attempted" in out[1] and out[2] == "✅ 99.toy: correct"
    monkeypatch.setenv("COURSE_STRICT_CHECKS", "1")
    check(toy, 4)
    for answer in (5, ...):
        with pytest.raises(ExerciseNotPassed):
            check(toy, answer)


def test_a_student_function_that_raises_is_wrong_not_a_crash(toy):
    REGISTRY[toy] = REGISTRY[toy].__class__(toy, lambda f: None if f() == 4 else "no", lambda: None, lambda: None)
    outcome = evaluate(toy, lambda: 1 / 0)
    assert outcome.verdict is Verdict.WRONG and "ZeroDivisionError" in outcome.message


def test_unknown_key_is_a_bug_in_the_lesson():
    with pytest.raises(KeyError, match="no exercise"):
        evaluate("00.no_such_exercise", 1)


def _lesson_checks(path) -> tuple[list[str], list]:
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and CHECK_CALL.search(c.source)]
    return [k for c in cells for k in CHECK_CALL.findall(c.source)], cells


@pytest.mark.parametrize("path", lesson_notebooks(), ids=lambda p: p.stem)
def test_every_lesson_has_three_checked_exercises_with_solutions(path):
    keys, cells = _lesson_checks(path)
    lesson = path.stem[:2]
    assert len(set(keys)) >= 3, f"{path.stem}: {len(set(keys))} checked exercises, need >= 3"
    assert all(k.startswith(lesson + ".") for k in keys), f"{path.stem}: keys must start with {lesson}."
    unregistered = sorted(set(keys) - set(REGISTRY))
    assert not unregistered, f"{path.stem} checks unregistered keys {unregistered}"
    assert any(REGISTRY[k].kind == "code" for k in keys), f"{path.stem}: at least one exercise must be code to write"
    for cell in cells:
        solution = cell.metadata.get("course", {}).get("solution")
        assert solution, f"{path.stem}: exercise cell without a marked solution:\n{cell.source[:200]}"
        assert CHECK_CALL.findall(solution) == CHECK_CALL.findall(cell.source), "the solution checks the same keys"
        assert len(cell.source.splitlines()) <= 30 and len(solution.splitlines()) <= 30


def test_every_registered_exercise_is_used_by_its_lesson():
    used = {k for p in every_notebook() for k in _lesson_checks(p)[0]}  # a core or its deeper notebook
    unused = sorted(set(REGISTRY) - used)
    assert not unused, f"registered but no lesson checks them: {unused}"


def test_solutions_are_generated_from_the_lessons():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "make_solutions.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for path in every_notebook():
        has_exercises = bool(_lesson_checks(path)[0])
        assert has_exercises <= (REPO / "solutions" / path.relative_to(REPO / "notebooks")).exists(), path


# --- wrong types get a hint, untouched starters are "not attempted" (issue 17) --------------------

def test_number_hint_names_what_was_handed_in():
    import torch

    from course_utils.exercises import number_hint

    assert number_hint(2.5) is None and number_hint(3) is None
    assert "forget to `return`" in number_hint(None)
    assert "without quotes" in number_hint("2.5")
    assert "tensor" in number_hint(torch.tensor(2.5)) and "autograd graph" not in number_hint(torch.tensor(2.5))
    assert "autograd graph" in number_hint(torch.tensor(2.5, requires_grad=True) * 2)
    assert "NaN" in number_hint(float("nan"))
    assert number_hint(True) is not None, "a bool is not an answer of seconds"


def test_close_on_a_graph_attached_tensor_prints_no_warning():
    import warnings

    import torch

    from course_utils.exercises import close

    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a UserWarning here would fail the test
        assert close(torch.tensor(1.0, requires_grad=True) * 1.0, 1.0, rel=1e-6)


def test_a_starter_loop_is_not_attempted_until_edited():
    from course_utils.exercises import is_starter

    def starter(xs):
        """Docstring."""
        total = 0
        for x in xs:
            total += x          # TODO: change me
        return total

    def renamed_with_new_comments(xs):
        total = 0
        for x in xs:
            total += x          # still unchanged
        return total

    def edited(xs):
        total = 0
        for x in xs:
            total += 2 * x
        return total

    assert is_starter(renamed_with_new_comments, starter)
    assert not is_starter(edited, starter) and not is_starter(3, starter)


def test_lesson02_read_every_template_is_not_attempted_and_kept_tensors_are_wrong():
    """The template in lesson 02 is the buggy loop: untouched it must say "not attempted", not "wrong";
    a loop that keeps the loss tensors (graph attached) must be rejected with a hint, without a warning."""
    import warnings

    from course_utils.exercises.lesson02 import _item_every_epoch, _kept_tensors

    def template(model, X, y, opt, loss_fn, epochs: int, every: int) -> list[float]:
        """As in the lesson."""
        losses = []
        for epoch in range(epochs):
            loss = loss_fn(model(X), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            value = loss.item()                  # TODO: this reads every epoch
            if epoch % every == 0:               # TODO
                losses.append(value)
        return losses

    assert evaluate("02.read_every", template).verdict is Verdict.NOT_ATTEMPTED
    assert evaluate("02.read_every", _item_every_epoch).verdict is Verdict.NOT_ATTEMPTED
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = evaluate("02.read_every", _kept_tensors)
    assert kept.verdict is Verdict.WRONG and "tensors" in kept.message and ".item()" in kept.message

    def returns_nothing(model, X, y, opt, loss_fn, epochs, every):
        for _ in range(epochs):
            loss = loss_fn(model(X), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    def detached_tensors(model, X, y, opt, loss_fn, epochs, every):
        return [t.detach() for t in _kept_tensors(model, X, y, opt, loss_fn, epochs, every)]

    assert "NoneType" in evaluate("02.read_every", returns_nothing).message
    assert "tensor" in evaluate("02.read_every", detached_tensors).message


@pytest.mark.parametrize("bad", [None, "2.0", [2.0]])
def test_lesson02_predict_run_rejects_wrong_types_with_a_hint(bad):
    import torch

    out = evaluate("02.predict_run", bad, parts_us={"forward": 100.0})
    assert out.verdict is Verdict.WRONG and "you gave" in out.message
    t = evaluate("02.predict_run", torch.tensor(2.0), parts_us={"forward": 100.0})
    assert t.verdict is Verdict.WRONG and ".item()" in t.message


def test_lesson01_mm_4096_seconds_rejects_a_string_and_names_the_unit_slip():
    sweep = {64: 3.0, 256: 40.0, 1024: 31.0}
    out = evaluate("01.mm_4096_seconds", "4.4", measured=sweep)
    assert out.verdict is Verdict.WRONG and "without quotes" in out.message
    seconds = 2 * 4096**3 / 31e9
    assert evaluate("01.mm_4096_seconds", seconds, measured=sweep).verdict is Verdict.CORRECT
    assert "milliseconds" in evaluate("01.mm_4096_seconds", seconds * 1000, measured=sweep).message
    assert "8" in evaluate("01.mm_4096_seconds", seconds / 8, measured=sweep).message


@pytest.mark.parametrize("key, answer", [
    ("00.gpu_features", lambda cc: [True, False, True]),       # a list, not a tuple
    ("00.gpu_features", lambda cc: None),                       # forgot to return
    ("00.pick_wheel", lambda driver, cc: None),
    ("00.no_gpu_cause", None),
    ("01.to_same_object", [True, False, True]),
    ("01.to_same_object", "True, False, True"),
    ("01.sync_timer", lambda fn, sync, clock, warmup=3, repeats=7: None),
    ("01.to_device", lambda batch, device: None),
    ("02.overhead_width", "1000"),
    ("02.momentum_part", None),
])
def test_wrong_types_get_a_hint_not_a_crash(key, answer):
    """Lessons 00-02: an answer of the wrong type or shape is *wrong* with a hint that teaches, never an
    exception from the judge itself."""
    ex = REGISTRY[key]
    context = ex.example or ({"measured": {64: 3.0}} if key == "01.mm_4096_seconds" else {})
    out = evaluate(key, answer, **context)
    assert out.verdict is Verdict.WRONG, out
    assert not out.message.startswith("your answer raised"), out.message
    assert len(out.message) >= 20
