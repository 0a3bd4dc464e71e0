"""course_utils.tables: one table, two renderings with the same values."""
from __future__ import annotations

import pytest

from course_utils.tables import Table, cell_text, show_table


def test_text_is_aligned_and_numbers_right_aligned():
    t = Table(["card", "GiB"], [["T4", 15.0], ["A100 80GB", 80.0]], title="Will it fit?", note="binary units")
    lines = str(t).splitlines()
    assert lines[0] == "Will it fit?" and lines[-1] == "binary units"
    assert lines[1].startswith("card") and lines[1].endswith("GiB")
    assert lines[3] == "T4          15" and lines[4] == "A100 80GB   80"


def test_html_has_every_value_escaped_and_aligned():
    h = Table(["a<b", "n"], [["x&y", 1_234_567], ["z", None]])._repr_html_()
    assert "a&lt;b" in h and "x&amp;y" in h and "1,234,567" in h and ">-<" in h
    assert h.count("<tr>") == 3 and 'style="text-align:right">n<' in h


def test_bad_rows_are_named():
    with pytest.raises(ValueError, match="every row needs 2 cells"):
        Table(["a", "b"], [["only one"]])


@pytest.mark.parametrize("value, text", [(None, "-"), (True, "yes"), (3, "3"), (12345, "12,345"), (0.1234567, "0.1235"),
                                          (1.5e-5, "1.500e-05"), (float("nan"), "-"), ("s", "s")])
def test_cell_text(value, text):
    assert cell_text(value) == text


def test_show_table_prints_outside_a_kernel(capsys):
    assert show_table(["k"], [[1]]) is None  # a cell ending in show_table(...) shows the table once
    assert capsys.readouterr().out.strip() == str(Table(["k"], [[1]]))


def test_a_folded_table_opens_with_a_click_and_prints_whole():
    t = Table(["a", "b"], [[1, 2]], fold="two numbers (click to open)")
    html = t._repr_html_()
    assert html.startswith("<details><summary>two numbers (click to open)</summary><table") and html.endswith("</details>")
    assert "details" not in str(t) and "1  2" in str(t)
