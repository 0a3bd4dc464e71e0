"""The course as a static site that works from ``file://`` with no network: ``build/site/index.html``.

    python tools/site.py            # after `python tools/slides.py` (make site runs both)

Layout (every link relative, every script and stylesheet a local file):

    build/site/index.html                  the lesson table (as in README.md) + reference figures
    build/site/machines.html               every results card side by side
    build/site/lessons/NN_*.html           each lesson with its stored outputs; saved widget state renders
    build/site/solutions/NN_*.html         the generated solutions notebooks (no outputs: run them to see)
    build/site/slides/                     a copy of build/slides/ (slides + assets/, shared by all pages)
    build/site/instructor.html             every deck's plan and speaker notes, slide by slide, with minutes
                                           (from notebooks/decks/, tools/deck.py)
    build/site/zh/                         the Chinese edition: index.html (from README.zh.md), lessons/ (from
                                           notebooks/zh/), instructor.html (notebooks/zh/decks/); its slides
                                           are slides/zh/; deeper notebooks and solutions stay English

Every page carries a language switch: to the same page in the other language where there is one (the
index, each lesson, the instructor notes, each deck), else to the other language's index.

The lesson pages use tools/templates/offline_lab (nbconvert's lab template without MathJax or the
mermaid CDN import); require.js and the widgets HTML manager come from ``slides/assets/``.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slides  # noqa: E402  (tools/slides.py: lessons, exporters, assets)

REPO = slides.REPO
SOLUTIONS = REPO / "solutions"
DEEPER = REPO / "notebooks" / "deeper"
GLOSSARY = REPO / "notebooks" / "glossary.md"
RESULTS = REPO / "results"
DEFAULT_OUT = REPO / "build" / "site"
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .6rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { background: #f3f3f3; padding: 0 .2em; }
details { margin: .5rem 0; }
table.course-table caption { text-align: left; font-weight: 600; }
.notes { border-left: 4px solid #c9d7ee; padding: 0 1rem; margin: .5rem 0 1.5rem; }
table.lessons td:nth-child(n+4), table.lessons th:nth-child(n+4) { white-space: nowrap; }
"""


def inline_markdown(text: str) -> str:
    """The little markdown the README's lesson table uses: `code` and [text](url)."""
    out, parts = [], re.split(r"(`[^`]*`)", text)
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            esc = html.escape(part, quote=False)
            out.append(re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', esc))
    return "".join(out)


def readme_table(readme: str = "README.md") -> dict[str, tuple[str, str]]:
    """``{"00": (title, what it teaches)}`` from README.md's lesson table (README.zh.md's for Chinese)."""
    rows = {}
    for line in (REPO / readme).read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*(\d\d)\s*\|\s*\[(.+?)\]\(notebooks/[^)]+\)\s*\|\s*([^|]*?)\s*\|(?:.*\|)?\s*$", line)
        if m:
            rows[m[1]] = (m[2], m[3])
    return rows


def lesson_title(path: Path) -> str:
    """The lesson's own title, from its first ``# NN · Title`` line."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = "".join(nb["cells"][0]["source"]).splitlines()[0] if nb["cells"] else path.stem
    return re.sub(r"^#\s*\d\d\s*[·.:-]?\s*", "", first).strip() or path.stem


def _fmt(v) -> str:
    if not isinstance(v, (int, float)):
        return html.escape(str(v))
    return f"{v:.4g}" if v == 0 or 1e-3 <= abs(v) < 1e6 else f"{v:.3e}"


def reference_tables() -> str:
    """Every results/*.json as HTML: the machine, then one table per lesson (a column per file)."""
    files = sorted(RESULTS.glob("*.json"))
    if not files:
        return "<p>No reference files in <code>results/</code>.</p>"
    refs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files}
    parts = ["<table><tr><th>file</th><th>created</th><th>torch</th><th>CPU</th><th>GPUs</th><th>command</th></tr>"]
    for name, data in refs.items():
        env = data.get("environment", {})
        gpus = ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in env.get("gpus", [])) or "none"
        parts.append(f"<tr><td><code>results/{name}.json</code></td><td>{html.escape(str(data.get('created', '')))}</td>"
                     f"<td>{html.escape(str(env.get('torch', '')))}</td>"
                     f"<td>{html.escape(str(env.get('cpu_model', '')))} ({env.get('cpu_count', '?')} cores)</td>"
                     f"<td>{html.escape(gpus)}</td><td><code>{html.escape(str(data.get('command', '')))}</code></td></tr>")
    parts.append("</table>")
    notebooks = sorted({nb for data in refs.values() for nb in data.get("notebooks", {})})
    for nb in notebooks:
        keys = sorted({k for data in refs.values() for k in data["notebooks"].get(nb, {}).get("results", {})})
        head = "".join(f"<th>{html.escape(n)}</th>" for n in refs)
        parts.append(f'<details id="ref-{nb[:2]}"><summary>{html.escape(nb)} ({len(keys)} figures)</summary>'
                     f"<table><tr><th>result</th><th>unit</th>{head}<th>note</th></tr>")
        for key in keys:
            cells, unit, note = [], "", ""
            for data in refs.values():
                r = data["notebooks"].get(nb, {}).get("results", {}).get(key)
                cells.append(f'<td class="num">{_fmt(r["value"]) if r else "-"}</td>')
                unit, note = (r.get("unit", unit), r.get("note") or note) if r else (unit, note)
            parts.append(f"<tr><td><code>{html.escape(key)}</code></td><td>{html.escape(unit)}</td>{''.join(cells)}"
                         f"<td>{html.escape(note)}</td></tr>")
        parts.append("</table></details>")
    return "\n".join(parts)


def machines_html(switch: bool = True) -> str:
    """The "machines" page: every results card side by side, one column per card (its machine first,
    then every figure, lesson by lesson); a card that fails the schema is listed with its problem."""
    sys.path.insert(0, str(REPO))
    from course_utils.cards import read_card

    cards, broken = {}, []
    for path in sorted(RESULTS.glob("*.json")):
        card, found = read_card(path)
        if card is None:
            broken.append(f"<li><code>results/{html.escape(path.name)}</code>: {html.escape(found[0])}</li>")
        else:
            cards[path.stem] = card

    def gpu(card: dict, field: str) -> str:
        return ", ".join(str(g.get(field, "")) for g in card["environment"]["gpus"]) or "-"

    machine = {"device": lambda c: c["device"], "GPUs": lambda c: gpu(c, "name"),
               "compute capability": lambda c: gpu(c, "compute_capability"),
               "GPU memory (GiB)": lambda c: gpu(c, "memory_gib"),
               "NVIDIA driver": lambda c: c["environment"]["nvidia_driver"] or "-",
               "torch": lambda c: c["environment"]["torch"], "CUDA (torch build)": lambda c: c["environment"]["cuda_build"] or "-",
               "CPU": lambda c: f'{c["environment"]["cpu_model"]} ({c["environment"]["cpu_count"]} cores)',
               "Python": lambda c: c["environment"]["python"], "date": lambda c: c["created"][:10],
               "command": lambda c: c["command"]}
    head = "".join(f"<th>{html.escape(n)}</th>" for n in cards)
    rows = [f"<tr><th>{html.escape(label)}</th><th></th>{''.join(f'<td>{html.escape(str(get(c)))}</td>' for c in cards.values())}</tr>"
            for label, get in machine.items()]
    for nb in sorted({nb for c in cards.values() for nb in c["notebooks"]}):
        rows.append(f'<tr><th colspan="{2 + len(cards)}" id="{html.escape(nb)}">{html.escape(nb)}</th></tr>')
        for key in sorted({k for c in cards.values() for k in c["notebooks"].get(nb, {}).get("results", {})}):
            found = [c["notebooks"].get(nb, {}).get("results", {}).get(key) for c in cards.values()]
            unit = next((r.get("unit", "") for r in found if r), "")
            cells = "".join(f'<td class="num">{_fmt(r["value"]) if r else "-"}</td>' for r in found)
            rows.append(f"<tr><td><code>{html.escape(key)}</code></td><td>{html.escape(unit)}</td>{cells}</tr>")
    skipped = f"<p>Skipped (not a valid results card):</p><ul>{''.join(broken)}</ul>" if broken else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Machines: every results card</title>
<style>{STYLE}</style></head><body>
{slides.switch("zh/index.html", False) if switch else ""}
<p><a href="index.html">the course</a></p>
<h1>Machines</h1>
<p>Every results card in <code>results/</code> side by side: what each machine is, then every figure it
measured, lesson by lesson (a dash: not measured there). How to add your machine:
<code>docs/contributing-results.md</code>.</p>
<table><tr><th></th><th>unit</th>{head}</tr>
{chr(10).join(rows)}
</table>
{skipped}
</body></html>
"""


def lesson_rows(lessons: list[Path], zh: bool = False) -> list[dict]:
    """One row of the index per lesson: title and summary from README.md's table (README.zh.md's for
    the Chinese index, ``zh/index.html``), links relative to the index."""
    table, rows = readme_table("README.zh.md" if zh else "README.md"), []
    up, slides_dir = ("../", "../slides/zh") if zh else ("", "slides")
    for path in lessons:
        nn, has_solution = path.name[:2], (SOLUTIONS / path.name).exists()
        title, what = table.get(nn, (lesson_title(path), ""))
        rows.append({"nn": nn, "title": title, "what": inline_markdown(re.sub(r"\]\(notebooks/", "](", what)),
                     "lesson": f"lessons/{path.stem}.html", "slides": f"{slides_dir}/{path.stem}.slides.html",
                     "deeper": f"{up}deeper/{path.stem}.html" if (DEEPER / path.name).exists() else "",
                     "solutions": f"{up}solutions/{path.stem}.html" if has_solution else ""})
    return rows


def lesson_table(rows: list[dict], heads: tuple[str, ...], words: tuple[str, str, str]) -> list[str]:
    """The index's lesson table, its column heads and link words in the page's language."""
    body = ['<table class="lessons"><tr>' + "".join(f"<th>{h}</th>" for h in heads) + "</tr>"]
    for r in rows:
        deeper = f'<a href="{r["deeper"]}">{words[0]}</a>' if r["deeper"] else "-"
        sol = f'<a href="{r["solutions"]}">{words[2]}</a>' if r["solutions"] else "-"
        body.append(f'<tr><td>{r["nn"]}</td><td><a href="{r["lesson"]}">{inline_markdown(r["title"])}</a></td>'
                    f'<td>{r["what"]}</td><td>{deeper}</td><td><a href="{r["slides"]}">{words[1]}</a></td><td>{sol}</td></tr>')
    return body + ["</table>"]


def zh_index_html(rows: list[dict]) -> str:
    """The Chinese index (``zh/index.html``): the lesson table of README.zh.md with links."""
    body = lesson_table(rows, ("#", "课程", "内容", "深入篇（英文）", "幻灯片", "答案（英文）"), ("深入篇", "幻灯片", "答案"))
    return f"""<!DOCTYPE html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>在 GPU 上训练 PyTorch 模型</title>
<style>{STYLE}</style></head><body>
{slides.switch("../index.html", True)}
<h1>在 GPU 上训练 PyTorch 模型——以及为什么 GPU 有时比 CPU 还慢</h1>
<p>每一课都是一个网页，附有课程在参考 CPU 上运行的输出（交互控件显示保存下来的状态；要拖动滑块，请在
JupyterLab 中打开笔记本运行），也有幻灯片（按 <kbd>s</kbd> 打开讲稿）。深入篇和习题答案只有英文版。本站所有页面都可离线使用。
要讲这门课？<a href="instructor.html">讲师笔记</a>给出每套幻灯片的时间安排，以及每张幻灯片的讲稿和时长。</p>
<h2>课程</h2>
{chr(10).join(body)}
<p><a href="../glossary.html">术语表</a>（英文 / 中文）：课程用到的每个术语，以及写对的训练循环。
<a href="../machines.html">机器</a>：所有结果卡并排对比。参考数字见<a href="../index.html#reference-figures">英文首页</a>。</p>
<p><small>由 <code>tools/site.py</code> 于 {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())} 生成。</small></p>
</body></html>
"""


def index_html(rows: list[dict], switch: bool = True) -> str:
    """The index page: lesson table with links, then the reference figures."""
    body = lesson_table(rows, ("#", "lesson", "what it teaches", "deeper", "slides", "solutions"), ("deeper", "slides", "solutions"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Training PyTorch models on GPUs</title>
<style>{STYLE}</style></head><body>
{slides.switch("zh/index.html", False) if switch else ""}
<h1>Training PyTorch models on GPUs — and why it is sometimes slower than the CPU</h1>
<p>Each lesson as a page with the outputs of the course's reference CPU run (widgets show their saved
state; moving a slider needs a running kernel: open the notebook in JupyterLab), as slides (press
<kbd>s</kbd> for speaker notes), and its worked solutions. Every page here works offline.
Teaching it? The <a href="instructor.html">instructor notes</a> give each deck's plan, and every slide's notes and minutes.</p>
<h2>The lessons</h2>
{chr(10).join(body)}
<p><a href="glossary.html">Glossary</a> (English / 中文): every term the lessons use, and the training loop done right.
<a href="machines.html">Machines</a>: every results card side by side.</p>
<h2 id="reference-figures">Reference figures</h2>
<p>The figures the lessons compare against, from <code>results/*.json</code>; a GPU reference appears
here only once its file exists.</p>
{reference_tables()}
<p><small>Built {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())} by <code>tools/site.py</code>.</small></p>
</body></html>
"""


def instructor_html(lessons: list[Path], zh: bool = False, switch: bool = True) -> str:
    """The instructor's page: per lesson, its deck's plan (minutes per slide group), then every slide's
    title, minutes and notes (Say / Ask the room / Demo), as the speaker view shows them."""
    import nbformat
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    parts = []
    for path in lessons:
        nb, spec = nbformat.read(path, as_version=4), slides.decks.load(path)
        slides_href = f"../slides/zh/{path.stem}.slides.html" if zh else f"slides/{path.stem}.slides.html"
        parts.append(f'<h2 id="l{path.name[:2]}">{html.escape(lesson_title(path))} '
                     f'<small>(<a href="{slides_href}">{"幻灯片" if zh else "slides"}</a>, '
                     f'<a href="lessons/{path.stem}.html">{"课程" if zh else "lesson"}</a>)</small></h2>')
        if not spec:
            parts.append("<p>No deck yet.</p>")
            continue
        parts.append(f'<div class="notes">{markdown2html_mistune(slides.decks.lesson_plan(nb, spec))}</div>')
        for n, slide in enumerate(spec["slides"], 1):
            parts.append(f"<h3>{n}. {html.escape(str(slide['title']))} <small>({slide['minutes']:g} min)</small></h3>"
                         f'<div class="notes">{markdown2html_mistune(slides.decks.notes_markdown(str(slide["notes"])))}</div>')
    toc = " · ".join(f'<a href="#l{p.name[:2]}">{p.name[:2]}</a>' for p in lessons)
    if zh:
        return f"""<!DOCTYPE html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>讲师笔记：在 GPU 上训练 PyTorch 模型</title>
<style>{STYLE}</style></head><body>
{slides.switch("../instructor.html", True)}
<h1>讲师笔记</h1>
<p>每一课的幻灯片都是一次讲课：先是时间安排（每组幻灯片的分钟数），再是每张幻灯片要讲什么、问什么、演示什么。
同样的讲稿也在幻灯片的讲者视图里（按 <kbd>s</kbd>）。学生在课程中看到的是折叠起来的“自我检查”问题。
<a href="index.html">回到课程列表</a>。课程：{toc}</p>
{chr(10).join(parts)}
</body></html>
"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Instructor notes: Training PyTorch models on GPUs</title>
<style>{STYLE}</style></head><body>
{slides.switch("zh/instructor.html", False) if switch else ""}
<h1>Instructor notes</h1>
<p>Each lesson's deck as a talk: its plan (minutes per group of slides), then every slide with what to say,
what to ask the room and what to demo. The same notes are in the slides' speaker view (press <kbd>s</kbd>).
Students see the questions in the lessons as folded "Check yourself" cells.
<a href="index.html">Back to the lessons</a>. Lessons: {toc}</p>
{chr(10).join(parts)}
</body></html>
"""


def glossary_html(source: Path = GLOSSARY, title: str = "Glossary", switch: bool = True) -> str:
    """A markdown page as a page of the site's root (anchors kept: lessons link glossary.md#term):
    notebooks/glossary.md, and docs/sources.md, which the lessons link for the posts they check."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    body = markdown2html_mistune(source.read_text(encoding="utf-8"))
    body = re.sub(r'href="(\d\d_[A-Za-z0-9_]+)\.ipynb', r'href="lessons/\1.html', body)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}: Training PyTorch models on GPUs</title>
<style>{STYLE}</style></head><body>
{slides.switch("zh/index.html", False) if switch else ""}
<p><a href="index.html">Back to the lessons</a> · <a href="zh/index.html">回到中文课程列表</a></p>
{body}
</body></html>
"""


def relink(page: Path, depth: int = 1, lessons: str = "lessons") -> None:
    """Links between notebooks (``NN_x.ipynb``, ``../notebooks/NN_x.ipynb``, ``deeper/NN_x.ipynb``,
    ``../solutions/NN_x.ipynb``, ``glossary.md``) point at their pages here. ``depth``: how many folders
    below the site's root the page is (``lessons/x.html``: 1, ``solutions/deeper/x.html``: 2);
    ``lessons``: where a link to a lesson leads (``zh/lessons`` from a Chinese lesson)."""
    up = "../" * depth
    nn = r"(\d\d_[A-Za-z0-9_]+)\.ipynb"
    text = page.read_text(encoding="utf-8")
    text = re.sub(rf'href="(?:\.\./)*solutions/deeper/{nn}', rf'href="{up}solutions/deeper/\1.html', text)
    text = re.sub(rf'href="(?:\.\./)*solutions/{nn}', rf'href="{up}solutions/\1.html', text)
    text = re.sub(rf'href="(?:\.\./)*(?:notebooks/)?deeper/{nn}', rf'href="{up}deeper/\1.html', text)
    text = re.sub(rf'href="(?:\.\./)*(?:notebooks/)?{nn}', rf'href="{up}{lessons}/\1.html', text)
    text = re.sub(r'href="(?:\.\./)*(?:notebooks/)?glossary\.md', f'href="{up}glossary.html', text)
    text = re.sub(r'href="(?:\.\./)*docs/sources\.md', f'href="{up}sources.html', text)
    page.write_text(text, encoding="utf-8")


def build(out: Path = DEFAULT_OUT, slides_dir: Path = slides.DEFAULT_OUT, selected: list[str] | None = None) -> Path:
    """Write the site into ``out`` (replacing it); the slides must be built already."""
    every = slides.lessons(selected)
    lessons = [p for p in every if p.parent.name != "zh"]
    chinese = [p for p in every if p.parent.name == "zh"]
    missing = [slides.name(p) for p in every if not (slides_dir / f"{slides.name(p)}.slides.html").exists()]
    if missing or not (slides_dir / "assets").is_dir():
        raise SystemExit(f"slides missing in {slides_dir} ({', '.join(missing) or 'assets/'}): run `make slides` first")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(slides_dir, out / "slides")
    switch = bool(chinese)  # each page links its other language only when the Chinese pages are built
    has_zh = {p.name for p in chinese}
    for path in lessons:
        page = slides.export(path, out / "lessons" / f"{path.stem}.html", "html", "../slides/assets")
        relink(page)
        if switch:
            slides.add_switch(page, f"../zh/lessons/{path.stem}.html" if path.name in has_zh else "../zh/index.html", False)
        solution = SOLUTIONS / path.name
        if solution.exists():
            page = slides.export(solution, out / "solutions" / f"{path.stem}.html", "html", "../slides/assets")
            relink(page)
            if switch:
                slides.add_switch(page, "../zh/index.html", False)
        deeper = DEEPER / path.name
        if deeper.exists():
            page = slides.export(deeper, out / "deeper" / f"{path.stem}.html", "html", "../slides/assets")
            relink(page)
            if switch:
                slides.add_switch(page, "../zh/index.html", False)
            deeper_solution = SOLUTIONS / "deeper" / path.name
            if deeper_solution.exists():
                page = slides.export(deeper_solution, out / "solutions" / "deeper" / f"{path.stem}.html", "html",
                                     "../../slides/assets")
                relink(page, depth=2)
                if switch:
                    slides.add_switch(page, "../../zh/index.html", False)
        print(f"{path.name[:2]}: lesson, {'deeper, ' if deeper.exists() else ''}{'solutions, ' if solution.exists() else ''}slides")
    for path in chinese:
        page = slides.export(path, out / "zh" / "lessons" / f"{path.stem}.html", "html", "../../slides/assets")
        relink(page, depth=2, lessons="zh/lessons")
        slides.add_switch(page, f"../../lessons/{path.stem}.html", True)
        print(f"zh/{path.name[:2]}: lesson, slides")
    glossary = out / "glossary.html"
    glossary.write_text(glossary_html(switch=switch), encoding="utf-8")
    (out / "sources.html").write_text(glossary_html(REPO / "docs" / "sources.md", "Sources", switch), encoding="utf-8")
    (out / "instructor.html").write_text(instructor_html(lessons, switch=switch), encoding="utf-8")
    index = out / "index.html"
    index.write_text(index_html(lesson_rows(lessons), switch), encoding="utf-8")
    if chinese:
        (out / "zh" / "index.html").write_text(zh_index_html(lesson_rows(chinese, zh=True)), encoding="utf-8")
        (out / "zh" / "instructor.html").write_text(instructor_html(chinese, zh=True), encoding="utf-8")
    (out / "machines.html").write_text(machines_html(switch), encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*", help="lesson numbers (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--slides", type=Path, default=slides.DEFAULT_OUT, help="the built slides (default build/slides)")
    args = parser.parse_args(argv)
    index = build(args.out.resolve(), args.slides.resolve(), args.numbers)
    print(f"{index} (open it as file://{index})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
