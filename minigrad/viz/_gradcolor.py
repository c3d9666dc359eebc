"""color_by="grad": tensor nodes filled by gradient norm on a log scale, and the legend that reads it."""
from __future__ import annotations

import math

from . import _style as S
from ._labels import fmt_norm


def grad_styles(norms: dict, styles: dict) -> tuple[dict, str | None]:
    """(node id -> new style, the legend's DOT line or None) for ``norms`` (node id -> norm).

    ``styles`` holds each node's usual style; only fill (and the text's colour) change.
    A zero gradient is drawn white and dashed, a non-finite one black.
    """
    finite = [x for x in norms.values() if math.isfinite(x) and x > 0]
    lo, hi = (min(finite), max(finite)) if finite else (None, None)
    out = {}
    for nid, x in norms.items():
        if x == 0:
            out[nid] = S.restyle(styles[nid], S.ZERO_GRAD)
        elif not math.isfinite(x):
            out[nid] = S.restyle(styles[nid], S.BAD_GRAD)
        else:
            b = _bin(x, lo, hi)
            change = {"fillcolor": f'"{S.GRAD_PALETTE[b]}"'}
            if b >= S.GRAD_DARK:
                change["fontcolor"] = '"#ffffff"'
            out[nid] = S.restyle(styles[nid], change)
    if not norms:
        return out, None
    n_zero = sum(1 for x in norms.values() if x == 0)
    n_bad = sum(1 for x in norms.values() if not math.isfinite(x))
    return out, legend(lo, hi, n_zero, n_bad)


def _bin(x: float, lo: float, hi: float) -> int:
    n = len(S.GRAD_PALETTE)
    if hi <= lo:
        return n - 1
    b = int((math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo)) * n)
    return min(max(b, 0), n - 1)


def _edges(lo: float, hi: float) -> list[str]:
    """The lower norm of each palette bin, with as few digits as tell them apart."""
    n = len(S.GRAD_PALETTE)
    edges = [lo * (hi / lo) ** (b / n) for b in range(n)]
    for digits in (2, 3, 4):
        text = [f"{x:.{digits}g}" for x in edges]
        if len(set(text)) == n:
            break
    return text


def legend(lo, hi, n_zero: int, n_bad: int) -> str:
    """The legend node (an HTML-like table): the palette with its norms, and counts of zero / bad."""
    n = len(S.GRAD_PALETTE)
    rows = []
    if lo is not None:
        rows.append(f'<tr><td colspan="{n}">‖grad‖, log scale: {fmt_norm(lo)} … {fmt_norm(hi)}</td></tr>')
        if hi > lo:
            bins = [(b, c, f"≥{e}", 1) for b, (c, e) in enumerate(zip(S.GRAD_PALETTE, _edges(lo, hi), strict=True))]
        else:  # one norm: one cell
            bins = [(n - 1, S.GRAD_PALETTE[-1], fmt_norm(hi), n)]
        cells = []
        for b, color, text, span in bins:
            if b >= S.GRAD_DARK:
                text = f'<font color="#ffffff">{text}</font>'
            cells.append(f'<td bgcolor="{color}" colspan="{span}">{text}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if n_zero:
        rows.append(f'<tr><td colspan="{n}">white, dashed: zero gradient ({n_zero})</td></tr>')
    if n_bad:
        rows.append(f'<tr><td colspan="{n}" bgcolor="#000000"><font color="#ffffff">'
                    f'black: nan or inf in the gradient ({n_bad})</font></td></tr>')
    table = '<table border="0" cellborder="1" cellspacing="0" cellpadding="4">' + "".join(rows) + "</table>"
    return f"\tlegend [label=<{table}> shape=plaintext tooltip=\"gradient norms (color_by='grad')\"]\n"
