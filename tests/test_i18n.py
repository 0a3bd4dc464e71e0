"""What course_utils prints reaches a Chinese lesson's student in Chinese (course_utils.i18n).

Every ``t("...")`` in the package is a literal English template with a Chinese translation that has
the same ``{fields}``; no translation is left whose English is gone; the exercise judges hold no
English sentence outside ``t()``; and in Chinese every exercise's typical mistake gets a Chinese hint.
"""
from __future__ import annotations

import ast
import importlib
import re
import string
from pathlib import Path

import pytest

from course_utils import i18n
from course_utils.exercises import core

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "course_utils"
LOCALE = PACKAGE / "locale" / "zh"
HAN = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")  # Han characters and CJK punctuation


def _calls(path: Path, tree: ast.AST | None = None) -> list[ast.Call]:
    tree = tree or ast.parse(path.read_text(encoding="utf-8"))
    # t(...), or tr(...) where a module uses t for a time
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("t", "tr")]


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if LOCALE not in p.parents)


def _catalogue_module(path: Path) -> str:
    """Which locale module holds a source file's messages: an exercise module's own (``lesson02``),
    else ``core``."""
    return path.stem if path.parent.name == "exercises" and path.stem.startswith("lesson") else "core"


def msgids() -> dict[str, set[str]]:
    """catalogue module -> the English templates its source files pass to ``t()``."""
    found: dict[str, set[str]] = {}
    for path in _sources():
        for call in _calls(path):
            arg = call.args[0] if call.args else None
            assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), \
                f"{path.relative_to(REPO)}:{call.lineno}: t() takes a literal English template, not {ast.unparse(arg) if arg else 'nothing'}"
            found.setdefault(_catalogue_module(path), set()).add(arg.value)
    return found


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _translations(module: str) -> dict[str, str]:
    return importlib.import_module(f"course_utils.locale.zh.{module}").MESSAGES


def test_every_message_has_its_chinese_with_the_same_fields_and_none_is_left_over():
    wanted = msgids()
    have = {p.stem for p in LOCALE.glob("*.py") if p.stem != "__init__"}
    assert have == set(wanted), f"locale/zh modules {sorted(have)} vs sources with messages {sorted(wanted)}"
    for module, ids in sorted(wanted.items()):
        zh = _translations(module)
        missing = sorted(ids - set(zh))
        assert not missing, f"course_utils/locale/zh/{module}.py has no translation of: {missing[:5]}"
        left_over = sorted(set(zh) - ids)
        assert not left_over, f"course_utils/locale/zh/{module}.py translates text no longer in the code: {left_over[:5]}"
        for en, text in zh.items():
            assert _fields(en) == _fields(text), f"{module}: the fields of {en!r} and {text!r} differ"
            assert HAN.search(text), f"{module}: {en!r} is not translated ({text!r})"


def test_an_english_message_in_two_modules_is_translated_the_same_way():
    """The catalogue is merged (course_utils.i18n.catalogue): one English template, one Chinese."""
    seen: dict[str, tuple[str, str]] = {}
    for module in sorted(msgids()):
        for en, text in _translations(module).items():
            other = seen.setdefault(en, (module, text))
            assert other[1] == text, f"{en!r}: {other[0]} says {other[1]!r}, {module} says {text!r}"


def _english_outside_t(path: Path) -> list[str]:
    """String literals of five or more English words in an exercise module that no ``t()`` wraps
    (docstrings, ``t``'s own arguments and errors that only a course author meets aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = {id(n) for call in _calls(path, tree) for n in ast.walk(call)}
    # ValueError / KeyError: a course author's mistake (a key registered twice), not a student's
    inside |= {id(n) for r in ast.walk(tree) if isinstance(r, ast.Raise) and isinstance(r.exc, ast.Call)
               and getattr(r.exc.func, "id", "") in ("ValueError", "KeyError") for n in ast.walk(r.exc)}
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside | docs:
            if len(re.findall(r"[A-Za-z]{2,}", node.value)) >= 5:
                out.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    return out


@pytest.mark.parametrize("path", sorted((PACKAGE / "exercises").glob("*.py")), ids=lambda p: p.stem)
def test_exercise_feedback_has_no_english_sentence_outside_t(path):
    assert _english_outside_t(path) == []


@pytest.fixture
def chinese(monkeypatch):
    monkeypatch.setenv(i18n.ENV, "zh")
    yield


def test_the_language_is_english_by_default_and_the_setup_call_chooses(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    assert i18n.language() == "en" and i18n.t("correct") == "correct"
    import course_utils

    course_utils.setup_notebook("zh")
    assert i18n.language() == "zh" and i18n.t("correct") != "correct" and HAN.search(i18n.t("correct"))
    course_utils.setup_notebook("en")
    assert i18n.t("correct") == "correct"
    with pytest.raises(ValueError, match="language must be one of 'en', 'zh'"):
        course_utils.setup_notebook("fr")


def test_a_message_without_a_translation_falls_back_to_english(chinese):
    assert i18n.t("no such message {n}", n=3) == "no such message 3"


def test_every_exercise_says_correct_wrong_and_not_attempted_in_chinese(chinese):
    """Each exercise's typical mistake (its registered ``wrong``) gets a hint with Chinese in it."""
    import course_utils.exercises  # noqa: F401  (registers every lesson's exercises)

    assert core.REGISTRY
    for key, ex in sorted(core.REGISTRY.items()):
        outcome = core.evaluate(key, ex.wrong(), **ex.example)
        assert outcome.verdict is core.Verdict.WRONG, key
        assert HAN.search(outcome.message), f"{key}: the hint for its typical mistake is not Chinese: {outcome.message[:80]!r}"
        assert HAN.search(str(outcome)), key
        right = core.evaluate(key, ex.right(), **ex.example)
        assert right.verdict is core.Verdict.CORRECT and "正确" in str(right), f"{key}: {right}"
    assert HAN.search(str(core.evaluate(key, ...)))


def test_the_shared_messages_read_in_chinese(chinese):
    from course_utils.exercises.predict import verdict
    from course_utils.params import Int, ParameterError, check_params

    assert HAN.search(verdict(..., 3.0, unit="s")) and HAN.search(verdict(2.0, 8.0, unit="s", why="x"))
    with pytest.raises(ParameterError, match=r"[\u3400-\u9fff]"):
        check_params({"EPOCHS": 0}, EPOCHS=Int(1, 10))
    assert HAN.search(core.number_hint(None)) and HAN.search(core.number_hint("3"))
