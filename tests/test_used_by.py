"""The "Used by: notebook(s) NN" lines in course_utils docstrings are true.

A reader of ``course_utils`` trusts these lines to find the lesson that explains a helper; a stale
one sends them to the wrong lesson. For every function, class or module whose docstring names
lessons, each named lesson's code cells must use that name (``every notebook`` = all lessons).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, every_notebook

USED_BY = re.compile(r"Used by:?\s*([^\n]*(?:\n(?!\s*\n)[^\n]*)?)")


def _code(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


# A lesson's code is its core's and its deeper notebook's: "Used by: notebook 01" holds when either uses it.
LESSONS: dict[str, str] = {}
for _path in every_notebook():
    LESSONS[_path.stem[:2]] = LESSONS.get(_path.stem[:2], "") + "\n" + _code(_path)


def _claims() -> list[tuple[str, str, list[str]]]:
    """(where, name, lessons) for every docstring that says where it is used."""
    claims = []
    for module in sorted((REPO / "course_utils").rglob("*.py")):
        tree = ast.parse(module.read_text())
        nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))]
        for node in nodes:
            doc = ast.get_docstring(node) or ""
            m = USED_BY.search(doc)
            if not m or "notebook" not in m.group(1):
                continue
            text = m.group(1)
            lessons = sorted(LESSONS) if re.search(r"every notebook(?! that)", text) else re.findall(r"\b(\d\d)\b", text)
            name = module.stem if isinstance(node, ast.Module) else node.name
            claims.append((f"{module.relative_to(REPO)}:{name}", name, lessons))
    return claims


CLAIMS = _claims()


def test_there_are_claims_to_check():
    assert len(CLAIMS) >= 5


@pytest.mark.parametrize("where,name,lessons", CLAIMS, ids=[c[0] for c in CLAIMS])
def test_used_by_line_names_lessons_that_use_it(where, name, lessons):
    assert lessons, f"{where}: 'Used by' names no lesson number"
    missing = [n for n in lessons if n not in LESSONS]
    assert not missing, f"{where}: names lessons that do not exist: {missing}"
    unused = [n for n in lessons if not re.search(rf"\b{re.escape(name)}\b", LESSONS[n])]
    assert not unused, f"{where}: says lessons {unused} use {name!r}, but their code does not mention it"
