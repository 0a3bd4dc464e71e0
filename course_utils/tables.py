"""Results that are tables, displayed as tables: in JupyterLab, on the site and on the slides.

Why not ``print`` a fixed-width table: on a projector the slide wraps long lines into unreadable
ones, and a proportional font breaks the columns. A :class:`Table` shows as an HTML ``<table>``
where a frontend renders HTML (JupyterLab, nbconvert's site and slides), and as aligned plain text
everywhere else (``print(table)``, a terminal, the text nbval compares). Both renderings come from
the same cells, so nbval still compares every value.

    show_table(["card", "memory (GiB)"], [["T4", 15.0], ["A100 80GB", 80.0]], title="Will it fit?")
"""
from __future__ import annotations

import html
import math
from numbers import Number
from typing import Sequence


def cell_text(value: object) -> str:
    """One cell as text: ints with thousands separators, floats to 4 significant digits, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == 0 or 1e-3 <= abs(value) < 1e6:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


class Table:
    """A header, rows and an optional title; ``str()`` is aligned text, ``_repr_html_`` an HTML table.

    Columns whose cells are all numbers (or '-') are right-aligned in both renderings.
    """

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
                 note: str | None = None, fold: str | None = None) -> None:
        widths = {len(r) for r in rows}
        if widths - {len(header)}:
            raise ValueError(f"every row needs {len(header)} cells (one per header), got rows of {sorted(widths)}")
        self.header = [str(h) for h in header]
        self.values = [list(r) for r in rows]
        self.rows = [[cell_text(v) for v in r] for r in rows]
        self.title = title
        self.note = note
        self.fold = fold  # when set, the HTML table is folded under this line (<details>): one click opens it
        self.numeric = [all(isinstance(r[i], Number) or r[i] is None for r in self.values) and bool(self.values)
                        for i in range(len(self.header))]

    def __str__(self) -> str:
        table = [self.header, *self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(self.header))]

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if num else c.ljust(w)
                             for c, w, num in zip(cells, widths, self.numeric)).rstrip()

        lines = [line(self.header), "  ".join("-" * w for w in widths), *(line(r) for r in self.rows)]
        if self.title:
            lines.insert(0, self.title)
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def __repr__(self) -> str:  # the text/plain of a bare Table at the end of a cell
        return str(self)

    def _repr_html_(self) -> str:
        def cells(tag: str, row: list[str]) -> str:
            return "".join(f'<{tag} style="text-align:{"right" if num else "left"}">{html.escape(c)}</{tag}>'
                           for c, num in zip(row, self.numeric))

        body = "".join(f"<tr>{cells('td', r)}</tr>" for r in self.rows)
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        note = f"<p>{html.escape(self.note).replace(chr(10), '<br>')}</p>" if self.note else ""
        table = (f'<table class="course-table">{caption}<thead><tr>{cells("th", self.header)}</tr></thead>'
                 f"<tbody>{body}</tbody></table>{note}")
        return f"<details><summary>{html.escape(self.fold)}</summary>{table}</details>" if self.fold else table


def show_table(header: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
               note: str | None = None) -> None:
    """Display a :class:`Table` now (in a kernel) or print it (plain Python).

    Returns nothing: a cell that ends with ``show_table(...)`` must not show the table a second time
    as its result (build a ``Table`` yourself to keep one)."""
    table = Table(header, rows, title, note)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(table)
        return
    if get_ipython() is None:
        print(table)
    else:
        display(table)
