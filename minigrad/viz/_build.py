"""From a graph to DOT text, in steps: read the graph (``_graph``), decide the drawing units
(ops, collapsed chains, collapsed modules; what a summary keeps), draw the nodes, draw the
edges, then write the text (clusters, ↪ copies of widely shared nodes, notes, highlight
and gradient colours)."""
from __future__ import annotations

from collections import Counter

from . import _labels as L
from . import _style as S
from ._graph import Graph, modules, names_of
from ._gradcolor import grad_styles
from . import _read as R
from ._read import root_of

_PREFIX = {"o": "op", "m": "mod", "r": "run"}
_MORE = "more"   # the note that stands for the ops a summary leaves out


def _uid(u) -> str:
    return _PREFIX[u[0]] + str(u[1])


def _by_last_op(unit) -> list:
    """The distinct units, in the order their last op ran."""
    order, last = [], {}
    for u in unit:
        if u in last:
            order[last[u]] = None
        last[u] = len(order)
        order.append(u)
    return [u for u in order if u is not None]


def _check(rankdir, max_nodes, color_by) -> None:
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"viz.graph: rankdir must be 'TB' or 'LR' (or 'BT', 'RL'), got {rankdir!r}")
    if max_nodes is not None and (not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValueError(f"viz.graph: max_nodes must be a positive int or None, got {max_nodes!r}")
    if color_by not in (None, "grad"):
        raise ValueError(f"viz.graph: color_by must be None or 'grad', got {color_by!r}")


class Builder:
    """Builds the pieces of one DOT text; used once, by ``build``."""

    def __init__(self, t, rankdir="TB", show_tensors=True, collapse_modules=False, max_nodes=500,
                 params=None, title=None, highlight=None, color_by=None):
        _check(rankdir, max_nodes, color_by)
        self.rankdir, self.show_tensors, self.collapse = rankdir, show_tensors, collapse_modules
        self.max_nodes, self.title, self.color_by = max_nodes, title, color_by
        roots = list(t) if isinstance(t, (list, tuple)) else [t]
        self.g = Graph(roots)
        self.names, self.kinds = names_of(params, self.g.leaves)
        self.mods, self.group = modules(self.g, self.names)
        self.hot_ops, self.hot_leaves = _hot(self.g, highlight)
        self.highlight = highlight
        self.entries = []       # (id, label, tooltip, style, cluster, hot): the drawn nodes, in order
        self.short = {}         # node id -> a one-line reminder of it (for the ↪ copies)
        self.edges = {}         # (src id, dst id) -> [count, attrs, hot]
        self.out_tensors = {}   # (pos, output index) -> drawn tensor id
        self.grads = {}         # drawn tensor id -> its gradient (color_by="grad")

    def build(self) -> tuple:
        """(name, graph_attr, node_attr, edge_attr, body lines)."""
        self._plan_units()
        self._draw_units()
        self._draw_leaves()
        self._draw_edges()
        self._draw_roots()
        return self._finish()

    # -- units ------------------------------------------------------------------------------

    def _plan_units(self) -> None:
        """A unit per op: itself, its collapsed module, or its collapsed linear chain; and which
        units a summary keeps (the ``max_nodes`` nearest the output, and every root's)."""
        g, n_ops, max_nodes = self.g, len(self.g.ops), self.max_nodes
        unit = [("o", i) for i in range(n_ops)]
        if self.collapse:
            for i, m in enumerate(self.group):
                if m >= 0:
                    unit[i] = ("m", m)
        self.summary = max_nodes is not None and n_ops > max_nodes
        self.runs = []
        if self.summary:
            blocked = [m >= 0 for m in self.group]
            for _, p, _ in g.roots:
                if p is not None:
                    blocked[p] = True
            self.runs = g.runs(blocked)
            for r, members in enumerate(self.runs):
                for i in members:
                    unit[i] = ("r", r)
        self.order = _by_last_op(unit)
        self.kept = set(self.order)
        self.dropped_ops = 0
        if self.summary and len(self.order) > max_nodes:
            self.kept = set(self.order[-max_nodes:])
            for _, p, _ in g.roots:
                if p is not None:
                    self.kept.add(unit[p])
            self.dropped_ops = sum(1 for u in unit if u not in self.kept)
        self.unit = unit
        self.root_pos = {p: k for _, p, k in g.roots if p is not None}
        self.cluster_of = {}
        if not self.collapse and self.mods:
            self.cluster_of = {i: m for i, m in enumerate(self.group) if m >= 0}

    def _members(self) -> dict:
        """Collapsed unit -> its op positions."""
        members = {("r", r): ms for r, ms in enumerate(self.runs)}
        for i, u in enumerate(self.unit):
            if u[0] == "m":
                members.setdefault(u, []).append(i)
        return members

    def _node(self, nid, label, style, cluster=None, tip=None, hot=False) -> None:
        self.entries.append((nid, label, tip, style, cluster, hot))

    def _draw_units(self) -> None:
        ops, members = self.g.ops, self._members()
        for u in self.order:
            if u not in self.kept:
                continue
            uid = _uid(u)
            if u[0] == "o":
                n = ops[u[1]]
                self.short[uid] = n.op
                self._node(uid, L.op_label(n), L.op_style(n), self.cluster_of.get(u[1]), L.op_tip(n),
                           hot=u[1] in self.hot_ops)
                continue
            ms = members[u]
            hot = any(i in self.hot_ops for i in ms)
            if u[0] == "r":
                self.short[uid] = f"chain of {len(ms)} ops"
                self._node(uid, L.run_label(ops, ms), S.RUN_STYLE, hot=hot)
            else:
                name = self.mods[u[1]]
                self.short[uid] = name
                label = L.mod_label(name, self.kinds.get(name), self.g, self.names, ms)
                self._node(uid, label, S.MOD_STYLE, hot=hot)

    # -- leaves and tensors -------------------------------------------------------------------

    def _draw_leaves(self) -> None:
        """Leaves, unless absorbed into a collapsed module's box or used only by dropped units."""
        leaf_units = {}
        for i, row in enumerate(self.g.ins):
            for _, s in row:
                if s[0] == "l":
                    leaf_units.setdefault(s[1], set()).add(self.unit[i])
        self.absorbed = set()
        for j, leaf in enumerate(self.g.leaves):
            us = leaf_units.get(j, set())
            name = self.names.get(id(leaf))
            if self.collapse and name and len(us) == 1:
                (u,) = us
                if u[0] == "m" and self.mods[u[1]] == L.module_of(name):
                    self.absorbed.add(j)
                    continue
            if us and not (us & self.kept):
                continue
            self._draw_leaf(j, leaf, name)

    def _draw_leaf(self, j, leaf, name) -> None:
        is_root = any(p is None and r is leaf for r, p, _ in self.g.roots)
        lines = [name] if name else []
        lines.append(L.tensor_desc(leaf))
        lines.append("output · leaf" if is_root else "leaf · requires_grad")
        grad = getattr(leaf, "grad", None)
        gl = L.grad_line(grad)
        if gl:
            lines.append(gl)
        cl = None
        if name and not self.collapse and L.module_of(name) in self.mods:
            cl = self.mods.index(L.module_of(name))
        nid = f"leaf{j}"
        self.short[nid] = f"{name} {S.shp(leaf.shape)}" if name else L.tensor_desc(leaf).split("\n")[0]
        self._node(nid, "\n".join(lines), S.OUT_STYLE if is_root else S.LEAF_STYLE, cl,
                   hot=j in self.hot_leaves)
        if grad is not None:
            self.grads[nid] = grad

    def _tensor_node(self, p, k, meta) -> str:
        """The node of output ``k`` of op ``p`` (drawn on first use), with the edge from its op."""
        tid = self.out_tensors.get((p, k))
        if tid is not None:
            return tid
        tid = self.out_tensors[(p, k)] = f"t{p}" if k == 0 else f"t{p}_{k}"
        n = self.g.ops[p]
        is_root = self.root_pos.get(p) == k
        lines = ["output"] if is_root else []
        lines.append(f"{S.shp(meta[0])} {S.dtype_str(meta[1])}")
        rt = n.retained()
        rt = rt if rt is not None else next((r for r, q, kk in self.g.roots if q == p and kk == k), None)
        grad = R.grad_of(rt) if rt is not None else None
        gl = L.grad_line(grad)
        if gl:
            lines.append(gl)
        if grad is not None:
            self.grads[tid] = grad
        self.short[tid] = f"{S.shp(meta[0])} {S.dtype_str(meta[1])} from {n.op}"
        hot = p in self.hot_ops
        self._node(tid, "\n".join(lines), S.OUT_STYLE if is_root else S.TENSOR_STYLE, self.cluster_of.get(p),
                   hot=hot)
        self._edge(_uid(self.unit[p]), tid, None, hot)
        return tid

    # -- edges ------------------------------------------------------------------------------

    def _edge(self, a, b, attrs, hot=False) -> None:
        e = self.edges.get((a, b))
        if e is None:
            self.edges[(a, b)] = [1, attrs, hot]
        else:
            e[0] += 1
            e[1] = e[1] or attrs
            e[2] = e[2] or hot

    def _draw_edges(self) -> None:
        for i, (row, n) in enumerate(zip(self.g.ins, self.g.ops, strict=True)):
            du = self.unit[i]
            if du not in self.kept:
                continue
            for inp, s in row:
                self._draw_input(n, du, inp, s)
            if self.show_tensors and du[0] == "o" and n.consts:
                for inp, shape, dtype in n.consts:  # inputs that need no grad (a data batch...)
                    cid = f"c{i}_{inp}"
                    self.short[cid] = desc = f"{S.shp(shape)} {S.dtype_str(dtype)}"
                    self._node(cid, desc + "\nno grad", S.CONST_STYLE)
                    self._edge(cid, _uid(du), None)

    def _draw_input(self, n, du, inp, s) -> None:
        """The edge for input ``inp`` (source ``s``) of op ``n``, drawn in unit ``du``."""
        if s[0] == "l":
            if s[1] not in self.absorbed:
                self._edge(f"leaf{s[1]}", _uid(du), L.mark_attrs(n, inp), s[1] in self.hot_leaves)
            return
        su = self.unit[s[1]]
        if su == du:
            return
        attrs = L.mark_attrs(n, inp)
        hot = s[1] in self.hot_ops
        if su not in self.kept:
            self._edge(_MORE, _uid(du), attrs, hot)
        elif self.show_tensors and su[0] == "o":
            meta = n.meta[inp] or self.g.ops[s[1]].out_meta
            self._edge(self._tensor_node(s[1], s[2], meta), _uid(du), attrs, hot)
        else:
            if attrs is None and n.meta[inp] is not None:
                attrs = f"label={S.q(S.shp(n.meta[inp][0]))}"
            self._edge(_uid(su), _uid(du), attrs, hot)

    def _draw_roots(self) -> None:
        """Every root's tensor node, and the note standing for the ops left out."""
        for r, p, k in self.g.roots:
            if p is not None and self.unit[p] in self.kept:
                meta = self.g.ops[p].out_meta if k == 0 else (getattr(r, "shape", ()), getattr(r, "dtype", None))
                self._tensor_node(p, k, meta)
        if self.dropped_ops:
            self.short[_MORE] = "earlier ops"
            label = f"… {self.dropped_ops} earlier ops not drawn (max_nodes={self.max_nodes})"
            hot = any(self.unit[i] not in self.kept for i in self.hot_ops)
            self._node(_MORE, label, S.NOTE_STYLE, hot=hot)

    # -- the text -----------------------------------------------------------------------------

    def _finish(self) -> tuple:
        body, legend = self._node_lines()
        edges, n_refs = self._edge_lines()
        body += edges
        gattr = {"rankdir": self.rankdir, "nodesep": "0.25", "ranksep": "0.35", "fontname": "Helvetica"}
        notes = self._notes(n_refs, legend)
        if notes:
            gattr.update(label="\n".join(notes), labelloc="t", fontsize="12")
        nattr = {"fontname": "Helvetica", "fontsize": "10"}
        eattr = {"fontname": "Helvetica", "fontsize": "9", "color": "#555555", "arrowsize": "0.7"}
        return "minigrad", gattr, nattr, eattr, body

    def _node_lines(self) -> tuple[list[str], str | None]:
        """The node lines (module clusters after the rest), and the legend line if any."""
        recolor, legend = {}, None
        if self.color_by == "grad":
            norms = {nid: L.grad_norm(g) for nid, g in self.grads.items()}
            norms = {nid: x for nid, x in norms.items() if x is not None}
            styles = {e[0]: e[3] for e in self.entries if e[0] in norms}
            recolor, legend = grad_styles(norms, styles)
        body, clusters = [], {m: [] for m in range(len(self.mods))}
        for nid, label, tip, style, cluster, hot in self.entries:
            if hot and nid in recolor:  # the fill tells the norm: keep the text readable on it
                style = S.restyle(recolor[nid], {k: v for k, v in S.HIGHLIGHT.items() if k != "fontcolor"})
            elif hot:
                style = S.restyle(style, S.HIGHLIGHT)
            else:
                style = recolor.get(nid, style)
            tip = f" tooltip={S.q(tip)}" if tip is not None else ""
            line = f"\t{nid} [label={S.q(label)}{tip} {style}]\n"
            (clusters[cluster] if cluster is not None else body).append(line)
        if legend:
            body.append(legend)
        for m, lines in clusters.items():
            if lines:
                label = self.mods[m] + (f" ({self.kinds[self.mods[m]]})" if self.mods[m] in self.kinds else "")
                body.append(f"\tsubgraph cluster_{m} {{\n")
                body.append(f"\t\tlabel={S.q(label)} {S.CLUSTER_STYLE}\n")
                body.extend("\t" + ln for ln in lines)
                body.append("\t}\n")
        return body, legend

    def _edge_lines(self) -> tuple[list[str], int]:
        """The edge lines; a node feeding more than FANOUT ops is drawn again (↪) beside each further use."""
        fan = Counter(a for a, _ in self.edges)
        seen_src, lines, n_refs = set(), [], 0
        for (a, b), (count, attrs, hot) in self.edges.items():
            if count > 1:  # one tensor used several times by one op (x * x), or by a collapsed chain
                extra = f"taillabel={S.q('×' + str(count))}"
                attrs = f"{attrs} {extra}" if attrs else extra
            if fan[a] > S.FANOUT and a in seen_src:
                n_refs += 1
                ref = f"ref{n_refs}"
                style = S.LEAF_REF_STYLE if a.startswith("leaf") else S.REF_STYLE
                if hot:
                    style = S.restyle(style, S.HIGHLIGHT)
                lines.append(f"\t{ref} [label={S.q('↪ ' + self.short.get(a, a))} "
                             f"tooltip={S.q(f'the same node as {a}: it feeds {fan[a]} ops')} {style}]\n")
                a = ref
            else:
                seen_src.add(a)
            if hot:
                attrs = S.restyle(attrs, S.HIGHLIGHT)
            lines.append(f"\t{a} -> {b}" + (f" [{attrs}]" if attrs else "") + "\n")
        return lines, n_refs

    def _notes(self, n_refs, legend) -> list[str]:
        """The caption lines: title, what a summary left out, what the marks mean."""
        notes = [str(self.title)] if self.title else []
        if self.summary:
            s = f"summary of {len(self.g.ops)} ops"
            if self.runs:
                s += f": {len(self.runs)} linear chain{'s' if len(self.runs) != 1 else ''} collapsed"
            if self.dropped_ops:
                s += f"; the {self.dropped_ops} earliest ops not drawn"
            notes.append(s + f" (max_nodes={self.max_nodes})")
        if n_refs:
            notes.append(f"↪ a node that feeds more than {S.FANOUT} ops is drawn again beside each further use")
        if self.highlight is not None:
            notes.append("in red: the highlighted op and its path to the output")
        if self.color_by == "grad" and legend is None:
            notes.append("color_by='grad': no gradients to colour yet (call backward() first)")
        return notes


def _hot(g: Graph, highlight) -> tuple[set, set]:
    """(op positions, leaf numbers) to draw in red: each highlighted op or leaf, and every op after it."""
    if highlight is None:
        return set(), set()
    items = list(highlight) if isinstance(highlight, (list, tuple)) else [highlight]
    start, leaves = [], set()
    for h in items:
        p = g.pos.get(id(h))                      # a Node from the tape
        if p is None:
            node, _ = root_of(h)                  # a tensor: the op that made it, or a leaf
            p = g.pos.get(id(node)) if node is not None else None
        if p is not None:
            start.append(p)
            continue
        j = g.leaf_index(h)
        if j is None:
            raise ValueError(f"viz.graph: highlight={h!r} is not an op (a node of mg.autograd.tape(t)) "
                             "nor a tensor of this graph")
        leaves.add(j)
        start.extend(i for i, row in enumerate(g.ins) if any(s == ("l", j) for _, s in row))
    return g.downstream(start), leaves


def build(t, **kwargs) -> tuple:
    """(name, graph_attr, node_attr, edge_attr, body lines): the pieces of the DOT text.
    ``t`` may also be a compiled step's program (``step.tape()``, mg.compile), drawn as its steps."""
    parts = getattr(t, "dot_parts", None)
    if parts is not None and not hasattr(t, "_node"):
        return parts(rankdir=kwargs.get("rankdir", "TB"), title=kwargs.get("title"))
    return Builder(t, **kwargs).build()
