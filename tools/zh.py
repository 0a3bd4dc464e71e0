"""The Chinese lessons, ``notebooks/zh/NN_*.ipynb``, kept in step with the English cores by machine.

    python tools/zh.py check               # what make test checks; exit 1 naming each lesson and cell
    python tools/zh.py stale               # only the cells to re-translate, with the English they must say now
    python tools/zh.py export NN [--stale] > NN.txt   # a lesson's cells as text, for a translator
    python tools/zh.py import NN NN.txt    # write translated cells back (refuses code that differs)
    python tools/zh.py new NN              # start a translation: the English lesson, each cell marked

A Chinese lesson has the English lesson's cells, in the same order and with the same ids. Each cell
records the English cell it translates and a hash of that cell's source when it was translated
(``metadata.translation = {"of": id, "sha": hash}``). The check fails when:

- a lesson or a cell has no counterpart, or the cells are in another order or of another type;
- **stale**: the English cell changed after its translation (its hash differs);
- **code differs**: a code cell (or an exercise's solution) differs from the English beyond comments
  and string literals (both compared as Python syntax trees with every string blanked; an f-string
  keeps its ``{expressions}``, in any order, since Chinese may order a sentence differently);
- a markdown cell dropped an inline ``code`` span, a number or a link of the English, links a deeper
  notebook or a solution (both stay English) without saying （英文）, or still holds an English
  sentence (six English words in a row outside code and links).

After editing an English lesson: ``python tools/zh.py stale`` lists what to re-translate; ``export
NN --stale`` gives those cells as text, and ``import`` records the new hashes.
"""
from __future__ import annotations

import argparse
import ast
import copy
import functools
import hashlib
import re
import sys
from collections import Counter
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from course_utils.paths import core_notebooks, zh_notebooks  # noqa: E402

MARK = "translation"
BLOCK = re.compile(r"^<<< cell (\S+) (code|markdown|raw) >>>$", re.M)
HAN = re.compile(r"[\u3400-\u9fff]")


def sha(source: str) -> str:
    """The hash a translated cell records of its English cell's source."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def zh_path(en: Path) -> Path:
    return en.parent / "zh" / en.name


# --- code: equal beyond comments and strings ------------------------------------------------------

class _Blank(ast.NodeTransformer):
    """Blank every string constant; an f-string becomes its formatted values, sorted (the words around
    them, and their order, belong to the language)."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value="S") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        parts = [self.visit(v) for v in node.values if isinstance(v, ast.FormattedValue)]
        return ast.JoinedStr(values=sorted(parts, key=ast.dump))

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        node.value = self.visit(node.value)  # the format spec (":.1f") is code: kept as written
        return node


@functools.cache
def _transformer():
    """IPython's input transformer (one, reused), or None without IPython."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # without IPython, a cell with magics will not parse: reported as such
        return None
    return TransformerManager()


def _python(source: str) -> str:
    """The cell as plain Python: IPython's magics (``%timeit``, ``!pip``) become the calls they run."""
    manager = _transformer()
    return manager.transform_cell(source) if manager else source


def _blanked(source: str) -> list[tuple[str, int]] | str:
    """Each statement with every string blanked, and its line; or the syntax error, as text."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError as err:
        return f"<syntax error: {err.msg}, line {err.lineno}>"
    return [(ast.dump(_Blank().visit(node)), node.lineno) for node in tree.body]


def code_shape(source: str) -> str:
    """What must be equal between an English code cell and its translation."""
    shape = _blanked(source)
    return shape if isinstance(shape, str) else "\n".join(dump for dump, _ in shape)


def code_difference(en: str, zh: str) -> str | None:
    """None when the two differ only in comments and strings, else the first line that differs."""
    a, b = _blanked(en), _blanked(zh)
    if a == b or (not isinstance(a, str) and not isinstance(b, str) and [x for x, _ in a] == [y for y, _ in b]):
        return None
    if isinstance(b, str):
        return f"the translation does not parse: {b.strip('<>').removeprefix('syntax error: ')}"
    a = [] if isinstance(a, str) else a
    for i, ((x, _), (y, line)) in enumerate(zip(a, b)):
        if x != y:
            return f"statement {i + 1} (line {line} of the translation) is not the English code"
    return f"the English has {len(a)} statements, the translation {len(b)}"


# --- markdown: what a translation keeps -----------------------------------------------------------

FENCE = re.compile(r"```.*?```", re.S)
SPAN = re.compile(r"`[^`]+`")  # a code span may wrap onto the next line
LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
TAG = re.compile(r"<[^>]+>")
ENGLISH_RUN = re.compile(r"(?:\b[A-Za-z][a-z']*\b[ ,;:]+){5}\b[A-Za-z][a-z']*\b")


def _prose(text: str) -> str:
    """The words a reader reads: no code, no link targets, no HTML tags, no math."""
    text = FENCE.sub(" ", text)
    text = SPAN.sub(" ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\$[^$]+\$", " ", text)
    return TAG.sub(" ", text)


def _target(link: str, folder: str) -> str:
    """A link as the place it leads to, so ``glossary.md#x`` in a lesson and ``../glossary.md#x`` in its
    translation (one folder deeper) count as the same link, and a lesson linking a lesson is matched
    by its translation linking the translation."""
    if re.match(r"^[a-z]+:", link) or link.startswith("#"):
        return link
    path, _, anchor = link.partition("#")
    parts = [p for p in (folder + "/" + path).split("/") if p and p != "."]
    out: list[str] = []
    for p in parts:
        if p == "..":
            if out:
                out.pop()
        else:
            out.append(p)
    if out[:2] == ["notebooks", "zh"] and len(out) == 3 and re.match(r"\d\d_.*\.ipynb$", out[2]):
        out = ["notebooks"] + out[2:]  # a lesson links the lesson; its translation links the translation
    return "/".join(out) + (f"#{anchor}" if anchor else "")


def markdown_problems(en: str, zh: str) -> list[str]:
    """What a translated markdown cell lost or kept of the English that it must not have."""
    out = []
    def spans_of(text: str) -> set[str]:
        return {" ".join(m.split()) for m in SPAN.findall(FENCE.sub(" ", text))}

    spans = spans_of(en) - spans_of(zh)
    if spans:
        out.append(f"drops the code span(s) {', '.join(sorted(spans))}")
    if FENCE.findall(en) != FENCE.findall(zh) and [code_shape(_fenced(b)) for b in FENCE.findall(en)] != \
            [code_shape(_fenced(b)) for b in FENCE.findall(zh)]:
        out.append("a fenced code block differs beyond comments and strings")
    en_links = {_target(a or b, "notebooks") for a, b in LINK.findall(en)}
    zh_links = {_target(a or b, "notebooks/zh") for a, b in LINK.findall(zh)}
    if en_links != zh_links:
        lost, extra = sorted(en_links - zh_links), sorted(zh_links - en_links)
        out.append("links differ" + (f": lost {', '.join(lost)}" if lost else "") + (f"; new {', '.join(extra)}" if extra else ""))
    gone = sorted({t.split("#")[0] for t in zh_links if not re.match(r"^[a-z]+:|#", t)
                   and not (REPO / t.split("#")[0]).exists()})
    if gone:
        out.append(f"links to a file that does not exist: {', '.join(gone)}")
    for m in re.finditer(r"\[([^\]]*)\]\(([^)\s]+)\)(?=(.{0,8}))", zh):
        if re.search(r"(^|/)(deeper|solutions)/", _target(m.group(2), "notebooks/zh")) and "英文" not in m.group(1) + m.group(3):
            out.append(f"a link to {m.group(2)} does not say it is English (write （英文） after it)")
    numbers = {n.replace(",", "") for n in NUMBER.findall(_prose(en))} - {n.replace(",", "") for n in NUMBER.findall(_prose(zh))}
    if numbers:
        out.append(f"drops the number(s) {', '.join(sorted(numbers, key=float))}")
    left = ENGLISH_RUN.search(_prose(zh))
    if left:
        out.append(f"keeps an English sentence: {left.group(0)!r}")
    return out


def _fenced(block: str) -> str:
    body = block.strip("`").split("\n", 1)
    return body[1] if len(body) > 1 else ""


# --- one lesson -----------------------------------------------------------------------------------

def _solution(cell) -> str | None:
    return (cell.metadata.get("course") or {}).get("solution")


def _visible_tags(cell) -> list[str]:
    return sorted(cell.metadata.get("tags", []))


def problems(en_path: Path) -> list[str]:
    """Every way ``notebooks/zh/<lesson>`` is out of step with ``en_path``, one line each (empty: in step)."""
    name = en_path.stem
    zp = zh_path(en_path)
    if not zp.exists():
        return [f"{name}: no Chinese lesson (notebooks/zh/{en_path.name}); start one with python tools/zh.py new {name[:2]}"]
    en, zh = nbformat.read(en_path, as_version=4), nbformat.read(zp, as_version=4)
    out = []
    en_ids = [c.id for c in en.cells]
    zh_of = [(c.metadata.get(MARK) or {}).get("of") for c in zh.cells]
    for c, of in zip(zh.cells, zh_of):
        if of is None:
            out.append(f"{name} cell {c.id}: no translation mark (which English cell does it translate?)")
    missing = [i for i in en_ids if i not in zh_of]
    extra = [of for of in zh_of if of is not None and of not in en_ids]
    out += [f"{name} cell {i}: the English cell has no translation" for i in missing]
    out += [f"{name} cell {i}: translates an English cell that no longer exists" for i in extra]
    if not missing and not extra and zh_of != en_ids:
        out.append(f"{name}: the cells are not in the English order")
    english = {c.id: c for c in en.cells}
    for c, of in zip(zh.cells, zh_of):
        e = english.get(of)
        if e is None:
            continue
        where = f"{name} cell {of}"
        if c.id != of:
            out.append(f"{where}: its id is {c.id!r}; a translated cell keeps the English id (decks and links use it)")
        if c.cell_type != e.cell_type:
            out.append(f"{where}: a {c.cell_type} cell translates a {e.cell_type} cell")
            continue
        if c.metadata[MARK].get("sha") != sha(e.source):
            out.append(f"{where}: stale, the English cell changed after it was translated")
        if _visible_tags(c) != _visible_tags(e):
            out.append(f"{where}: tags {_visible_tags(c)} differ from the English {_visible_tags(e)}")
        if c.cell_type == "code":
            diff = code_difference(e.source, c.source)
            if diff:
                out.append(f"{where}: code differs: {diff}")
            es, zs = _solution(e), _solution(c)
            if (es is None) != (zs is None) or (es is not None and code_difference(es, zs)):
                out.append(f"{where}: the exercise's solution differs beyond comments and strings")
        elif c.cell_type == "markdown":
            out += [f"{where}: {p}" for p in markdown_problems(e.source, c.source)]
    return out


OUT_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _shape(outputs: list) -> tuple[list[tuple], list[str]]:
    """What a cell showed, language aside: each output's kind and formats (streams merged as nbval merges
    them), and the numbers its text holds, sorted (a translation may order a sentence differently)."""
    from nbval.plugin import coalesce_streams

    kinds, numbers = [], []
    for out in coalesce_streams(copy.deepcopy(outputs)):
        if out.output_type == "stream":
            kinds.append(("stream", out.name))
            text = out.text
        else:
            data = out.get("data", {})
            kinds.append((out.output_type, tuple(sorted(k for k in data if k != "text/html"))))
            text = data.get("text/plain", "")
        numbers += [n.replace(",", "") for n in OUT_NUMBER.findall(text if isinstance(text, str) else "".join(text))]
    return kinds, sorted(numbers)


def output_problems(en_path: Path) -> list[str]:
    """Where the Chinese lesson's stored outputs are not the English lesson's run in Chinese: a code cell
    with other kinds of output (text, table, figure), or, in a cell the stored-output comparison checks
    (not tagged ``nbval-ignore-output``), without every number the English cell shows (a translation
    may add one: "1 B（10 亿）"). The English stored outputs are compared with a
    live run by ``make test``; a Chinese lesson stored from the same code must agree with them."""
    zp = zh_path(en_path)
    if not zp.exists():
        return []
    english = {c.id: c for c in nbformat.read(en_path, as_version=4).cells if c.cell_type == "code"}
    out = []
    for c in nbformat.read(zp, as_version=4).cells:
        e = english.get(c.id)
        if c.cell_type != "code" or e is None or e.execution_count is None:
            continue
        (ek, en_numbers), (zk, zh_numbers) = _shape(e.outputs), _shape(c.outputs)
        if ek != zk:
            out.append(f"{en_path.stem} cell {c.id}: its stored outputs are {zk}, the English lesson's {ek}: "
                       f"python tools/store_outputs.py zh/{en_path.name[:2]}")
        elif "nbval-ignore-output" not in e.metadata.get("tags", []) and Counter(en_numbers) - Counter(zh_numbers):
            gone = sorted((Counter(en_numbers) - Counter(zh_numbers)).elements())
            out.append(f"{en_path.stem} cell {c.id}: its stored outputs lack numbers the English lesson's show "
                       f"({', '.join(gone[:6])}): python tools/store_outputs.py zh/{en_path.name[:2]}")
    return out


def stale(en_path: Path) -> list[tuple[str, str]]:
    """(cell id, the English source now) of every translated cell whose English changed."""
    zp = zh_path(en_path)
    if not zp.exists():
        return []
    english = {c.id: c for c in nbformat.read(en_path, as_version=4).cells}
    out = []
    for c in nbformat.read(zp, as_version=4).cells:
        mark = c.metadata.get(MARK) or {}
        e = english.get(mark.get("of"))
        if e is not None and mark.get("sha") != sha(e.source):
            out.append((e.id, e.source))
    return out


def new(en_path: Path) -> Path:
    """The English lesson as the start of its translation: every cell marked, no outputs."""
    nb = nbformat.read(en_path, as_version=4)
    for c in nb.cells:
        c.metadata[MARK] = {"of": c.id, "sha": sha(c.source)}
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    zp = zh_path(en_path)
    zp.parent.mkdir(exist_ok=True)
    if zp.exists():
        raise SystemExit(f"{zp.relative_to(REPO)} exists; export and import its cells instead")
    nbformat.write(nb, zp)
    return zp


def export(en_path: Path, only_stale: bool = False) -> str:
    """The Chinese lesson's cells as text (``<<< cell ID TYPE >>>`` then the source); with
    ``only_stale`` only the stale cells, each preceded by the English it must now say (as comments
    the import ignores: lines starting ``>>> ``)."""
    zh = nbformat.read(zh_path(en_path), as_version=4)
    todo = dict(stale(en_path)) if only_stale else None
    out = []
    for c in zh.cells:
        of = (c.metadata.get(MARK) or {}).get("of", c.id)
        if todo is not None and of not in todo:
            continue
        out.append(f"<<< cell {of} {c.cell_type} >>>")
        if todo is not None:
            out += [">>> " + line for line in todo[of].splitlines()]
        out.append(c.source)
    return "\n".join(out) + "\n"


def import_(en_path: Path, text: str) -> list[str]:
    """Write the cells in ``text`` into the Chinese lesson, each marked with its English cell's hash.
    Returns the problems of the lesson afterwards (nothing is written when a code cell differs)."""
    en = {c.id: c for c in nbformat.read(en_path, as_version=4).cells}
    zp = zh_path(en_path)
    zh = nbformat.read(zp, as_version=4)
    cells = {(c.metadata.get(MARK) or {}).get("of", c.id): c for c in zh.cells}
    heads = list(BLOCK.finditer(text))
    refused = []
    updates = {}
    for k, m in enumerate(heads):
        body = text[m.end() + 1: heads[k + 1].start() if k + 1 < len(heads) else len(text)]
        body = "\n".join(line for line in body.split("\n") if not line.startswith(">>> ")).rstrip("\n")
        of, kind = m.group(1), m.group(2)
        if of not in cells or of not in en:
            refused.append(f"cell {of}: no such cell in the lesson")
            continue
        if kind == "code":
            diff = code_difference(en[of].source, body)
            if diff:
                refused.append(f"cell {of}: code differs: {diff}")
                continue
        updates[of] = body
    if refused:
        return refused
    for of, body in updates.items():
        c = cells[of]
        if c.source != body and c.cell_type == "code":
            c.outputs, c.execution_count = [], None  # its stored outputs were the old source's
        c.source = body
        c.metadata[MARK] = {"of": of, "sha": sha(en[of].source)}
    nbformat.write(zh, zp)
    return problems(en_path)


def lesson(arg: str) -> Path:
    found = [p for p in core_notebooks(REPO / "notebooks") if p.stem.startswith(arg)]
    if len(found) != 1:
        raise SystemExit(f"no single English lesson matches {arg!r}")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    sub.add_parser("stale")
    p = sub.add_parser("export")
    p.add_argument("lesson")
    p.add_argument("--stale", action="store_true")
    p = sub.add_parser("import")
    p.add_argument("lesson")
    p.add_argument("file", type=Path)
    p = sub.add_parser("new")
    p.add_argument("lesson")
    args = ap.parse_args(argv)
    if args.cmd == "check":
        found = [line for en in core_notebooks(REPO / "notebooks") for line in problems(en) + output_problems(en)]
        orphans = {p.name for p in zh_notebooks(REPO / "notebooks")} - {p.name for p in core_notebooks(REPO / "notebooks")}
        found += [f"notebooks/zh/{n}: no English lesson of that name" for n in sorted(orphans)]
        print("\n".join(found) if found else f"{len(core_notebooks(REPO / 'notebooks'))} Chinese lessons in step with the English")
        return 1 if found else 0
    if args.cmd == "stale":
        n = 0
        for en in core_notebooks(REPO / "notebooks"):
            for cell, source in stale(en):
                n += 1
                print(f"{en.stem} cell {cell}: re-translate; the English now says:\n" + "\n".join("    " + s for s in source.splitlines()))
        print(f"{n} stale cell(s)" + (": python tools/zh.py export NN --stale > NN.txt, translate, then import" if n else ""))
        return 1 if n else 0
    if args.cmd == "export":
        sys.stdout.write(export(lesson(args.lesson), args.stale))
        return 0
    if args.cmd == "import":
        found = import_(lesson(args.lesson), args.file.read_text(encoding="utf-8"))
        print("\n".join(found) if found else "imported; the lesson is in step")
        return 1 if found else 0
    if args.cmd == "new":
        print(new(lesson(args.lesson)).relative_to(REPO))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
