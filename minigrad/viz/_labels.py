"""What each drawn node and edge says: op labels, tooltips, gradient lines, broadcast marks."""
from __future__ import annotations

import math
import re
from collections import Counter

from . import _style as S
from ._read import base_name, fmt_bytes, op_kind


def contracted(pattern) -> list[str]:
    """Labels an einsum pattern sums over (in its inputs, not in its output)."""
    if not isinstance(pattern, str) or "->" not in pattern:
        return []
    lhs, rhs = pattern.split("->", 1)
    if " " in pattern.strip() or "(" in pattern:  # einops grammar: space-separated names
        split = lambda s: [w for w in re.split(r"[\s,()]+", s) if w and w != "..."]  # noqa: E731
    else:
        split = lambda s: [c for c in s if c.isalpha()]  # noqa: E731
    out = set(split(rhs))
    seen = []
    for w in split(lhs):
        if w not in out and w not in seen:
            seen.append(w)
    return seen


def _batch(shape) -> tuple:
    return tuple(shape[:-2]) if len(shape) >= 2 else ()


def _bshape(*shapes) -> tuple | None:
    """NumPy's broadcast of shapes (None when they do not broadcast)."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        dims = {s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def mark_attrs(op, i) -> str | None:
    """Edge attributes for input ``i`` of ``op`` when its gradient is summed back, else None."""
    mark = _edge_mark(op, i)
    return f"label={S.q(mark)} {S.BCAST_EDGE}" if mark else None


def _edge_mark(op, i) -> str | None:
    """Why input ``i`` of ``op`` gets its gradient summed back, or None."""
    m = op.meta[i]
    if m is None:
        return None
    shape, out = tuple(m[0]), tuple(op.out_meta[0])
    b, kind = base_name(op.op), op_kind(op.op)
    summed = "\nΣ grad summed back"
    if (kind == "elementwise" or (kind == "inplace" and i > 0)) and shape != out:
        return f"broadcast {S.shp(shape)} → {S.shp(out)}" + summed
    if b == "linear" and i == 2 and shape != out:  # the bias of x @ W.T + b
        return f"broadcast {S.shp(shape)} → {S.shp(out)}" + summed
    if b == "linear" and i == 1 and op.meta[0] is not None and len(op.meta[0][0]) > 2:
        return f"batch broadcast () → {S.shp(op.meta[0][0][:-2])}" + summed
    if b == "matmul":
        metas = [x for x in op.meta if x is not None]
        if len(metas) == len(op.meta):  # both inputs known
            full = _bshape(*(_batch(x[0]) for x in metas))
            mine = _batch(shape)
            if full is not None and mine != full:
                return f"batch broadcast {S.shp(mine)} → {S.shp(full)}" + summed
    return None


# -- tensors -----------------------------------------------------------------------------------

def _grad_array(g) -> tuple[str, object]:
    """('grad (4, 3)' or 'grad coo (4, 4)', the array holding its entries)."""
    head = "grad " + S.shp(getattr(g, "shape", ()))
    arr = getattr(g, "data", None)
    layout = getattr(g, "layout", None)
    if isinstance(layout, str) and layout != "strided":
        head = f"grad {layout} " + S.shp(getattr(g, "shape", ()))
        v = getattr(g, "values", None)
        v = v() if callable(v) else v
        arr = getattr(v, "data", v)
    return head, arr


def grad_norm(g) -> float | None:
    """The 2-norm of a gradient (dense or sparse: of its stored values), None where unreadable."""
    if g is None:
        return None
    try:
        from .. import backend as _be

        arr = _grad_array(g)[1]
        xp = _be.array_module(arr)
        return float(xp.linalg.norm(arr.ravel()))
    except Exception:  # an exotic gradient: its shape is still worth showing
        return None


def grad_line(g) -> str | None:
    """'grad (4, 3) ‖g‖=0.52' for a gradient (dense or sparse), or None."""
    if g is None:
        return None
    head = _grad_array(g)[0]
    norm = grad_norm(g)
    return head if norm is None else f"{head} ‖g‖={norm:.4g}"


def tensor_desc(t) -> str:
    desc = f"{S.shp(getattr(t, 'shape', ()))} {S.dtype_str(getattr(t, 'dtype', None))}"
    layout = getattr(t, "layout", None)
    if isinstance(layout, str) and layout != "strided":
        nnz = getattr(t, "nnz", None)
        desc += f"\n{layout}" + (f" nnz={nnz}" if isinstance(nnz, int) else "")
    return desc


# -- ops, chains, modules ------------------------------------------------------------------------

def _info(op) -> dict:
    return op.info if isinstance(op.info, dict) else {}


def reduces(op) -> bool:
    """A reduction by name, or a fused op that ends in one (cross_entropy, reduction='mean')."""
    return op_kind(op.op) == "reduce" or _info(op).get("reduction") in ("mean", "sum")


def op_label(op) -> str:
    lines = [op.op]
    info = op.info or {}
    items = [f"{k}={S.clip(v)}" for k, v in info.items()]
    if len(" ".join(items)) <= 32:
        items = [" ".join(items)] if items else []
    lines += items
    summed = contracted(info.get("pattern")) if isinstance(info, dict) else []
    if reduces(op):
        lines.append("Σ reduces · grad broadcast back")
    elif op_kind(op.op) == "broadcast":
        lines.append("broadcast · grad summed back")
    elif summed:
        lines.append("Σ over " + " ".join(summed))
    return "\n".join(lines)


def op_style(op) -> str:
    if reduces(op) or contracted(_info(op).get("pattern")):
        return S.REDUCE_STYLE
    if op_kind(op.op) == "broadcast":
        return S.BCAST_STYLE
    return S.OP_STYLE


def op_tip(op) -> str:
    ins = ", ".join("const" if m is None else S.shp(m[0]) for m in op.meta)
    saved = "freed" if op.freed else fmt_bytes(op.saved_bytes)
    return f"{op.op} #{op.seq}: {ins} → {S.shp(op.out_meta[0])} {op.out_meta[1]}; saved for backward: {saved}"


def run_label(ops, members) -> str:
    counts = Counter(ops[i].op for i in members)
    parts = [f"{name} ×{c}" for name, c in counts.most_common(4)]
    if len(counts) > 4:
        parts.append("…")
    first, last = ops[members[0]], ops[members[-1]]
    m0 = next((m for m in first.meta if m is not None), None)
    shapes = f"{S.shp(m0[0]) if m0 else '?'} → {S.shp(last.out_meta[0])} {last.out_meta[1]}"
    return f"chain of {len(members)} ops\n" + ", ".join(parts) + "\n" + shapes


def module_of(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def mod_label(name, kind, g, names, members) -> str:
    """A collapsed module's box: its name, its parameters (with grads), the ops inside."""
    lines = [name + (f" · {kind}" if kind else "")]
    seen = set()
    for i in members:
        for _, s in g.ins[i]:
            if s[0] == "l" and s[1] not in seen:
                seen.add(s[1])
                leaf = g.leaves[s[1]]
                nm = names.get(id(leaf))
                if nm and module_of(nm) == name:
                    ln = f"{nm[len(name) + 1:]} {S.shp(leaf.shape)}"
                    gl = grad_line(getattr(leaf, "grad", None))
                    if gl:
                        ln += " · " + gl
                    lines.append(ln)
    ops = Counter(g.ops[i].op for i in members)
    lines.append("ops: " + ", ".join(op if c == 1 else f"{op} ×{c}" for op, c in ops.items()))
    return "\n".join(lines)


def fmt_norm(x: float) -> str:
    return "0" if x == 0 else (f"{x:.3g}" if math.isfinite(x) else str(x))
