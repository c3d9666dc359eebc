"""The tape as users see it: ``mg.autograd.tape(t)``, a list of Nodes that prints as a table, and
the views of a Node it reads (``inputs``, ``output_shape``, ``saved_bytes``...), bound onto
``engine.Node`` here: the engine records only what backward needs."""
from __future__ import annotations

from .backward import _collect as collect
from .engine import Node
from .tensor import Tensor

__all__ = ["Tape", "tape", "fmt_bytes", "TextTable"]


class TextTable(str):
    """A text table (a ``str``, printed as it is) that a notebook shows as an HTML table."""

    def __new__(cls, text: str, rows):
        self = super().__new__(cls, text)
        self.rows = rows  # header first, then the body rows: tuples of cells
        return self

    def _repr_html_(self) -> str:
        return html_table(self.rows)


def html_table(rows) -> str:
    """An HTML table of ``rows`` (the first is the header), every cell escaped."""
    from html import escape

    head = "".join(f"<th>{escape(str(c))}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Tape(list):
    """The Nodes that produced a tensor, in the order they ran; prints as a table:
    index, op, input shapes -> output shape, dtype, bytes saved for backward ("freed"
    once a backward released them), and the op's attributes (axis, keepdims...)."""

    def _rows(self) -> tuple[list, int]:
        rows = [("#", "op", "inputs -> output", "dtype", "saved", "attrs")]
        total = 0
        for i, n in enumerate(self):
            ins = ", ".join("const" if m is None else str(tuple(m[0])) for m in n.meta)
            total += n.saved_bytes
            saved = "freed" if n.freed else fmt_bytes(n.saved_bytes)
            rows.append((str(i), n.op, f"{ins} -> {tuple(n.out_meta[0])}", str(n.out_meta[1]), saved,
                         _fmt_info(n.info)))
        return rows, total

    def __str__(self):
        rows, total = self._rows()
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        lines = []
        for j, r in enumerate(rows):
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths).rstrip())
        lines.append(f"{len(self)} ops, {fmt_bytes(total)} saved for backward")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows, total = self._rows()
        return html_table(rows) + f"<p>{len(self)} ops, {fmt_bytes(total)} saved for backward</p>"


def _fmt_info(info) -> str:
    """An op's display attributes as 'axis=(1,) keepdims=False'."""
    if not info:
        return ""
    return " ".join(f"{k}={v}" for k, v in info.items())


def fmt_bytes(b: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return str(b)


class _NodeViews:
    """What readers see of a Node (``Node`` gets these properties below)."""

    @property
    def inputs(self):
        """Shapes/dtypes of the inputs as (shape, dtype) pairs, None for constants."""
        return self.meta

    @property
    def output_shape(self):
        return self.out_meta[0]

    @property
    def output_dtype(self):
        return self.out_meta[1]

    @property
    def needs_input_grad(self):
        return tuple(p is not None for p in self.parents)

    @property
    def saved_bytes(self) -> int:
        """The bytes backward keeps for this op: saved inputs, the output, aux arrays."""
        n = sum(getattr(s.data if isinstance(s, Tensor) else s, "nbytes", 0) for s in self.saved)
        n += getattr(self._out, "nbytes", 0)
        aux = self.aux
        if aux is not None:
            n += sum(getattr(a, "nbytes", 0) for a in (aux if isinstance(aux, (tuple, list)) else (aux,))
                     if a is not None)
        return int(n)


for _name in ("inputs", "output_shape", "output_dtype", "needs_input_grad", "saved_bytes"):
    setattr(Node, _name, getattr(_NodeViews, _name))


def tape(t) -> Tape:
    """The recorded operations that produced ``t``, in the order they ran.

    Each entry is a Node with ``.op``, ``.inputs`` ((shape, dtype) per input, None
    for constants), ``.output_shape``, ``.output_dtype``; ``print()`` gives a table.

    >>> print(mg.autograd.tape((x * 2).sum()))
    """
    if not hasattr(t, "_node") and hasattr(t, "_values"):  # a sparse tensor: its history is its values'
        t = t._values
    node = t._node if hasattr(t, "_node") else t
    if node is None:
        return Tape()
    return Tape(reversed(collect([node])))
