"""Seeing a computation: the graph that produced a tensor, as DOT text or a Graphviz object.

``dot_source(t)`` builds the DOT text with plain Python (no Graphviz needed, no
recursion: a 100 000-op chain is fine). ``graph(t)`` wraps the same text in a
``graphviz.Digraph`` (the optional ``graphviz`` package, imported here only),
which renders itself in Jupyter. ``save(t, "g.svg")`` runs the ``dot`` program.

What the picture shows:

* op nodes (rounded boxes): the op name and the attributes that matter (axis,
  keepdims, pattern...). Reductions are orange ("Σ"): their backward broadcasts
  the gradient back over the reduced axes. Broadcasts are blue: their backward
  sums the gradient back (``sum_to``). An input that an elementwise op or a
  matmul broadcast implicitly gets a blue edge saying so: that is where the
  gradient is summed back to the input's shape.
* tensor nodes (ellipses): shape and dtype; an input that needs no grad (a data batch)
  is a grey "no grad" ellipse. Leaves (green) are where gradients
  land; after ``backward()`` they show the gradient's shape and norm. Names come
  from ``params=`` (``dict(model.named_parameters())``, a Module, or a dict of
  name -> Tensor) or a tensor's ``.name``.
* big graphs (more than ``max_nodes`` ops) are summarised: linear chains of ops
  become one box listing their ops, and only the ``max_nodes`` drawn units
  nearest the output are kept, with a note saying how many were left out.
* a tensor that feeds more than ``FANOUT`` (8) drawn ops (an RNN's weight, used
  at every step) is drawn once, at its first use, and as a small dashed copy
  (``↪ W (8, 8)``) beside each further use: long edges across the picture are
  what makes ``dot`` take minutes on a graph of a few hundred ops.

Nothing here is cached: the graph is read once and only text is kept.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from . import engine as _ag
from .tape import fmt_bytes as _fmt_bytes
from .errors import MinigradError

__all__ = ["graph", "dot_source", "save", "GraphvizNotFoundError", "INSTALL_HINT"]

INSTALL_HINT = (
    "rendering a graph needs the Graphviz 'dot' program, which was not found on PATH. Install it with "
    "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "`conda install -c conda-forge graphviz`, or run `bash scripts/install-system-deps.sh` from the "
    "minigrad repository (the README's set-up command). The DOT text itself needs no Graphviz: "
    "mg.viz.dot_source(t), or save to a .dot file"
)


class GraphvizNotFoundError(MinigradError, RuntimeError):
    """The Graphviz ``dot`` program is missing; the message says how to install it."""


# -- how ops are marked --------------------------------------------------------------------

_REDUCE = {
    "sum", "mean", "max", "min", "amax", "amin", "logsumexp", "prod", "var", "std", "norm", "nansum",
}
_BROADCAST = {"broadcast_to", "expand", "expand_as", "broadcast", "repeat", "tile"}
# ops that broadcast their inputs against each other the way NumPy does
_ELEMENTWISE = {
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "mod", "floordiv", "atan2", "hypot",
}
# in-place ops (a tensor rebased on the write): the other operand broadcasts to the tensor's shape
_INPLACE = {"add_", "sub_", "mul_", "div_", "pow_", "remainder_", "copy_", "fill_"}

_OP_STYLE = 'shape=box style="rounded,filled" fillcolor="#eeeeee" color="#888888"'
_REDUCE_STYLE = 'shape=box style="rounded,filled" fillcolor="#fce5cd" color="#e69138"'
_BCAST_STYLE = 'shape=box style="rounded,filled" fillcolor="#cfe2f3" color="#3d85c6"'
_CONST_STYLE = 'shape=ellipse style="filled" fillcolor="#f3f3f3" color="#cccccc" fontcolor="#666666" fontsize=9'
_TENSOR_STYLE = 'shape=ellipse style=filled fillcolor="#ffffff" color="#999999" fontsize=9'
_LEAF_STYLE = 'shape=ellipse style=filled fillcolor="#d9ead3" color="#6aa84f"'
_OUT_STYLE = 'shape=ellipse style=filled fillcolor="#fff2cc" color="#bf9000" peripheries=2'
_RUN_STYLE = 'shape=box style="filled,dashed" fillcolor="#f3f3f3" color="#666666"'
_MOD_STYLE = 'shape=box3d style=filled fillcolor="#ead1dc" color="#a64d79"'
_NOTE_STYLE = 'shape=note style=filled fillcolor="#ffffff" color="#999999" fontcolor="#666666"'
_BCAST_EDGE = 'color="#3d85c6" fontcolor="#3d85c6" penwidth=2'
_REF_STYLE = 'shape=ellipse style="dashed,filled" fillcolor="#ffffff" color="#999999" fontcolor="#555555" fontsize=8'
_LEAF_REF_STYLE = 'shape=ellipse style="dashed,filled" fillcolor="#f4f9f1" color="#6aa84f" fontcolor="#38761d" fontsize=8'
# a node feeding more than this many drawn ops gets a small copy (↪) beside each further use: one node
# with edges to ops far apart in the picture makes `dot` route long edges (minutes for a few hundred)
FANOUT = 8


def _base(op: str) -> str:
    return op.rsplit(".", 1)[-1]


def _is_reduce(op: str) -> bool:
    b = _base(op)
    return b in _REDUCE or b.endswith("_sum") or (b.startswith("sum") and b != "sum_to")


def _contracted(pattern) -> list[str]:
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


def _bshape(*shapes) -> tuple:
    """NumPy's broadcast of shapes (None when they do not broadcast)."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        dims = {s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _mark_attrs(node, i) -> str | None:
    mark = _edge_mark(node, i)
    return f"label={_q(mark)} {_BCAST_EDGE}" if mark else None


def _edge_mark(node, i) -> str | None:
    """Why input ``i`` of ``node`` gets its gradient summed back, or None."""
    m = node.meta[i]
    if m is None:
        return None
    shape, out = tuple(m[0]), tuple(node.out_meta[0])
    b = _base(node.op)
    if (b in _ELEMENTWISE or (b in _INPLACE and i > 0)) and shape != out:
        return f"broadcast {_shp(shape)} → {_shp(out)}\nΣ grad summed back"
    if b == "linear" and i == 2 and shape != out:  # the bias of x @ W.T + b
        return f"broadcast {_shp(shape)} → {_shp(out)}\nΣ grad summed back"
    if b == "linear" and i == 1 and node.meta[0] is not None and len(node.meta[0][0]) > 2:
        return f"batch broadcast () → {_shp(node.meta[0][0][:-2])}\nΣ grad summed back"
    if b == "matmul":
        metas = [x for x in node.meta if x is not None]
        if len(metas) == len(node.meta):  # both inputs known
            full = _bshape(*(_batch(x[0]) for x in metas))
            mine = _batch(shape)
            if full is not None and mine != full:
                return f"batch broadcast {_shp(mine)} → {_shp(full)}\nΣ grad summed back"
    return None


# -- small formatting helpers ----------------------------------------------------------------

def _shp(s) -> str:
    s = tuple(s)
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def _q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_ID = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$")
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


def _id(s: str) -> str:
    """An attribute value the way the graphviz package writes it (bare when it may be)."""
    s = str(s)
    return s if _ID.match(s) and s.lower() not in _KEYWORDS else _q(s)


def _attrs(d: dict) -> str:
    return " ".join(f"{k}={_id(v)}" for k, v in sorted(d.items()))


def _dtype(d) -> str:
    return str(d) if d is not None else "?"


def _grad_line(g) -> str | None:
    """'grad (4, 3) ‖g‖=0.52' for a gradient (dense or sparse), or None."""
    if g is None:
        return None
    head = "grad " + _shp(getattr(g, "shape", ()))
    layout = getattr(g, "layout", None)
    arr = getattr(g, "data", None)
    if isinstance(layout, str) and layout != "strided":
        head = f"grad {layout} " + _shp(getattr(g, "shape", ()))
        v = getattr(g, "values", None)
        v = v() if callable(v) else v
        arr = getattr(v, "data", v)
    try:
        from . import backend as _be

        xp = _be.array_module(arr)
        return f"{head} ‖g‖={float(xp.linalg.norm(arr.ravel())):.4g}"
    except Exception:  # an exotic gradient: its shape is still worth showing
        return head


def _tensor_desc(t) -> str:
    desc = f"{_shp(getattr(t, 'shape', ()))} {_dtype(getattr(t, 'dtype', None))}"
    layout = getattr(t, "layout", None)
    if isinstance(layout, str) and layout != "strided":
        nnz = getattr(t, "nnz", None)
        desc += f"\n{layout}" + (f" nnz={nnz}" if isinstance(nnz, int) else "")
    return desc


def _names(params, roots) -> tuple[dict, dict]:
    """id(tensor) -> name, and module prefix -> class name (from a Module's named_modules)."""
    names, kinds = {}, {}
    items = []
    if params is not None:
        if hasattr(params, "named_parameters"):
            items = list(params.named_parameters())
            if hasattr(params, "named_modules"):
                for prefix, mod in params.named_modules():
                    kinds[prefix] = type(mod).__name__
        elif hasattr(params, "items"):
            items = list(params.items())
        else:
            items = list(params)
    for name, p in items:
        names.setdefault(id(p), str(name))
        v = getattr(p, "values", None)  # sparse parameter: its gradient flows to .values
        if v is not None and not callable(v):
            names.setdefault(id(v), f"{name} (stored values)")
    return names, kinds


def _module_of(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


# -- reading the graph --------------------------------------------------------------------

class _Graph:
    """The recorded graph as viz reads it (plain lists, no references kept afterwards)."""

    def __init__(self, roots):
        self.roots = []          # (tensor, position of its node or None, output index)
        root_nodes = []
        for r in roots:
            node = getattr(r, "_node", None)
            if node is None and not hasattr(r, "_node"):  # a container (sparse tensor): follow its values
                v = getattr(r, "values", None)
                v = v() if callable(v) else v
                node = getattr(v, "_node", None)
            if node is not None:
                root_nodes.append(node)
            self.roots.append((r, node, getattr(r, "_oidx", 0)))
        self.nodes = list(reversed(_ag._collect(root_nodes))) if root_nodes else []
        pos = {id(n): i for i, n in enumerate(self.nodes)}
        self.roots = [(r, None if n is None else pos[id(n)], k) for r, n, k in self.roots]
        self.ins = []            # per node: list of (input index, source); source ("n", pos, k) or ("l", leaf#)
        self.leaves = []         # leaf tensors, in first-use order
        leaf_pos = {}
        self.consumers = [0] * len(self.nodes)
        Node, consumers = _ag.Node, self.consumers
        for n in self.nodes:
            row = []
            for i, p in enumerate(n.parents):
                if p is None:
                    continue
                if type(p) is Node:
                    src = ("n", pos[id(p)], 0)
                elif type(p) is tuple:
                    src = ("n", pos[id(p[0])], p[1])
                else:
                    j = leaf_pos.get(id(p))
                    if j is None:
                        j = leaf_pos[id(p)] = len(self.leaves)
                        self.leaves.append(p)
                    src = ("l", j)
                if src[0] == "n":
                    consumers[src[1]] += 1
                row.append((i, src))
            self.ins.append(row)
        for r, p, _ in self.roots:
            if p is None and id(r) not in leaf_pos:
                leaf_pos[id(r)] = len(self.leaves)
                self.leaves.append(r)
            elif p is not None:
                self.consumers[p] += 1

    def runs(self, blocked, keep=4) -> list[list[int]]:
        """Maximal linear chains (each op feeds only the next, which has no other op input),
        less ``keep // 2`` ops at each end, which stay visible."""
        runs, cur = [], []
        for i, row in enumerate(self.ins):
            node_ins = [s for _, s in row if s[0] == "n"]
            linked = (
                cur and not blocked[i] and len(node_ins) == 1 and node_ins[0][1] == cur[-1]
                and node_ins[0][2] == 0 and self.consumers[cur[-1]] == 1 and self.nodes[cur[-1]].n_out == 1
            )
            if linked:
                cur.append(i)
                continue
            if len(cur) >= 3 + keep:
                runs.append(cur[keep // 2: len(cur) - keep // 2])
            cur = [] if blocked[i] else [i]
        if len(cur) >= 3 + keep:
            runs.append(cur[keep // 2: len(cur) - keep // 2])
        return runs


def _modules(g: _Graph, names: dict) -> tuple[list[str], list[int]]:
    """Module prefixes, and per node the module it belongs to (-1 for none).

    An op belongs to module M when it consumes a parameter of M, or when it lies between
    such ops (a descendant of one and an ancestor of another: the matmul between a
    Linear's transpose and its bias add).
    """
    mods, group = [], [-1] * len(g.nodes)
    mod_index = {}
    leaf_mod = {}
    for j, leaf in enumerate(g.leaves):
        name = names.get(id(leaf))
        if name is not None and _module_of(name):
            m = _module_of(name)
            if m not in mod_index:
                mod_index[m] = len(mods)
                mods.append(m)
            leaf_mod[j] = mod_index[m]
    if not mods:
        return mods, group
    direct = [[] for _ in mods]
    for i, row in enumerate(g.ins):
        for _, s in row:
            if s[0] == "l" and s[1] in leaf_mod:
                if group[i] == -1:
                    group[i] = leaf_mod[s[1]]
                    direct[group[i]].append(i)
                break
    if len(mods) * len(g.nodes) > 5_000_000:  # too big to close the groups: direct members only
        return mods, group
    ins = [[s[1] for _, s in row if s[0] == "n"] for row in g.ins]
    outs = [[] for _ in g.nodes]
    for i, row in enumerate(ins):
        for j in row:
            outs[j].append(i)
    claims = Counter()
    owner = {}
    for m, members in enumerate(direct):
        down = _reach(members, outs)
        up = _reach(members, ins)
        for i in down & up:
            if group[i] == -1:
                claims[i] += 1
                owner[i] = m
    for i, c in claims.items():
        if c == 1:
            group[i] = owner[i]
    return mods, group


def _reach(start, adj) -> set:
    seen = set(start)
    stack = list(start)
    while stack:
        for j in adj[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


# -- building the DOT text ------------------------------------------------------------------

def _build(t, rankdir="TB", show_tensors=True, collapse_modules=False, max_nodes=500, params=None, title=None):
    """(name, graph_attr, node_attr, edge_attr, body lines): the pieces of the DOT text."""
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"viz.graph: rankdir must be 'TB' or 'LR' (or 'BT', 'RL'), got {rankdir!r}")
    if max_nodes is not None and (not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValueError(f"viz.graph: max_nodes must be a positive int or None, got {max_nodes!r}")
    roots = list(t) if isinstance(t, (list, tuple)) else [t]
    g = _Graph(roots)
    names, kinds = _names(params, roots)
    for leaf in g.leaves:
        nm = getattr(leaf, "name", None)
        if isinstance(nm, str) and nm and id(leaf) not in names:
            names[id(leaf)] = nm
    nodes, ins = g.nodes, g.ins
    n_ops = len(nodes)
    mods, group = _modules(g, names)

    # drawing units: a plain op, a collapsed module, or a collapsed linear run
    unit = [("o", i) for i in range(n_ops)]
    if collapse_modules:
        for i, m in enumerate(group):
            if m >= 0:
                unit[i] = ("m", m)
    summary = max_nodes is not None and n_ops > max_nodes
    runs = []
    if summary:
        blocked = [m >= 0 for m in group]
        for _, p, _ in g.roots:
            if p is not None:
                blocked[p] = True
        runs = g.runs(blocked)
        for r, members in enumerate(runs):
            for i in members:
                unit[i] = ("r", r)
    order = []                      # units, in the order their last op ran
    last = {}
    for u in unit:
        if u in last:
            order[last[u]] = None
        last[u] = len(order)
        order.append(u)
    order = [u for u in order if u is not None]
    kept = set(order)
    dropped_ops = 0
    if summary and len(order) > max_nodes:
        kept = set(order[-max_nodes:])
        for _, p, _ in g.roots:
            if p is not None:
                kept.add(unit[p])
        dropped_ops = sum(1 for u in unit if u not in kept)

    body = []

    def uid(u):
        return {"o": "op", "m": "mod", "r": "run"}[u[0]] + str(u[1])

    # -- op / run / module boxes
    cluster_of = {}
    if not collapse_modules and mods:
        for i, m in enumerate(group):
            if m >= 0:
                cluster_of[i] = m
    cluster_lines = {m: [] for m in range(len(mods))}

    def emit(line, cluster=None):
        (cluster_lines[cluster] if cluster is not None else body).append(line)

    run_members = {("r", r): members for r, members in enumerate(runs)}
    mod_members = {}
    for i, u in enumerate(unit):
        if u[0] == "m":
            mod_members.setdefault(u, []).append(i)
    root_pos = {p: k for _, p, k in g.roots if p is not None}
    short = {}                      # node id -> a one-line reminder of it (for the ↪ copies)
    for u in order:
        if u not in kept:
            continue
        if u[0] == "o":
            n = nodes[u[1]]
            short[uid(u)] = n.op
            emit(f"\t{uid(u)} [label={_q(_op_label(n))} tooltip={_q(_op_tip(n))} {_op_style(n)}]\n",
                 cluster_of.get(u[1]))
        elif u[0] == "r":
            members = run_members[u]
            short[uid(u)] = f"chain of {len(members)} ops"
            emit(f"\t{uid(u)} [label={_q(_run_label(nodes, members))} {_RUN_STYLE}]\n")
        else:
            short[uid(u)] = mods[u[1]]
            emit(f"\t{uid(u)} [label={_q(_mod_label(u[1], mods, kinds, g, names, mod_members[u]))} {_MOD_STYLE}]\n")

    # -- leaves: drawn unless absorbed into a collapsed module box
    leaf_units = {}
    for i, row in enumerate(ins):
        for _, s in row:
            if s[0] == "l":
                leaf_units.setdefault(s[1], set()).add(unit[i])
    absorbed = set()
    for j, leaf in enumerate(g.leaves):
        us = leaf_units.get(j, set())
        name = names.get(id(leaf))
        if collapse_modules and name and len(us) == 1:
            (u,) = us
            if u[0] == "m" and mods[u[1]] == _module_of(name):
                absorbed.add(j)
                continue
        if us and not (us & kept):
            continue
        is_root = any(p is None and r is leaf for r, p, _ in g.roots)
        lines = []
        if name:
            lines.append(name)
        lines.append(_tensor_desc(leaf))
        lines.append("output · leaf" if is_root else "leaf · requires_grad")
        gl = _grad_line(getattr(leaf, "grad", None))
        if gl:
            lines.append(gl)
        style = _OUT_STYLE if is_root else _LEAF_STYLE
        cl = None
        if name and not collapse_modules and _module_of(name) in mods:
            cl = mods.index(_module_of(name))
        short[f"leaf{j}"] = f"{name} {_shp(leaf.shape)}" if name else _tensor_desc(leaf).split("\n")[0]
        emit(f"\tleaf{j} [label={_q(chr(10).join(lines))} {style}]\n", cl)

    # -- tensor nodes for op outputs, and edges
    edges = {}                      # (src id, dst id) -> [count, attrs]
    out_tensors = {}                # (pos, k) -> drawn tensor id

    def tensor_node(p, k, meta):
        key = (p, k)
        tid = out_tensors.get(key)
        if tid is not None:
            return tid
        tid = f"t{p}" if k == 0 else f"t{p}_{k}"
        out_tensors[key] = tid
        lines = []
        is_root = p in root_pos and root_pos[p] == k
        if is_root:
            lines.append("output")
        lines.append(f"{_shp(meta[0])} {_dtype(meta[1])}")
        n = nodes[p]
        rt = n.retain() if n.retain is not None else None
        rt = rt if rt is not None else next((r for r, q, kk in g.roots if q == p and kk == k), None)
        gl = _grad_line(getattr(rt, "grad", None)) if rt is not None else None
        if gl:
            lines.append(gl)
        style = _OUT_STYLE if is_root else _TENSOR_STYLE
        short[tid] = f"{_shp(meta[0])} {_dtype(meta[1])} from {n.op}"
        emit(f"\t{tid} [label={_q(chr(10).join(lines))} {style}]\n", cluster_of.get(p))
        add_edge(uid(unit[p]), tid, None)
        return tid

    def add_edge(a, b, attrs):
        e = edges.get((a, b))
        if e is None:
            edges[(a, b)] = [1, attrs]
        else:
            e[0] += 1
            e[1] = e[1] or attrs

    more = "more"
    for i, row in enumerate(ins):
        du = unit[i]
        if du not in kept:
            continue
        n = nodes[i]
        for inp, s in row:
            if s[0] == "l":
                if s[1] not in absorbed:
                    add_edge(f"leaf{s[1]}", uid(du), _mark_attrs(n, inp))
                continue
            su = unit[s[1]]
            if su == du:
                continue
            attrs = _mark_attrs(n, inp)
            if su not in kept:
                add_edge(more, uid(du), attrs)
            elif show_tensors and su[0] == "o":
                meta = n.meta[inp] or nodes[s[1]].out_meta
                add_edge(tensor_node(s[1], s[2], meta), uid(du), attrs)
            else:
                if attrs is None and n.meta[inp] is not None:
                    attrs = f"label={_q(_shp(n.meta[inp][0]))}"
                add_edge(uid(su), uid(du), attrs)
        if show_tensors and du[0] == "o" and n.consts:
            for inp, shape, dtype in n.consts:  # inputs that need no grad (a data batch...)
                cid = f"c{i}_{inp}"
                short[cid] = desc = f"{_shp(shape)} {_dtype(dtype)}"
                emit(f"\t{cid} [label={_q(desc + chr(10) + 'no grad')} {_CONST_STYLE}]\n")
                add_edge(cid, uid(du), None)
    for r, p, k in g.roots:
        if p is not None and unit[p] in kept:
            meta = nodes[p].out_meta if k == 0 else (getattr(r, "shape", ()), getattr(r, "dtype", None))
            tensor_node(p, k, meta)
    if dropped_ops:
        short[more] = "earlier ops"
        body.append(f"\t{more} [label={_q(f'… {dropped_ops} earlier ops not drawn (max_nodes={max_nodes})')} "
                    f"{_NOTE_STYLE}]\n")
    for m, lines in cluster_lines.items():
        if not lines:
            continue
        label = mods[m] + (f" ({kinds[mods[m]]})" if mods[m] in kinds else "")
        body.append(f"\tsubgraph cluster_{m} {{\n")
        body.append(f"\t\tlabel={_q(label)} style=\"rounded,dashed\" color=\"#a64d79\" fontcolor=\"#a64d79\"\n")
        body.extend("\t" + ln for ln in lines)
        body.append("\t}\n")
    fan = Counter(a for a, _ in edges)
    seen_src = set()
    n_refs = 0
    for (a, b), (count, attrs) in edges.items():
        if count > 1:  # one tensor used several times by one op (x * x), or by a collapsed chain
            extra = f"taillabel={_q('×' + str(count))}"
            attrs = f"{attrs} {extra}" if attrs else extra
        if fan[a] > FANOUT and a in seen_src:
            # a further use of a widely shared node: drawn from a small copy beside the op
            n_refs += 1
            ref = f"ref{n_refs}"
            style = _LEAF_REF_STYLE if a.startswith("leaf") else _REF_STYLE
            body.append(f"\t{ref} [label={_q('↪ ' + short.get(a, a))} "
                        f"tooltip={_q(f'the same node as {a}: it feeds {fan[a]} ops')} {style}]\n")
            a = ref
        else:
            seen_src.add(a)
        body.append(f"\t{a} -> {b}" + (f" [{attrs}]" if attrs else "") + "\n")

    gattr = {"rankdir": rankdir, "nodesep": "0.25", "ranksep": "0.35", "fontname": "Helvetica"}
    notes = []
    if title:
        notes.append(str(title))
    if summary:
        s = f"summary of {n_ops} ops"
        if runs:
            s += f": {len(runs)} linear chain{'s' if len(runs) != 1 else ''} collapsed"
        if dropped_ops:
            s += f"; the {dropped_ops} earliest ops not drawn"
        notes.append(s + f" (max_nodes={max_nodes})")
    if n_refs:
        notes.append(f"↪ a node that feeds more than {FANOUT} ops is drawn again beside each further use")
    if notes:
        gattr.update(label="\n".join(notes), labelloc="t", fontsize="12")
    nattr = {"fontname": "Helvetica", "fontsize": "10"}
    eattr = {"fontname": "Helvetica", "fontsize": "9", "color": "#555555", "arrowsize": "0.7"}
    return "minigrad", gattr, nattr, eattr, body


def _op_label(n) -> str:
    lines = [n.op]
    info = n.info or {}
    items = [f"{k}={_clip(v)}" for k, v in info.items()]
    if len(" ".join(items)) <= 32:
        items = [" ".join(items)] if items else []
    lines += items
    b = _base(n.op)
    summed = _contracted(info.get("pattern")) if isinstance(info, dict) else []
    if _reduces(n):
        lines.append("Σ reduces · grad broadcast back")
    elif b in _BROADCAST:
        lines.append("broadcast · grad summed back")
    elif summed:
        lines.append("Σ over " + " ".join(summed))
    return "\n".join(lines)


def _clip(v, n=40) -> str:
    s = str(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def _reduces(n) -> bool:
    """A reduction by name, or a fused op that ends in one (cross_entropy, reduction='mean')."""
    info = n.info if isinstance(n.info, dict) else {}
    return _is_reduce(n.op) or info.get("reduction") in ("mean", "sum")


def _op_style(n) -> str:
    info = n.info if isinstance(n.info, dict) else {}
    if _reduces(n) or _contracted(info.get("pattern")):
        return _REDUCE_STYLE
    if _base(n.op) in _BROADCAST:
        return _BCAST_STYLE
    return _OP_STYLE


def _op_tip(n) -> str:
    ins = ", ".join("const" if m is None else _shp(m[0]) for m in n.meta)
    saved = "freed" if n.freed else _fmt_bytes(n.saved_bytes)
    return f"{n.op} #{n.seq}: {ins} → {_shp(n.out_meta[0])} {n.out_meta[1]}; saved for backward: {saved}"


def _run_label(nodes, members) -> str:
    counts = Counter(nodes[i].op for i in members)
    parts = [f"{op} ×{c}" for op, c in counts.most_common(4)]
    if len(counts) > 4:
        parts.append("…")
    first, last = nodes[members[0]], nodes[members[-1]]
    m0 = next((m for m in first.meta if m is not None), None)
    shapes = f"{_shp(m0[0]) if m0 else '?'} → {_shp(last.out_meta[0])} {last.out_meta[1]}"
    return f"chain of {len(members)} ops\n" + ", ".join(parts) + "\n" + shapes


def _mod_label(m, mods, kinds, g, names, members) -> str:
    name = mods[m]
    head = name + (f" · {kinds[name]}" if name in kinds else "")
    lines = [head]
    seen = set()
    for i in members:
        for _, s in g.ins[i]:
            if s[0] == "l" and s[1] not in seen:
                seen.add(s[1])
                leaf = g.leaves[s[1]]
                nm = names.get(id(leaf))
                if nm and _module_of(nm) == name:
                    ln = f"{nm[len(name) + 1:]} {_shp(leaf.shape)}"
                    gl = _grad_line(getattr(leaf, "grad", None))
                    if gl:
                        ln += " · " + gl
                    lines.append(ln)
    ops = Counter(g.nodes[i].op for i in members)
    lines.append("ops: " + ", ".join(op if c == 1 else f"{op} ×{c}" for op, c in ops.items()))
    return "\n".join(lines)


def _source(name, gattr, nattr, eattr, body) -> str:
    head = [f"digraph {name} {{\n", f"\tgraph [{_attrs(gattr)}]\n", f"\tnode [{_attrs(nattr)}]\n",
            f"\tedge [{_attrs(eattr)}]\n"]
    return "".join(head) + "".join(body) + "}\n"


# -- the public functions -------------------------------------------------------------------

def dot_source(t, rankdir: str = "TB", show_tensors: bool = True, collapse_modules: bool = False,
               max_nodes: int | None = 500, params=None, title: str | None = None) -> str:
    """The DOT text of the graph that produced ``t`` (no Graphviz needed).

    Args:
        t: a Tensor (or a list of Tensors: one graph for all of them).
        rankdir: "TB" (top-down) or "LR" (left to right).
        show_tensors: draw a node for every intermediate tensor (shape, dtype); with
            False, ops connect directly and edges carry the shapes. Leaves and the
            output are always drawn.
        collapse_modules: draw each module (parameters grouped by name prefix, e.g.
            ``fc1.weight`` and ``fc1.bias``) as one box; otherwise a module's ops are
            framed in a cluster.
        max_nodes: above this many ops, summarise: collapse linear chains and keep the
            ``max_nodes`` units nearest the output. None draws everything.
        params: names for parameters: a Module, ``dict(model.named_parameters())``,
            or any mapping / iterable of (name, Tensor).
        title: a caption on top of the picture.

    Returns:
        the DOT text (``graph(t).source`` is the same text).

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> "sum" in mg.viz.dot_source((x * x).sum())
    True
    """
    return _source(*_build(t, rankdir, show_tensors, collapse_modules, max_nodes, params, title))


def graph(t, rankdir: str = "TB", show_tensors: bool = True, collapse_modules: bool = False,
          max_nodes: int | None = 500, params=None, title: str | None = None):
    """A ``graphviz.Digraph`` of the graph that produced ``t`` (see ``dot_source`` for the arguments).

    Needs the ``graphviz`` Python package (``pip install graphviz``, or minigrad's
    ``viz`` extra); rendering it (``.render()``, ``.pipe()``, Jupyter display) needs
    the Graphviz ``dot`` program, and raises ``GraphvizNotFoundError`` saying how to
    install it where that is missing.

    >>> g = mg.viz.graph(loss, params=dict(model.named_parameters()))
    >>> g.render("loss", format="svg")      # or just `g` as a Jupyter cell's value
    """
    try:
        import graphviz
    except ImportError:
        raise ImportError(
            "mg.viz.graph needs the graphviz Python package: pip install graphviz (or pip install "
            "'minigrad[viz]'). mg.viz.dot_source(t) gives the DOT text without it"
        ) from None
    name, gattr, nattr, eattr, body = _build(t, rankdir, show_tensors, collapse_modules, max_nodes, params, title)
    d = _digraph_class(graphviz)(name=name, graph_attr=gattr, node_attr=nattr, edge_attr=eattr)
    d.body.extend(body)
    return d


_DIGRAPH = None  # the graphviz.Digraph subclass, made on first use (graphviz is optional)


def _digraph_class(graphviz):
    global _DIGRAPH
    if _DIGRAPH is not None:
        return _DIGRAPH
    missing = graphviz.ExecutableNotFound

    class Digraph(graphviz.Digraph):
        """graphviz.Digraph whose rendering says how to install ``dot`` when it is missing."""

        def render(self, *args, **kwargs):
            try:
                return super().render(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def pipe(self, *args, **kwargs):
            try:
                return super().pipe(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def view(self, *args, **kwargs):
            try:
                return super().view(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
            try:
                return super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs)
            except (missing, GraphvizNotFoundError):  # pipe() has already turned one into the other
                return {"text/plain": INSTALL_HINT + "\n\n" + self.source}

    Digraph.__module__ = __name__
    _DIGRAPH = Digraph
    return Digraph


_FORMATS = ("svg", "png", "pdf")


def save(t, path, format: str | None = None, **kwargs) -> Path:
    """Draw the graph that produced ``t`` into a file; the format follows the extension.

    Args:
        t: a Tensor (or a list of Tensors).
        path: where to write: ``.svg``, ``.png``, ``.pdf`` (rendered with Graphviz's
            ``dot``), or ``.dot`` / ``.gv`` (the DOT text, no Graphviz needed).
        format: overrides the extension.
        **kwargs: the options of ``dot_source`` (rankdir, show_tensors, params, ...).

    Returns:
        the path written.

    Raises:
        GraphvizNotFoundError: rendering was asked for and ``dot`` is missing (the
            message says how to install it).

    >>> mg.viz.save(loss, "loss.svg", rankdir="LR")
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in _FORMATS + ("dot", "gv"):
        raise ValueError(
            f"viz.save: cannot tell the format of {str(path)!r}: use a .svg, .png, .pdf, .dot or .gv "
            f"path, or format= one of {', '.join(_FORMATS + ('dot',))}"
        )
    src = dot_source(t, **kwargs)
    if fmt in ("dot", "gv"):
        path.write_text(src, encoding="utf-8")
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(INSTALL_HINT)
    res = subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=src.encode("utf-8"), capture_output=True)
    if res.returncode != 0:
        raise RuntimeError(f"viz.save: dot failed writing {str(path)!r}: {res.stderr.decode(errors='replace').strip()}")
    return path
