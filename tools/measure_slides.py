"""Measure built decks the way a projector shows them: every slide of every deck in Chromium at 1280x720.

    python tools/measure_slides.py [build/slides] [--shots /tmp/shots --shot 02:3/0 ...]

For each slide (sub-slides included), as real ArrowRight presses show it in one page per deck (a slide
the key does not reach, through Reveal's own API):
- ``tall``:  the slide's content is taller than the canvas (a clicker cannot scroll);
- ``clipped``: a code, output or table block is wider than its box (``scrollWidth > clientWidth``)
  or sticks out of the screen on the right;
- ``small``: text on screen (computed font size x Reveal's scale) under ``BODY_PX`` for prose or
  ``CODE_PX`` for code, outputs, tables and widgets;
- ``no_notes``: ``Reveal.getSlideNotes()`` is empty for the slide (the speaker view shows nothing).
It also reports the canvas (``width x height``), whether ArrowRight visits every slide (reveal.js
``navigationMode``), whether PageDown (a clicker) makes the same moves, and writes screenshots of chosen
slides.

tests/test_decks.py runs this on every built deck and requires every count to be zero.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
SCREEN = {"width": 1280, "height": 720}
BODY_PX, CODE_PX = 24, 18

# nbconvert's reveal template loads reveal.js through require.js: Reveal is a module, not a global.
REVEAL = ("(window.Reveal || Object.values(window.requirejs?.s?.contexts?._?.defined || {})"
          ".find(m => m && typeof m.getIndices === 'function'))")

# One slide, measured in place: Reveal has shown it (display: block) before this runs. _MEASURE steps
# to each of ``stops`` with Reveal's API first; _HERE measures the slide a key press has just shown.
_ONE = """
  function one() {
  const slide = R.getCurrentSlide(), scale = R.getScale(), cfg = R.getConfig();
  const screenW = window.innerWidth;
  const CODEISH = 'pre, code, .jp-OutputArea-output, .jp-RenderedText, table, .jupyter-widgets, .widget-subarea';
  const problems = {tall: null, clipped: [], small: []};
  if (slide.scrollHeight > cfg.height + 1) problems.tall = slide.scrollHeight;
  const blocks = slide.querySelectorAll('pre, .jp-OutputArea-output, .jp-InputArea-editor, table, .jp-RenderedHTMLCommon > *');
  for (const el of blocks) {
    if (el.closest('aside.notes') || !el.offsetParent) continue;
    const r = el.getBoundingClientRect();
    const wide = el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1;
    if (wide || r.right > screenW + 1)
      problems.clipped.push(`${el.tagName.toLowerCase()}.${el.className}`.slice(0, 60) + `: ${el.scrollWidth}>${el.clientWidth}`);
  }
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || seen.has(el) || el.closest('aside.notes, script, style, .anchor-link')) continue;
    seen.add(el);
    if (!el.getClientRects().length) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * scale;
    const limit = el.closest(CODEISH) ? CODE : BODY;
    if (px < limit - 0.05) problems.small.push(`${el.tagName.toLowerCase()} ${px.toFixed(1)}px<${limit}: ` + n.textContent.trim().slice(0, 30));
  }
  const notes = (R.getSlideNotes(slide) || '').replace(/<[^>]*>/g, '').trim();
  return {...problems, notes: notes.length, where: `${R.getIndices().h}/${R.getIndices().v || 0}`};
  }"""
_MEASURE = """([BODY, CODE, stops]) => {
  const R = %s;
  return stops.map(([h, v]) => { R.slide(h, v); return one(); });%s
}""" % (REVEAL, _ONE)
_HERE = """([BODY, CODE]) => {
  const R = %s;
  return one();%s
}""" % (REVEAL, _ONE)

# The slide on screen, named as _ONE names it ("h/v"), so both walks count slides the same way.
_WHERE = "() => { const i = %s.getIndices(); return `${i.h}/${i.v || 0}`; }" % REVEAL

_DECK = """() => {
  const R = %s, cfg = R.getConfig();
  const stops = [];
  R.getHorizontalSlides().forEach((h, i) => {
    const v = h.querySelectorAll(':scope > section');
    if (!v.length) stops.push([i, 0]); else v.forEach((_, j) => stops.push([i, j]));
  });
  return {width: cfg.width, height: cfg.height, navigationMode: cfg.navigationMode || 'default',
          transition: cfg.transition, stops};
}""" % REVEAL


def open_deck(page, path: Path) -> dict:
    page.goto(path.as_uri())
    page.wait_for_function(f"() => {REVEAL}?.isReady()", timeout=30_000)
    deck = page.evaluate(_DECK)
    page.evaluate(f"() => {REVEAL}.configure({{transition: 'none', backgroundTransition: 'none'}})")
    return deck


def walk_keys(page, key: str, total: int, rows: dict | None = None) -> list[str]:
    """The slides ("h/v") shown while pressing ``key`` repeatedly (real key presses) from the first one:
    the first slide, then one entry per press. With ``rows`` (a dict), each slide is measured where the
    key press showed it, into ``rows[h/v]``."""
    page.evaluate(f"() => {REVEAL}.slide(0, 0)")
    shown = []
    for press in range(total + 1):
        if press:
            page.keyboard.press(key)
        if rows is None:
            shown.append(page.evaluate(_WHERE))
        else:
            row = page.evaluate(_HERE, [BODY_PX, CODE_PX])
            shown.append(row["where"])
            rows.setdefault(row["where"], row)
    return shown


def _kind(a: str, b: str) -> str:
    """The kind of one step of a walk, from slide a to slide b (both "h/v")."""
    (h, v), (h2, v2) = (tuple(map(int, x.split("/"))) for x in (a, b))
    if (h2, v2) == (h, v):
        return "stay"  # the last slide: nowhere to go
    if (h2, v2) == (h, v + 1):
        return "down"  # to the next sub-slide of a column
    if (h2, v2) == (h + 1, 0):
        return "out" if v else "on"  # to the next column, from a sub-slide or from a column's top
    return f"jump {a}->{b}"


def same_moves(page, key: str, walk: list[str], like: str = "ArrowRight") -> tuple[list[str], dict[str, str]]:
    """From the first slide of each kind of step ``walk`` took (see _kind), press ``like`` and then, from
    the same slide again, ``key``; return the kinds tried and where the two keys went apart
    ({from: "ArrowRight went to X, PageDown to Y"}).

    Why a few presses stand for a whole walk: a key's binding is the same on every slide, and where
    Reveal's next / right / down go depends only on where the deck is (which slide, and the sub-slide
    each column remembers for when it is entered again; these decks have no fragments). Pressed from the
    same place, the two keys meet the same state, so a key that moves like ``like`` at every kind of step
    repeats ``like``'s walk. In "linear" navigation ArrowRight and PageDown both call Reveal's next();
    this checks that they still do, in a few presses per deck instead of a second walk of every slide."""
    firsts: dict[str, str] = {}
    for a, b in zip(walk, walk[1:]):
        firsts.setdefault(_kind(a, b), a)
    differs = {}
    for a in firsts.values():
        went = []
        for k in (like, key):
            # Reveal resets the remembered sub-slides in a setTimeout(0) when it shows the first slide:
            # wait for that before the key, or the two keys would meet different states.
            page.evaluate(f"([h, v]) => new Promise(done => {{ {REVEAL}.slide(h, v); setTimeout(done, 0); }})",
                          list(map(int, a.split("/"))))
            page.keyboard.press(k)
            went.append(page.evaluate(_WHERE))
        if went[0] != went[1]:
            differs[a] = f"{like} went to {went[0]}, {key} to {went[1]}"
    return sorted(firsts), differs


def measure_deck(page, path: Path, shots: dict | None = None, shot_dir: Path | None = None, walk: bool = True) -> dict:
    """Every slide of one deck: counts and the first few problems of each kind. The ArrowRight walk
    measures each slide it reaches (one pass over the deck, not a measuring pass and a walk); a slide it
    does not reach is measured through Reveal's API, so the report still covers every slide. PageDown is
    then pressed once per kind of step the walk took (same_moves). ``walk=False``: no keys, every slide
    measured in one call (a deck whose keys are known to work as another's: a translation of it)."""
    deck = open_deck(page, path)
    total = len(deck["stops"])
    measured: dict = {}
    walked = walk
    if walked:
        walk = walk_keys(page, "ArrowRight", total, measured)
        page_down_kinds, page_down_differs = same_moves(page, "PageDown", walk)
    else:  # every slide measured through Reveal's API in one call: the fit only, not the keys
        walk, page_down_kinds, page_down_differs = [f"{h}/{v}" for h, v in deck["stops"]], [], {}
    rest = [s for s in deck["stops"] if f"{s[0]}/{s[1]}" not in measured]
    for row in page.evaluate(_MEASURE, [BODY_PX, CODE_PX, rest]) if rest else []:
        measured[row["where"]] = row
    rows = [measured[f"{h}/{v}"] for h, v in deck["stops"]]
    for where in sorted((shots or {}).get(path.name[:2], ())) if shot_dir else ():
        h, v = map(int, where.split("/"))
        page.evaluate(f"([h, v]) => {REVEAL}.slide(h, v)", [h, v])
        shot_dir.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot_dir / f"{path.name[:2]}_{h}_{v}.png"))
    return {
        "deck": path.name, "slides": total, "canvas": [deck["width"], deck["height"]],
        "navigationMode": deck["navigationMode"],
        "arrow_right_reaches": len(set(walk)) if walked else None,  # None: the keys were not walked
        "page_down_kinds": page_down_kinds,
        "page_down_differs": page_down_differs,
        "tall": [r["where"] for r in rows if r["tall"]],
        "clipped": [r["where"] for r in rows if r["clipped"]],
        "small": [r["where"] for r in rows if r["small"]],
        "no_notes": [r["where"] for r in rows if not r["notes"]],
        "detail": {r["where"]: {k: r[k] for k in ("tall", "clipped", "small") if r[k]} for r in rows
                   if r["tall"] or r["clipped"] or r["small"]},
    }


def measure(decks: list[Path], shots: dict | None = None, shot_dir: Path | None = None, page=None) -> list[dict]:
    """Every deck in ``decks``, in ``page`` when given (a test's watched page: ``SCREEN`` sized), else in a
    Chromium of its own."""
    if page is not None:
        return [measure_deck(page, d, shots, shot_dir) for d in decks]
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM),
                                     args=["--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            page = browser.new_page(viewport=SCREEN)
            return [measure_deck(page, d, shots, shot_dir) for d in decks]
        finally:
            browser.close()


def table(results: list[dict]) -> str:
    lines = [f"{'deck':<6}{'slides':>7}{'tall':>6}{'clipped':>9}{'small':>7}{'no notes':>10}{'->':>5}{'PgDn≠':>6}  canvas"]
    sums = [0] * 7
    for r in results:
        vals = [r["slides"], len(r["tall"]), len(r["clipped"]), len(r["small"]), len(r["no_notes"]),
                r["arrow_right_reaches"], len(r["page_down_differs"])]
        sums = [a + (b or 0) for a, b in zip(sums, vals)]
        name = r["deck"][:5] if r["deck"].startswith("zh/") else r["deck"][:2]
        lines.append(f"{name:<6}" + "".join(f"{'-' if v is None else v:>{w}}" for v, w in zip(vals, (7, 6, 9, 7, 10, 5, 6)))
                     + f"  {r['canvas'][0]}x{r['canvas'][1]}")
    lines.append(f"{'all':<6}" + "".join(f"{v:>{w}}" for v, w in zip(sums, (7, 6, 9, 7, 10, 5, 6))))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=REPO / "build" / "slides")
    parser.add_argument("--shots", type=Path, help="folder for screenshots")
    parser.add_argument("--shot", action="append", default=[], help="NN:h/v, a slide to photograph")
    parser.add_argument("--json", type=Path, help="write the full results here")
    parser.add_argument("--detail", action="store_true", help="print the problems of each slide")
    args = parser.parse_args(argv)
    shots: dict[str, set] = {}
    for s in args.shot:
        nn, where = s.split(":")
        shots.setdefault(nn, set()).add(where)
    results = measure(sorted(args.folder.resolve().glob("*.slides.html")), shots, args.shots)
    print(table(results))
    if args.detail:
        for r in results:
            for where, d in r["detail"].items():
                print(r["deck"][:2], where, json.dumps(d)[:300])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
