"""The offline slides and site in a real browser (Debian's Chromium, driven by Playwright), from file://.

`make slides site` builds them once for the whole module. Then:
1. Every slide of every built deck is measured the way a projector shows it, 1280x720
   (tools/measure_slides.py): no slide taller than the screen, no code/output/table block clipped
   sideways, prose >= 24 px and code >= 18 px on screen, speaker notes on every slide, a 16:9 canvas,
   and ArrowRight visits every slide, PageDown (a clicker) making the same moves. Each deck has as many
   slides as its deck file (at most 30) and no cut mark. The same pass watches the page: no request
   leaves file:/data:/blob:, no console error, the saved widget views render. A negative control (a deck
   whose slides must fail) is measured too.
2. The site's pages and its own copies of the decks (byte-for-byte copies of the built decks, one opened
   from its place in the site): no outside request, no console error, every relative link resolves, a
   deck advances on ArrowRight, the widget views render.
Asserted on the DOM, the requests and the console, never on pixels. (JupyterLab is tests/test_browser.py.)
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

from browser_kit import Watch, browser  # noqa: F401 (browser is a fixture)
from ci_kit import missing_tool
from conftest import REPO, lesson_notebooks

sys.path.insert(0, str(REPO / "tools"))
import measure_slides  # noqa: E402
import slides as slides_tool  # noqa: E402

pytestmark = pytest.mark.slow

VENV_BIN = Path(sys.executable).parent
SLIDES, SITE = REPO / "build" / "slides", REPO / "build" / "site"


@pytest.fixture(scope="module")
def offline_pages():
    """Builds the slides and the site (make slides site), returns (the built decks, the site's copies of
    the decks, the site's other pages)."""
    makefile = (REPO / "Makefile").read_text()
    missing = [f"tools/{t}.py" for t in ("slides", "site") if not (REPO / "tools" / f"{t}.py").exists()]
    missing += [f"Makefile target {t}" for t in ("slides", "site") if not re.search(rf"^{t}:", makefile, re.M)]
    if missing:
        pytest.skip(f"the offline slides/site are not built by this checkout yet: no {', '.join(missing)}")
    if shutil.which("make") is None:
        pytest.skip("needs make")
    cjk = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True) if shutil.which("fc-list") else None
    if cjk is None or not cjk.stdout.strip():
        missing_tool("the Chinese decks are measured with a CJK font installed (Debian: fonts-wqy-microhei or fonts-noto-cjk)")
    if shutil.which("npm") is None and not (REPO / "build" / "web" / "node_modules").is_dir():
        missing_tool("make slides / make site need npm (Node.js) for their pinned browser assets")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    venv = VENV_BIN.parent
    # -o: never reinstall the venv from inside a test (this one is already set up).
    built = subprocess.run(["make", "-o", f"{venv}/.course-installed", "slides", "site", f"VENV={venv}"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"make slides site failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    decks = sorted(SLIDES.glob("*.slides.html")) + sorted((SLIDES / "zh").glob("*.slides.html"))
    assert len(decks) == len(slides_tool.lessons()) == 2 * len(lesson_notebooks()), \
        f"one slides page per lesson, in English and in Chinese (slides/zh/): {[p.name for p in decks]}"
    site = sorted(SITE.rglob("*.html"))
    assert SITE / "index.html" in site
    return (decks, [p for p in site if p.name.endswith(".slides.html")],
            [p for p in site if not p.name.endswith(".slides.html")])


def _local(url: str) -> bool:
    # data: and blob: are made inside the page; nothing else but local files may be fetched.
    return urlparse(url).scheme in ("file", "data", "blob")


_WIDGETS_STATE = """() => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const rendered = [...views].filter(s => s.previousElementSibling?.matches('.widget-subarea')
                                          && s.previousElementSibling.querySelector('.jupyter-widgets'));
  return {views: views.length, rendered: rendered.length};
}"""

REVEAL = measure_slides.REVEAL


def _check_widgets(page) -> int:
    views = page.evaluate(_WIDGETS_STATE)["views"]
    if views:
        page.wait_for_function(f"() => ({_WIDGETS_STATE})().rendered === {views}", timeout=30_000)
    return views


def _check_links(page, path: Path) -> None:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.getAttribute('href'))")
    for href in hrefs:
        u = urlparse(href)
        if u.scheme or href.startswith("#"):
            continue
        target = (path.parent / u.path).resolve()
        assert target.exists(), f"{path.name}: link to a missing file {href}"


# --- 1. every slide at 1280x720 ---------------------------------------------------------------------

# What the decks used to show where they cut a cell to fit ("… continued in notebook", "… 7 more lines").
CUT_MARK = re.compile(r"…\s*(?:continued in|\d+ (?:more lines|lines left out|rows left out))")


def _problems(results: list[dict]) -> dict:
    bad = {}
    for r in results:
        w, h = r["canvas"]
        issues = {k: r[k][:5] for k in ("tall", "clipped", "small", "no_notes") if r[k]}
        if abs(w / h - 16 / 9) > 0.01:
            issues["canvas"] = f"{w}x{h} is not 16:9"
        if r["arrow_right_reaches"] is not None and r["arrow_right_reaches"] != r["slides"]:
            issues["arrow_right_reaches"] = f"{r['arrow_right_reaches']} of {r['slides']} slides"
        if r["page_down_differs"]:
            issues["page_down_differs"] = r["page_down_differs"]
        if issues:
            issues["detail"] = dict(list(r["detail"].items())[:3])
            bad[r["deck"]] = issues
    return bad


def test_every_slide_of_every_deck_fits_a_1280x720_projector_and_works_offline(browser, offline_pages, tmp_path):
    decks = list(offline_pages[0])
    context = browser.new_context(viewport=measure_slides.SCREEN)
    watch = Watch(context, _local)
    results, widget_views = [], 0
    try:
        page = context.new_page()
        for deck in decks:
            # A Chinese deck is its English deck's slides with the words translated, built by the same
            # template: the keys were walked on the English one; here every slide's fit, in one call.
            chinese = deck.parent.name == "zh"
            results.append(measure_slides.measure_deck(page, deck, walk=not chinese))
            results[-1]["deck"] = deck.relative_to(SLIDES).as_posix()  # zh/02_….slides.html: the Chinese deck
            widget_views += _check_widgets(page)
            watch.check(deck.name)
    finally:
        context.close()
    print("\n" + measure_slides.table(results))
    assert len(results) == len(slides_tool.lessons())
    # Each deck is its talk: as many slides as its deck file, at most 30, and nothing cut to fit.
    written = {slides_tool.name(p): len(slides_tool.decks.load(p)["slides"]) for p in slides_tool.lessons()}
    assert {r["deck"]: r["slides"] for r in results} == {f"{k}.slides.html": v for k, v in written.items()}
    assert max(written.values()) <= slides_tool.decks.MAX_SLIDES
    for deck in decks:
        text = re.sub(r"<[^>]+>", " ", deck.read_text(encoding="utf-8"))
        assert not CUT_MARK.search(text), f"{deck.name}: {CUT_MARK.search(text)[0]!r}"
    assert not _problems(results), _problems(results)
    walked = [r["deck"] for r in results if r["arrow_right_reaches"] is not None]
    assert walked == [f"{slides_tool.name(p)}.slides.html" for p in slides_tool.lessons() if p.parent.name != "zh"], \
        "the keys are walked on every English deck"
    # (Lesson 02's explorer widget moved to its deeper notebook, which has no deck: its saved view is
    # checked on the site's page of that notebook, in the next test; _check_widgets waited for any view here.)


def test_the_measurement_catches_a_slide_that_does_not_fit(browser, tmp_path):
    """A negative control: a 60-line cell shown whole, tiny text, an unwrapped line, a slide without
    notes; and a navigation mode in which ArrowRight skips sub-slides. (Exported as it stands: a deck
    file could not hold these, tools/deck.py refuses them before the browser would.)"""
    nb = nbformat.v4.new_notebook()
    tall = nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(60)))
    nb.cells = [nbformat.v4.new_markdown_cell("# 98 · Bad\n\nintro"), nbformat.v4.new_markdown_cell("the plan"),
                nbformat.v4.new_markdown_cell("## 1. Bad"),
                tall, nbformat.v4.new_markdown_cell('<span style="font-size:12px">tiny</span>'),
                nbformat.v4.new_markdown_cell('<pre style="white-space:pre">' + "w" * 300 + "</pre>")]
    for i, cell in enumerate(nb.cells):
        cell.metadata["slideshow"] = {"slide_type": ["slide", "notes", "slide", "-", "subslide", "subslide"][i]}
    if not (slides_tool.NODE_MODULES / "reveal.js").exists():
        missing_tool("needs build/web/node_modules (make slides installs it with npm)")
    slides_tool.copy_assets(tmp_path / "assets")
    body, _ = slides_tool.exporter("slides", "assets").from_notebook_node(nb)
    deck = tmp_path / "98_bad.slides.html"
    deck.write_text(body, encoding="utf-8")
    context = browser.new_context(viewport=measure_slides.SCREEN)
    try:
        page = context.new_page()
        [r] = measure_slides.measure([deck], page=page)
        quick = measure_slides.measure_deck(page, deck, walk=False)  # as the Chinese decks are measured
        # In reveal.js's default navigation mode ArrowRight goes from one column to the next and skips
        # the sub-slides below; PageDown does not. The walk's count and PageDown's check both see it.
        measure_slides.open_deck(page, deck)
        page.evaluate(f"() => {REVEAL}.configure({{navigationMode: 'default'}})")
        default_mode = {key: measure_slides.walk_keys(page, key, r["slides"]) for key in ("ArrowRight", "PageDown")}
        kinds, differs = measure_slides.same_moves(page, "PageDown", default_mode["ArrowRight"])
    finally:
        context.close()
    assert r["tall"] == ["1/0"] and r["small"] == ["1/1"] and r["clipped"] == ["1/2"], r
    assert {k: quick[k] for k in ("tall", "small", "clipped", "no_notes")} == {k: r[k] for k in ("tall", "small", "clipped", "no_notes")}
    assert quick["arrow_right_reaches"] is None, "no keys were pressed: nothing claimed about them"
    assert r["no_notes"] == ["1/0", "1/1", "1/2"], "the slides without a notes cell (the title has one)"
    assert r["slides"] == r["arrow_right_reaches"] == 4 and not r["page_down_differs"], r
    assert r["page_down_kinds"] == ["down", "on", "stay"], r  # 0/0 -> 1/0 -> 1/1 -> 1/2, then the end
    assert {k: len(set(w)) for k, w in default_mode.items()} == {"ArrowRight": 2, "PageDown": 4}, default_mode
    # ArrowRight stops at 1/0 (no column to its right); PageDown goes on down to 1/1
    assert (kinds, differs) == (["on", "stay"], {"1/0": "ArrowRight went to 1/0, PageDown to 1/1"}), (kinds, differs)


# --- 2. the site, and its copies of the decks ---------------------------------------------------------

def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_site_and_its_decks_work_from_file_urls(browser, offline_pages):
    """The site's slides/ is a byte-for-byte copy of build/slides (decks and assets, the same relative
    layout), so test 1's walk through every deck holds for the site's copies too; here one copy (lesson
    02's, with a widget) is opened from its place in the site, and every other page of the site."""
    decks, site_decks, site = offline_pages
    built, copied = _files(SLIDES), _files(SITE / "slides")
    assert built.keys() == copied.keys(), f"the site's slides/ differs from build/slides: {sorted(built.keys() ^ copied.keys())[:10]}"
    assert [name for name in built if built[name] != copied[name]] == [], "the site's decks must be copies of the built ones"
    assert sorted(p.relative_to(SITE / "slides") for p in site_decks) == sorted(p.relative_to(SLIDES) for p in decks)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watch = Watch(context, _local)
    widget_views = 0
    try:
        for path in [p for p in site_decks if p.name.startswith("02_") and p.parent.name != "zh"]:
            page = context.new_page()
            page.goto(path.as_uri())
            page.wait_for_function(f"() => {REVEAL}?.isReady()", timeout=30_000)
            total = page.evaluate(f"() => {REVEAL}.getTotalSlides()")
            assert total >= 6, f"{path.name}: only {total} slides"
            before = page.evaluate(f"() => {REVEAL}.getIndices()")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"old => JSON.stringify({REVEAL}.getIndices()) !== JSON.stringify(old)",
                                   arg=before, timeout=10_000)
            after = page.evaluate(f"() => {REVEAL}.getIndices()")
            # navigationMode "linear": the next slide is the first sub-slide below, or the next column.
            assert (after["h"], after.get("v", 0)) in {(before["h"], before.get("v", 0) + 1), (before["h"] + 1, 0)}, \
                f"{path.name}: ArrowRight went from {before} to {after}"
            widget_views += _check_widgets(page)
            page.close()
            watch.check(str(path.relative_to(SITE)))
        # One tab goes from page to page, as a reader clicking through the site does: each page is a new
        # document, and its errors are checked before the next one loads. (A new tab per page took 16.9 s
        # for the site's 28 pages on the 2-core machine, one tab 6.1 s: most of it was opening and closing tabs.)
        page = context.new_page()
        switches = {}
        for path in site + site_decks:
            if path not in site_decks and "assets" in path.relative_to(SITE).parts:  # reveal.js's own pages
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                _check_links(page, path)
                watch.check(str(path.relative_to(SITE)))
                continue
            parts = path.relative_to(SITE).parts
            if parts[:2] == ("zh", "lessons") and not path.name.startswith("02_"):
                # A Chinese lesson's page is an English lesson's page in another language: the same template
                # and assets (02's is opened below like the English pages); its links are read from the file.
                text = path.read_text(encoding="utf-8")
                for href in re.findall(r'href="([^"]*)"', text):
                    if urlparse(href).scheme or href.startswith("#"):
                        continue
                    target = (path.parent / urlparse(href).path).resolve()
                    assert target.exists(), f"{path.relative_to(SITE)}: link to a missing file {href}"
                switches[path] = re.findall(r'class="course-lang"[^>]*><a href="([^"]+)"', text)
                continue
            if path in site_decks:
                switches[path] = [a for a in re.findall(r'class="course-lang"[^>]*><a href="([^"]+)"', path.read_text(encoding="utf-8"))]
                continue  # a deck's page was walked by test 1; its switch is read from the file
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            widget_views += _check_widgets(page)
            _check_links(page, path)
            switches[path] = page.eval_on_selector_all(".course-lang a", "els => els.map(a => a.getAttribute('href'))")
            watch.check(str(path.relative_to(SITE)))
        page.close()
    finally:
        context.close()
    assert site_decks, "the site carries the decks"
    # Every page has one language switch, to an existing page in the other language; a lesson's and a
    # deck's lead to the same lesson's, the indexes and instructor pages to each other.
    for path, hrefs in switches.items():
        assert len(hrefs) == 1, f"{path.relative_to(SITE)}: {len(hrefs)} language switches"
        target = (path.parent / hrefs[0]).resolve()
        assert target.exists(), f"{path.relative_to(SITE)}: its language switch leads to a missing page {hrefs[0]}"
        zh_page = "zh" in path.relative_to(SITE).parts
        assert ("zh" in target.relative_to(SITE.resolve()).parts) != zh_page, f"{path.relative_to(SITE)}: switch to {hrefs[0]}"
        if path.parent.name in ("lessons", "zh") and path.name.endswith(".html") and path.name[:2].isdigit() or \
                path.name in ("index.html", "instructor.html"):
            assert target.name == path.name, f"{path.relative_to(SITE)}: its switch leads to {hrefs[0]}, not its counterpart"
    assert widget_views, "lesson 02's explorer (deeper/02) is a widget: its saved view must appear in the site"
    assert (SITE / "deeper").is_dir() and (SITE / "glossary.html").exists(), "the site has the deeper notebooks and the glossary"
