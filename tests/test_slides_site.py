"""`make slides` and `make site`: slide metadata from the headings, pages with nothing fetched remotely.

The slow tests build lesson 00's slides and a one-lesson site into a temp folder from the npm-installed
assets (build/web/node_modules; `make slides` installs them, and so does the first slow test if npm
is there). The browser itself (requests, console, widgets) is tested in tests/test_browser.py.
"""
from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import slides  # noqa: E402

_spec = importlib.util.spec_from_file_location("course_site", REPO / "tools" / "site.py")
course_site = importlib.util.module_from_spec(_spec)  # not `import site`: that name is the stdlib's
_spec.loader.exec_module(course_site)

LESSON_00 = REPO / "notebooks" / "00_environment_check.ipynb"

# Anything a page would fetch from another host: script/link/img sources, CSS @import and url(),
# ES module imports, and quoted script/stylesheet URLs inside scripts. Plain <a href> links are fine.
REMOTE = [
    re.compile(r"<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"@import\s+(?:url\()?\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"url\(\s*[\"']?\s*(?:https?:)?//", re.I),
    re.compile(r"\bimport\s*\(?\s*[\"'](?:https?:)?//", re.I),
    re.compile(r"[\"'](?:https?:)?//[^\"'\s]+\.(?:m?js|css)(?:\?[^\"'\s]*)?[\"']", re.I),
]
LOCAL_REF = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)\s*=\s*\"([^\"#]+)\"", re.I)


def remote_references(text: str) -> list[str]:
    return [text[max(0, m.start() - 60):m.end() + 60] for p in REMOTE for m in p.finditer(text)]


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _md(src, **meta):
    c = nbformat.v4.new_markdown_cell(src)
    c.metadata.update(meta)
    return c


def _code(src, tags=(), lines_out=0):
    c = nbformat.v4.new_code_cell(src)
    if tags:
        c.metadata["tags"] = list(tags)
    if lines_out:
        c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x\n" * lines_out)]
    return c


def test_slide_types_follow_the_headings():
    nb = _nb(
        _md("# 00 · Title\n\nintro"),
        _code('DEVICE = "auto"', tags=["parameters"]),
        _code("import torch\ncheck_params(globals())"),
        _code("print(1)"),
        _md("## 1. First\n\ntext"),
        _md("**Speaker notes** (3 min)\n\n- say"),
        _code("a = 1"), _code("b = 2"), _code("c = 3"),       # a 4th cell in the section: a sub-slide
        _md("\n".join(["a line of prose " * 5] * 14)),          # too tall to share a screen: a sub-slide
        _md("### detail"),                                     # a ### heading: a sub-slide
        _md("said aloud", slideshow={"slide_type": "notes"}),
        _md("## 2. Second"),
    )
    assert slides.slide_types(nb) == ["slide", "skip", "skip", "-", "slide", "notes", "-", "-",
                                      "subslide", "subslide", "subslide", "notes", "slide"]


def test_deck_rules_cut_what_does_not_fit_and_keep_hand_choices():
    long_log = _code("for i in range(40):\n    print(i)", lines_out=40)
    figure = _code("fig, ax = new_figure()\nfinish(fig)")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]
    long_code = _code("\n".join(f"x{i} = {i}" for i in range(25)))  # over KEY_LINES
    hand = _code("\n".join(f"y{i} = {i}" for i in range(25)))
    hand.metadata["course"] = {"deck": {"show": "lines", "lines": [3, 5], "by": "hand"}}
    nb = _nb(_md("# 00 · Title"), _md("## 3. Third"), long_log, figure, long_code, hand)
    assert slides.deck_rule(figure)["show"] == "output"          # a plot without its drawing code
    assert slides.deck_rule(long_code) == {"show": "lines", "lines": [1, slides.KEY_LINES - 2],
                                           "why": "long code: its first lines"}
    assert slides.apply(nb) and not slides.apply(nb), "apply is idempotent"
    assert hand.metadata["course"]["deck"] == {"show": "lines", "lines": [3, 5], "by": "hand"}, "hand choice kept"
    assert long_code.metadata["course"]["deck"]["by"] == "rule"
    view = slides.deck_cells(nb)
    log = "".join(o["text"] for o in view[2].outputs)
    assert "… 30 lines left out (full output: notebook §3) …" in log and log.count("\n") == 11
    assert view[3].metadata["transient"] == {"remove_source": True}
    assert view[4].source.endswith(f"# … {25 - slides.KEY_LINES + 2} more lines: full code in notebook §3")
    assert view[5].source.splitlines()[:3] == ["y2 = 2", "y3 = 3", "y4 = 4"]
    # A hand choice that names no known view stops the build with a one-line message.
    hand.metadata["course"]["deck"]["show"] = "some"
    with pytest.raises(SystemExit, match="course.deck.show is 'some': one of all, output, lines, skip"):
        slides.deck_cells(nb)


def test_a_results_table_taller_than_a_slide_keeps_its_head_and_last_row():
    from course_utils.tables import Table

    table = Table(["result", "unit", "this machine", "cpu-ci"],
                  [[f"lesson.a_rather_long_result_name_{i}", "ms", i * 1.5, i * 1.4] for i in range(40)], title="compare")
    cell = _code("display(compare(keys))")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": table._repr_html_(), "text/plain": str(table)})]
    assert slides.height(cell) > 2 * slides.SLIDE_PX, "the long names wrap: the estimate counts the wrapped lines"
    nb = _nb(_md("# 00 · Title"), _md("## 4. Fourth"), cell)
    slides.apply(nb)
    [view] = [c for c in slides.deck_cells(nb) if c.cell_type == "code"]
    assert slides.height(view) <= slides.SLIDE_PX
    page = view.outputs[0]["data"]["text/html"]
    assert "lesson.a_rather_long_result_name_0<" in page and "lesson.a_rather_long_result_name_39<" in page
    assert "lesson.a_rather_long_result_name_20<" not in page
    left = int(re.search(r"… (\d+) rows left out \(full table: notebook §4\) …", page)[1])
    assert page.count("<tr") == 1 + (40 - left) + 1, "header, the rows kept, the 'left out' row"
    assert view.outputs[-1]["data"]["text/plain"] == "code: notebook §4", "the code is in the notebook"
    # The notebook itself is untouched: the student reads the whole table.
    assert "lesson.a_rather_long_result_name_20<" in cell.outputs[0]["data"]["text/html"]


def test_every_slide_gets_its_sections_notes():
    nb = _nb(_md("# 00 · Title\n\nintro"),
             _md("## 1. First\n\ntext"),
             _md("**Speaker notes** (3 min)\n\n- **Say:** one\n- **Ask the room:** \"Why?\" (Because.)"),
             *[_code(f"a{i} = {i}", lines_out=12) for i in range(4)],
             _md("## Exercises"),
             _md("**Speaker notes** (9 min)\n\n- **Say:** exercise 1 is X = 3\n- **Ask the room:** \"How?\""))
    deck = slides.deck(nb)
    groups, current = [], None
    for cell in deck.cells:
        kind = cell.metadata.get("slideshow", {}).get("slide_type")
        if kind in ("slide", "subslide"):
            current = []
            groups.append(current)
        elif kind == "notes" and current is not None:
            current.append(cell.source)
    assert len(groups) >= 4 and all(groups), groups
    assert groups[0][0].startswith("**Lesson plan** (12 min in all)")
    assert all("**Say:** one" in g[0] for g in groups[1:-1]), "every sub-slide of §1 carries §1's notes"
    assert "exercise 1 is X = 3" in groups[-1][0]
    # The student's notebook keeps no notes cell, and no check-yourself cell in the exercises.
    assert sum(slides.is_notes(c) for c in nb.cells) == 2, "deck() works on a copy"
    sources = [c.source for c in deck.cells if c.metadata.get("course", {}).get("check_yourself")]
    assert sources == ["**Check yourself:** Why?\n\n<details><summary>Answer</summary>\n\nBecause.\n\n</details>"]


def test_write_metadata_is_idempotent_and_check_fails_without_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(slides, "LESSONS", slides.LESSONS)  # main(--notebooks) rebinds it; restored after
    copy_ = tmp_path / LESSON_00.name
    nb = nbformat.read(LESSON_00, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("slideshow", None)
    nbformat.write(nb, copy_)
    assert slides.main(["--check", "--notebooks", str(tmp_path)]) == 1
    assert "has no slideshow metadata" in capsys.readouterr().out
    assert slides.main(["--write-metadata", "--notebooks", str(tmp_path)]) == 0
    first = copy_.read_bytes()
    assert slides.main(["--write-metadata", "--notebooks", str(tmp_path)]) == 0
    assert copy_.read_bytes() == first, "a second --write-metadata must change nothing"
    assert "unchanged" in capsys.readouterr().out
    assert slides.main(["--check", "--notebooks", str(tmp_path)]) == 0
    # A section heading that lost its slide is caught too.
    written = nbformat.read(copy_, as_version=4)
    heading = next(c for c in written.cells if c.cell_type == "markdown" and c.source.startswith("## "))
    heading.metadata["slideshow"]["slide_type"] = "-"
    assert slides.problems(written), "a ## section that does not start a slide must be reported"


def test_every_lesson_has_its_slide_metadata():
    """Fix with `python tools/slides.py --write-metadata` (then tools/make_solutions.py)."""
    bad = {p.name: slides.problems(nbformat.read(p, as_version=4))[:3] for p in slides.lessons()}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_every_lesson_has_six_slides_and_notes_stay_notes():
    for path in slides.lessons():
        nb = nbformat.read(path, as_version=4)
        kinds = slides.slide_types(nb)
        assert kinds.count("slide") + kinds.count("subslide") >= slides.MIN_SLIDES, path.name
        for cell, kind in zip(nb.cells, kinds):
            if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
                assert kind == "notes", path.name


def test_no_lesson_needs_mathjax():
    """The offline pages ship no MathJax: a lesson with LaTeX math needs it added (tools/slides.py says how)."""
    assert {p.name: slides.uses_latex(nbformat.read(p, as_version=4)) for p in slides.lessons()
            if slides.uses_latex(nbformat.read(p, as_version=4))} == {}
    assert slides.uses_latex(_nb(_md("energy $E = mc^2$"))) == [0]
    assert slides.uses_latex(_nb(_md("costs $2 and $3; `echo $HOME`\n```bash\nx=$(pwd)\n```"))) == []


def test_package_json_pins_the_browser_assets_without_scripts():
    pkg = json.loads((REPO / "package.json").read_text())
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert pkg["private"] is True and "scripts" not in pkg
    deps = pkg["dependencies"]
    # The browser assets, and JupyterHub's proxy for the shared-server kit (tests/test_jupyterhub.py).
    assert set(deps) == {"reveal.js", "requirejs", "jquery", "@jupyter-widgets/html-manager", "configurable-http-proxy"}
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in deps.values()), "exact versions"
    assert deps["reveal.js"].startswith("4."), "nbconvert's reveal template expects reveal.js 4.x"
    for name, version in deps.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, f"lockfile out of date for {name}"
    ignored = (REPO / ".gitignore").read_text().split()
    assert "build/" in ignored and "node_modules/" in ignored


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_slides_and_site_install_assets_then_build():
    out = subprocess.run(["make", "-n", "-B", "-o", ".venv/.course-installed", "site"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert "npm ci --ignore-scripts" in out and "tools/slides.py" in out and "tools/site.py" in out
    assert out.index("npm ci") < out.index("tools/slides.py") < out.index("tools/site.py")


def test_site_index_links_every_lesson():
    lessons = slides.lessons()
    page = course_site.index_html(course_site.lesson_rows(lessons))
    for path in lessons:
        for link in (f"lessons/{path.stem}.html", f"slides/{path.stem}.slides.html"):
            assert f'href="{link}"' in page, link
        if (REPO / "solutions" / path.name).exists():
            assert f'href="solutions/{path.stem}.html"' in page
    assert "results/cpu-ci.json" in page and not remote_references(page)


def _assets_installed() -> Path:
    if not (slides.NODE_MODULES / "reveal.js").exists():
        if shutil.which("npm") is None or shutil.which("make") is None:
            pytest.skip("needs npm (or build/web/node_modules from `make slides`)")
        subprocess.run(["make", "build/web/node_modules/.package-lock.json"], cwd=REPO, check=True)
    return slides.NODE_MODULES


def _assert_offline(page: Path, root: Path):
    text = page.read_text(encoding="utf-8")
    assert not remote_references(text), remote_references(text)[:3]
    for ref in LOCAL_REF.findall(text):
        assert (page.parent / ref).resolve().is_file(), f"{page.name}: {ref} is not a local file"
        assert (page.parent / ref).resolve().is_relative_to(root), f"{page.name}: {ref} leaves {root}"
    return text


@pytest.mark.slow
def test_slides_of_lesson_00_are_offline_with_six_slides(tmp_path):
    _assets_installed()
    [page] = slides.build(["00"], tmp_path)
    text = _assert_offline(page, tmp_path)
    assert text.count("<section") >= slides.MIN_SLIDES
    assert 'href="assets/reveal.js/dist/theme/white.css"' in text and "mermaid" not in text.lower().split("</head>")[0]
    assert "MathJax.Hub.Queue" not in text
    for css in (tmp_path / "assets").rglob("*.css"):
        assert not remote_references(css.read_text(encoding="utf-8", errors="replace")), css


@pytest.mark.slow
def test_site_of_lesson_00_is_offline_and_links_resolve(tmp_path):
    _assets_installed()
    slides.build(["00"], tmp_path / "slides")
    index = course_site.build(tmp_path / "site", tmp_path / "slides", ["00"])
    root = (tmp_path / "site").resolve()
    for page in [index, *root.glob("lessons/*.html"), *root.glob("solutions/*.html"), *root.glob("slides/*.html")]:
        _assert_offline(page, root)
    hrefs = re.findall(r'<a href="([^"#:]+)"', index.read_text(encoding="utf-8"))
    assert hrefs and all((root / h).is_file() for h in hrefs), hrefs


def test_widget_state_is_kept_in_the_pages():
    """Lesson 02's deeper notebook stores its explorer's widget state; the exported page carries it for the
    HTML manager."""
    nb = nbformat.read(REPO / "notebooks" / "deeper" / "02_iris_cpu_vs_gpu.ipynb", as_version=4)
    assert "widgets" in nb.metadata, "the stored run of lesson 02's deeper notebook keeps its explorer's state"
    body, _ = slides.exporter("html", "assets").from_notebook_node(copy.deepcopy(nb))
    assert 'type="application/vnd.jupyter.widget-state+json"' in body
    assert 'type="application/vnd.jupyter.widget-view+json"' in body
    assert "'assets/html-manager/embed-amd.js'" in body and not remote_references(body)


def test_instructor_page_has_every_sections_notes():
    page = course_site.instructor_html([LESSON_00])
    nb = nbformat.read(LESSON_00, as_version=4)
    slides.course_notes.migrate(nb)
    sections = [s for s in slides.course_notes.section_notes(nb) if s["level"] == 2]
    assert sections and all(f"<h3>{s['title']}</h3>" in page.replace("&amp;", "&") for s in sections if s["notes"])
    assert page.count("Ask the room") == sum(s["notes"].count("Ask the room") for s in sections) > 0
    assert "Lesson plan" in page and not remote_references(page)
    assert 'href="instructor.html"' in course_site.index_html(course_site.lesson_rows([LESSON_00]))


def test_pages_get_what_nbconvert_adds_after_rendering_without_its_reparse():
    """tools/slides.py adds nbconvert's alt text and tabindex attributes itself instead of letting
    nbconvert re-parse the page (most of `make slides site`'s time): the page must be nbconvert's own,
    compared parsed the same way, for a lesson page and a deck with a figure and an image without alt."""
    from bs4 import BeautifulSoup

    nb = nbformat.read(LESSON_00, as_version=4)
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))  # the lesson's own
    nb.cells.append(nbformat.v4.new_markdown_cell('<img src="data:image/png;base64,iVBORw0KGgo=">'))
    figure = nbformat.v4.new_code_cell("plot()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]
    nb.cells.append(figure)
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    for kind in ("html", "slides"):
        ours = slides.exporter(kind, "assets")
        theirs = type(ours).__mro__[1](config=ours.config)  # nbconvert's exporter, the same settings
        assert type(theirs).__module__.startswith("nbconvert.")
        mine, its = (ids.sub("ID", str(BeautifulSoup(e.from_notebook_node(copy.deepcopy(nb))[0], features="html.parser")))
                     for e in (ours, theirs))
        assert mine == its, f"{kind}: the page differs from nbconvert's"
        assert mine.count(f'alt="{slides.NO_ALT_TEXT}"') == images + 2 and 'tabindex="0"' in mine
