"""The graph page's data (``mg.viz.html``): the graph read once through ``_graph`` and ``_read``,
every detail a click shows, and a tree of folds (modules, linear chains, repeated blocks,
segments) so that no level of the page opens onto more than ``LIMIT`` boxes. Plain lists and
dicts, ready for JSON; the page lays them out itself (dagre), so nothing here needs ``dot``.

Node numbers: ops first (their tape positions), then leaves, then the outputs.
"""
from __future__ import annotations

import math
from collections import Counter

from . import _labels as L
from . import _style as S
from ._graph import Graph, modules, names_of
from ._read import (fmt_bytes, fmt_where, grad_of, is_gone, is_node, is_profile, is_program, op_kind,
                    program_parts, root_of)

LIMIT = 60   # the most boxes one level shows: the top, or the inside of an open fold
_NO_WHERE = "not recorded: build the graph inside mg.autograd.detect_anomaly() or mg.autograd.profile()"


def page_data(src, params=None, highlight=None, title=None) -> dict:
    """What the page draws, from a tensor, a list of them, a profile or a compiled program."""
    if is_program(src):
        return _program_data(program_parts(src), title)
    if is_profile(src):
        if not src.records:
            raise ValueError("viz.html: the profile recorded no op (were any run inside its block, with "
                             "an input that requires grad and grad mode on?)")
        return _Page(Graph.of_profile(src), params, highlight, title, profiled=True).data()
    roots = list(src) if isinstance(src, (list, tuple)) else [src]
    for r in roots:
        if not hasattr(r, "shape") and not is_node(r):
            raise TypeError(f"viz.html: expected a Tensor, a list of Tensors, a mg.autograd.profile() "
                            f"result or a compiled step's step.tape(), got {type(r).__name__}")
    return _Page(Graph(roots), params, highlight, title).data()


# -- summaries ------------------------------------------------------------------------------------

def summary(a) -> dict | None:
    """min, mean, max, norm of the finite entries, and the NaN / inf counts, of an array or
    Tensor (a sparse one: its stored values); None when there is nothing numeric to read."""
    if a is None:
        return None
    if getattr(a, "layout", "strided") != "strided":
        a = L._grad_array(a)[1]
    a = getattr(a, "data", a)
    dt = getattr(a, "dtype", None)
    if dt is None or getattr(dt, "kind", "") not in "fciub":
        return None
    from .. import backend as _be

    xp = _be.array_module(a)
    n = int(a.size)
    if n == 0:
        return {"n": 0}
    if dt.kind == "c":
        a = xp.abs(a)
    a = a.astype("float64")
    fin = xp.isfinite(a)
    n_fin = int(fin.sum())
    nan = int(xp.isnan(a).sum())
    out = {"n": n, "nan": nan, "inf": n - n_fin - nan}
    if n_fin:
        b = a if n_fin == n else a[fin]
        stats = {"min": b.min(), "mean": b.mean(), "max": b.max(), "norm": xp.sqrt((b * b).sum())}
        for k, v in stats.items():  # a sum of finite values may still overflow
            v = float(v)
            out[k] = v if math.isfinite(v) else str(v)
    return out


def _bad(s) -> bool:
    return bool(s) and (s.get("nan", 0) + s.get("inf", 0)) > 0


def _desc(shape, dtype) -> str:
    return f"{S.shp(shape)} {S.dtype_str(dtype)}"


def _counts(names) -> str:
    c = Counter(names)
    parts = [n if k == 1 else f"{n} ×{k}" for n, k in c.most_common(4)]
    return ", ".join(parts) + (", …" if len(c) > 4 else "")


# -- the fold tree ----------------------------------------------------------------------------------

class _Folds:
    """Folds over ``n`` ops: ``parent[i]`` (a fold or -1) per op, and per fold its kind, name,
    parent. ``close`` groups each level that holds more than LIMIT units."""

    def __init__(self, n, sigs):
        self.parent = [-1] * n
        self.sigs = sigs            # per op: what makes two ops alike (name and shape)
        self.folds = []             # dicts: kind, name, sub, p (parent fold), ops (member positions)
        self.fsig = []

    def add(self, kind, name, sub="", sig=None) -> int:
        self.folds.append({"kind": kind, "name": name, "sub": sub, "p": -1})
        self.fsig.append(sig if sig is not None else (kind, name))
        return len(self.folds) - 1

    def _sig(self, u):
        return self.sigs[u[1]] if u[0] == "o" else self.fsig[u[1]]

    def _set_parent(self, u, f) -> None:
        if u[0] == "o":
            self.parent[u[1]] = f
        else:
            self.folds[u[1]]["p"] = f

    def close(self, container, units) -> None:
        """Put ``units`` (in the order they ran) in ``container`` (a fold or -1), grouping them
        first into repeated blocks, then into segments, while there are more than LIMIT."""
        level = 0
        while len(units) > LIMIT:
            sigs = [self._sig(u) for u in units]
            p, start = _period(sigs) if level == 0 else (0, 0)
            kind = "block" if p else "segment"
            size = p or max(math.ceil(len(units) / LIMIT), math.ceil(math.sqrt(len(units))))
            new = list(units[:start])
            for s in range(start, len(units), size):
                chunk = units[s:s + size]
                if len(chunk) == 1 or (kind == "block" and len(chunk) < size):
                    new.extend(chunk)
                    continue
                f = self.add(kind, "", sig=(kind, tuple(sigs[s:s + size]) if kind == "block" else s))
                for u in chunk:
                    self._set_parent(u, f)
                new.append(("f", f))
            units, level = new, level + 1
        for u in units:
            self._set_parent(u, container)

    def finish(self, op_names, first_last) -> None:
        """Each fold's member ops, and the names and subtitles of blocks and segments."""
        members = [[] for _ in self.folds]
        for i, f in enumerate(self.parent):
            while f != -1:  # an explicit walk up (folds nest a few levels deep)
                members[f].append(i)
                f = self.folds[f]["p"]
        children = {}
        for k, fd in enumerate(self.folds):
            if fd["p"] != -1:
                children.setdefault(fd["p"], []).append(k)
        op_kids = Counter(self.parent)
        repeats = Counter(s for s, fd in zip(self.fsig, self.folds, strict=True) if fd["kind"] == "block")
        seen = Counter()
        for f, fd in enumerate(self.folds):
            ms = members[f]
            fd["n"] = len(ms)
            if not ms:
                continue
            a, b = first_last(ms[0], ms[-1])
            if fd["kind"] == "block":
                seen[self.fsig[f]] += 1
                k, total = seen[self.fsig[f]], repeats[self.fsig[f]]
                fd["name"] = f"block {k} of {total}" if total > 1 else f"block of {len(ms)} ops"
                fd["sub"] = _counts(op_names[i] for i in ms)
            elif fd["kind"] == "segment":
                kids = [self.fsig[k] for k in children.get(f, ())]
                if len(kids) > 1 and len(set(kids)) == 1 and kids[0][0] == "block" and not op_kids[f]:
                    fd["name"] = f"{len(kids)} × a block of {len(kids[0][1])} ops"
                else:
                    fd["name"] = f"{len(ms)} ops"
                fd["sub"] = f"#{a}–{b}: " + _counts(op_names[i] for i in ms)
            elif fd["kind"] == "chain":
                fd["name"] = f"chain of {len(ms)} ops"
                fd["sub"] = _counts(op_names[i] for i in ms)
            elif not fd["sub"]:
                fd["sub"] = _counts(op_names[i] for i in ms)


def _period(sigs, max_p=48) -> tuple[int, int]:
    """(p, start): the sequence repeats with period ``p`` >= 2 from ``start`` (in 90 % of the
    places looked at), or (0, 0)."""
    m = min(len(sigs), 4000)
    for p in range(1, min(max_p, m // 3) + 1):
        same = sum(1 for i in range(m - p) if sigs[i] == sigs[i + p])
        if same >= 0.9 * (m - p):
            if p == 1:
                return 0, 0
            start = next((i for i in range(m - 2 * p) if sigs[i:i + p] == sigs[i + p:i + 2 * p]), 0)
            return p, start
    return 0, 0


def _by_last(units) -> list:
    """The distinct units, in the order their last op ran."""
    last = {}
    for k, u in enumerate(units):
        last[u] = k
    return sorted(last, key=last.get)


# -- a recorded graph ------------------------------------------------------------------------------

class _Page:
    def __init__(self, g, params, highlight, title, profiled=False):
        self.g = g
        self.names, self.kinds = names_of(params, self.g.leaves)
        self.mods, self.group = modules(self.g, self.names)
        self.profiled = profiled
        self.title = title
        self.select, self.anomaly = self._highlight(highlight)

    def _highlight(self, h) -> tuple:
        """(node number to select on load or None, (op position, message) of an anomaly or None)."""
        if h is None:
            return None, None
        anomaly = None
        if isinstance(h, BaseException):
            node = getattr(h, "node", None)
            if node is None or id(node) not in self.g.pos:
                raise ValueError(f"viz.html: highlight={type(h).__name__} names no op of this graph")
            p = self.g.pos[id(node)]
            return p, (p, str(h).splitlines()[0])
        p = self.g.pos.get(id(h))
        if p is None:
            node, _ = root_of(h)
            p = self.g.pos.get(id(node)) if node is not None else None
        if p is None:
            j = self.g.leaf_index(h)
            if j is None:
                raise ValueError(f"viz.html: highlight={h!r} is not an op (a node of mg.autograd.tape(t)), a "
                                 "tensor of this graph nor an AnomalyError")
            return len(self.g.ops) + j, anomaly
        return p, anomaly

    def _values(self) -> tuple[dict, dict]:
        """(pos, output index) -> value, and -> gradient, for the outputs that can still be read."""
        g, vals, grads = self.g, {}, {}
        for i, op in enumerate(g.ops):
            a = op.out_array()
            if a is not None:
                vals[(i, 0)] = a
            r = op.retained()
            if r is not None:
                vals[(i, 0)] = r
                grads[(i, 0)] = grad_of(r)
            for t in op.saved_tensors():
                node, k = root_of(t)
                p = g.pos.get(id(node)) if node is not None else None
                if p is not None:
                    vals.setdefault((p, k), t)
        for r, p, k in g.roots:
            if p is not None and hasattr(r, "shape"):  # a tensor (not a Node, nor a profile's record)
                vals[(p, k)] = r
                grads[(p, k)] = grad_of(r)
        return vals, grads

    def data(self) -> dict:
        g = self.g
        n, n_leaves = len(g.ops), len(g.leaves)
        vals, grads = self._values()
        nodes = [self._op(i, vals, grads) for i in range(n)]
        uses = Counter(s[1] for row in g.ins for _, s in row if s[0] == "l")
        nodes += [self._leaf(j, uses[j]) for j in range(n_leaves)]
        edges = []
        for i, (row, op) in enumerate(zip(g.ins, g.ops, strict=True)):
            for inp, s in row:
                src = s[1] if s[0] == "n" else n + s[1]
                edges.append([src, i, L._edge_mark(op, inp) or 0])
        for r, p, k in g.roots:
            if p is None:
                continue
            out = g.ops[p].out_meta if k == 0 or not hasattr(r, "shape") else (r.shape, r.dtype)
            node = {"k": "out", "name": "output", "sub": _desc(*out), "cls": "out", "f": -1,
                    "rows": [["output", f"{k} of op #{p} ({g.ops[p].op})"], ["shape, dtype", _desc(*out)]]}
            node["val"] = summary(vals.get((p, k)))
            node["grad"] = summary(grads.get((p, k)))
            node["bad"] = int(_bad(node["grad"]) or _bad(node["val"]))
            edges.append([p, len(nodes), 0])
            nodes.append(node)
        folds = self._folds(nodes)
        kind = "profile" if self.profiled else "graph"
        title = self.title or f"{'profiled ' if self.profiled else ''}graph of {n} ops"
        return {"title": str(title), "source": kind, "nodes": nodes, "edges": edges, "folds": folds,
                "select": self.select, "stats": {"ops": n, "leaves": n_leaves}}

    def _op(self, i, vals, grads) -> dict:
        op, g = self.g.ops[i], self.g
        shape, dtype = op.out_meta
        kind = "reduce" if L.reduces(op) else "bcast" if op_kind(op.op) == "broadcast" else "op"
        rows = [["op", f"{op.op}  (#{i} on the tape)"]]
        if op.info:
            rows.append(["attributes", " ".join(f"{k}={S.clip(v)}" for k, v in op.info.items())])
        srcs = {inp: s for inp, s in g.ins[i]}
        for inp, m in enumerate(op.meta):
            if m is not None:
                s = srcs.get(inp)
                frm = "" if s is None else (f" ← #{s[1]} {g.ops[s[1]].op}" if s[0] == "n" else
                                            f" ← {self._leaf_name(s[1]) or 'leaf'}")
                rows.append([f"input {inp}", _desc(*m) + frm])
        for inp, cshape, cdtype in op.consts or ():
            rows.append([f"input {inp}", _desc(cshape, cdtype) + " (needs no grad)"])
        out = _desc(shape, dtype) + (f" (first of {op.n_out} outputs)" if op.n_out > 1 else "")
        rows.append(["output", out])
        t = op.timing
        where = op.where
        rows.append(["created at", fmt_where(where) if where else _NO_WHERE])
        if op.gone:  # a profile's record of an op whose Node (and what it saved) is gone
            saved = f"{fmt_bytes(op.saved_bytes)} when recorded, gone with the graph"
        else:
            saved = "freed by backward" if op.freed else fmt_bytes(op.saved_bytes)
        rows.append(["saved for backward", saved])
        if t:
            rows.append(["forward", _fmt_s(t[0])])
            rows.append(["backward", _fmt_s(t[1]) if t[1] else "not run"])
        if self.group[i] >= 0:
            rows.append(["module", self.mods[self.group[i]]])
        for inp, _ in g.ins[i]:
            mark = L._edge_mark(op, inp)
            if mark:
                rows.append([f"input {inp} gradient", mark.replace("\n", " · ")])
        node = {"k": "op", "name": op.op, "sub": _desc(shape, dtype), "cls": kind, "f": -1, "rows": rows,
                "val": summary(vals.get((i, 0))), "grad": summary(grads.get((i, 0)))}
        node["bad"] = int(_bad(node["grad"]))
        node["badv"] = int(_bad(node["val"]))
        if self.anomaly and self.anomaly[0] == i:
            node["anom"] = self.anomaly[1]
        return node

    def _leaf_name(self, j) -> str | None:
        """A leaf's name (``params=`` or its ``.name``); for an op a profile saw only as an input,
        that op."""
        leaf = self.g.leaves[j]
        name = self.names.get(id(leaf))
        if name is None and is_gone(leaf) and leaf.op is not None:
            name = f"{leaf.op} #{leaf.seq}" + (f" output {leaf.k}" if leaf.k else "")
        return name

    def _leaf(self, j, uses) -> dict:
        leaf = self.g.leaves[j]
        name = self._leaf_name(j)
        desc = L.tensor_desc(leaf).replace("\n", " ")
        node = {"k": "leaf", "name": name or "leaf", "sub": desc, "cls": "leaf", "f": -1}
        if is_gone(leaf):  # what a profile recorded of an input whose tensor is gone
            if leaf.op is None:
                rows = [["leaf", name or "(unnamed)"], ["shape, dtype", desc], ["requires grad", "True"],
                        ["used by", f"{uses} ops"], ["value, gradient", "gone: the tensor was freed after the profile"]]
            else:
                rows = [["input", f"output {leaf.k} of {leaf.op} (#{leaf.seq} overall)"], ["shape, dtype", desc],
                        ["recorded", "outside the profile: before its block, or by a gradient rule"],
                        ["used by", f"{uses} ops"]]
            node.update(rows=rows, val=None, grad=None, bad=0, badv=0)
            return node
        rows = [["leaf", name or "(unnamed)"], ["shape, dtype", desc],
                ["requires grad", str(bool(getattr(leaf, "requires_grad", False)))], ["used by", f"{uses} ops"]]
        grad = getattr(leaf, "grad", None)
        node.update(rows=rows, val=summary(leaf), grad=summary(grad))
        node["bad"] = int(_bad(node["grad"]))
        node["badv"] = int(_bad(node["val"]))
        if grad is None:
            rows.append(["gradient", "none yet (call backward())"])
        return node

    def _folds(self, nodes) -> list:
        g, n = self.g, len(self.g.ops)
        F = _Folds(n, [(o.op, tuple(o.out_meta[0])) for o in g.ops])
        unit = [("o", i) for i in range(n)]
        mod_fold = {}
        params = {}
        for leaf in g.leaves:
            nm = self.names.get(id(leaf))
            if nm and L.module_of(nm):
                params.setdefault(L.module_of(nm), []).append(f"{nm.rsplit('.', 1)[1]} {S.shp(leaf.shape)}")
        for m, name in enumerate(self.mods):
            kind = self.kinds.get(name)
            mod_fold[m] = F.add("module", name + (f" · {kind}" if kind else ""), sub=" · ".join(params.get(name, [])),
                                sig=("module", kind))
        for i, m in enumerate(self.group):
            if m >= 0:
                unit[i] = ("f", mod_fold[m])
        if n > LIMIT:
            blocked = [m >= 0 for m in self.group]
            for _, p, _ in g.roots:
                if p is not None:
                    blocked[p] = True
            for ms in g.runs(blocked):
                f = F.add("chain", "", sig=("chain", Counter(g.ops[i].op for i in ms).most_common(3).__repr__()))
                for i in ms:
                    unit[i] = ("f", f)
        inside = {}
        for i, u in enumerate(unit):
            if u[0] == "f":
                inside.setdefault(u[1], []).append(("o", i))
        for f, ops in inside.items():
            F.close(f, ops)
        F.close(-1, _by_last(unit))
        F.finish([o.op for o in g.ops], lambda a, b: (a, b))
        for i, f in enumerate(F.parent):
            nodes[i]["f"] = f
        # a named parameter used only inside its module's box is drawn inside it
        users = {}
        for i, row in enumerate(g.ins):
            for _, s in row:
                if s[0] == "l":
                    users.setdefault(s[1], set()).add(self.group[i])
        for j, leaf in enumerate(g.leaves):
            name = self.names.get(id(leaf))
            m = self.mods.index(L.module_of(name)) if name and L.module_of(name) in self.mods else -1
            if m >= 0 and users.get(j) == {m}:
                nodes[n + j]["f"] = mod_fold[m]
        for fd in F.folds:
            fd["open"] = False
        return F.folds


def _fmt_s(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


# -- a compiled step's program ---------------------------------------------------------------------

def _program_data(prog, title) -> dict:
    """The page's data for ``step.tape()``: a box per array step, its inputs and live tensors."""
    steps, lines = prog["steps"], prog["lines"]
    n = len(steps)
    nodes, edges, made = [], [], {}
    for i, (name, _outs, _reads) in enumerate(steps):
        nodes.append({"k": "op", "name": name, "sub": f"step {i}", "cls": "op", "f": -1,
                      "rows": [["step", f"{i}"], ["array call", lines[i] if i < len(lines) else name]],
                      "val": None, "grad": None, "bad": 0, "badv": 0})
    leaf_of = {}
    for name in prog["inputs"]:
        leaf_of[name] = len(nodes)
        nodes.append({"k": "leaf", "name": name, "sub": "argument", "cls": "leaf", "f": -1,
                      "rows": [["argument", name]], "val": None, "grad": None, "bad": 0, "badv": 0})
    for name, t in prog["live"].items():
        leaf_of[name] = len(nodes)
        v, gr = summary(t), summary(getattr(t, "grad", None))
        nodes.append({"k": "leaf", "name": name, "sub": _desc(t.shape, t.dtype), "cls": "leaf", "f": -1,
                      "rows": [["read live", name], ["shape, dtype", _desc(t.shape, t.dtype)]],
                      "val": v, "grad": gr, "bad": int(_bad(gr)), "badv": int(_bad(v))})
    for i, (_name, outs, reads) in enumerate(steps):
        for r in dict.fromkeys(reads):
            src = made.get(r, leaf_of.get(r))
            if src is not None:
                edges.append([src, i, 0])
        for r in outs:
            made[r] = i
    for r in prog["returns"]:
        if r in made:
            edges.append([made[r], len(nodes), 0])
            nodes.append({"k": "out", "name": f"returned {r}", "sub": "", "cls": "out", "f": -1,
                          "rows": [["returned", r]], "val": None, "grad": None, "bad": 0, "badv": 0})
    F = _Folds(n, [s[0] for s in steps])
    F.close(-1, [("o", i) for i in range(n)])
    F.finish([s[0] for s in steps], lambda a, b: (a, b))
    for i, f in enumerate(F.parent):
        nodes[i]["f"] = f
    for fd in F.folds:
        fd["open"] = False
    return {"title": str(title or f"compiled {prog['name']}: {n} array steps"), "source": "compiled",
            "nodes": nodes, "edges": edges, "folds": F.folds, "select": None,
            "stats": {"ops": n, "leaves": len(leaf_of)}}
