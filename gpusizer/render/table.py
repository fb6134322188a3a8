"""The one table renderer: columns padded for a terminal, or a markdown table, with one escaping rule.

Every command that prints rows (plan, estimate, catalog list, tco, observe, diff) renders them here,
so a cell holding `|` or a line break never breaks a markdown table in a pull-request comment.

>>> print("\\n".join(text(("GPU", "count", "note"), [("L4", "1", "fits"), ("H100", "8", "")])))
GPU   count  note
L4    1      fits
H100  8
>>> print("\\n".join(markdown(("a", "b"), [("x|y", "two\\nlines")])))
| a | b |
|---|---|
| x\\|y | two lines |
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Row = Sequence[object]


def escape(cell: object) -> str:
    """A cell as markdown table text: `|` escaped, line breaks folded into spaces."""
    return " ".join(str(cell).replace("|", "\\|").splitlines())


def markdown(head: Row, rows: Iterable[Row]) -> list[str]:
    """A markdown table: the header, its rule, then one line per row."""

    def line(r: Row) -> str:
        return "|" + "|".join(f" {escape(c)} " if str(c) else " " for c in r) + "|"

    return [line(head), "|" + "---|" * len(head)] + [line(r) for r in rows]


def text(head: Row, rows: Iterable[Row], right: Sequence[int] = (), gap: int = 2) -> list[str]:
    """Columns padded to their widest cell, two spaces apart; the last column is not padded.

    Args:
        right: indexes of columns aligned right (numbers).
    """
    body = [tuple(str(c) for c in r) for r in rows]
    cols = [tuple(str(c) for c in head), *body]
    widths = [max(len(r[i]) for r in cols) for i in range(len(head))]

    def line(r: tuple[str, ...]) -> str:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        cells[-1] = r[-1].rjust(widths[-1]) if len(r) - 1 in right else r[-1]
        return (" " * gap).join(cells).rstrip()

    return [line(r) for r in cols]


def render(head: Row, rows: Iterable[Row], as_markdown: bool, right: Sequence[int] = ()) -> list[str]:
    """`markdown(head, rows)` or `text(head, rows, right)`."""
    return markdown(head, rows) if as_markdown else text(head, rows, right)
