"""The recorded graph as plain lists (positions, not references), and what is derived from it:
names, modules, linear chains, the path from an op to the output."""
from __future__ import annotations

from collections import Counter

from ._labels import module_of
from ._read import collect, is_node, profile_parts, root_of


class Graph:
    """The graph behind some root tensors, read once through ``_read``.

    ``ops``: the ops in the order they ran. ``ins[i]``: (input index, source) per recorded
    input of op ``i``, source ``("n", pos, output index)`` or ``("l", leaf#)``.
    ``leaves``: leaf tensors in first-use order. ``roots``: (tensor, pos or None, output
    index). ``consumers[i]``: how many drawn inputs (and roots) op ``i`` feeds. A root may
    also be a Node. ``Graph.of_profile(p)`` reads a profile's record instead of live Nodes.
    """

    def __init__(self, roots):
        found = [(r, r, 0) if is_node(r) else (r, *root_of(r)) for r in roots]
        self.ops = collect([n for _, n, _ in found if n is not None])
        self.pos = pos = self.ops.position()
        self.roots = [(r, None if n is None else pos[id(n)], k) for r, n, k in found]
        self.ins, self.leaves = [], []
        self.consumers = [0] * len(self.ops)
        self._leaf_pos = {}
        for o in self.ops:
            self.ins.append([(i, self._source(p, k, is_node)) for i, p, k, is_node in o.inputs()])
        for r, p, _ in self.roots:
            if p is None and id(r) not in self._leaf_pos:
                self._leaf_pos[id(r)] = len(self.leaves)
                self.leaves.append(r)
            elif p is not None:
                self.consumers[p] += 1

    @classmethod
    def of_profile(cls, p) -> "Graph":
        """The ops a profile recorded, read from its record (``_read.profile_parts``), so whether
        or not the step's tensors are still alive. Its roots are the ops whose output no recorded
        op read, each root's tensor the op itself (a ``RecordView``); ``leaves`` may hold
        ``GoneInput`` records where the tensors are gone."""
        g = cls.__new__(cls)
        ops, g.ins, g.leaves, g.pos = profile_parts(p)
        g.ops = ops
        g.consumers = [0] * len(ops)
        g._leaf_pos = {id(x): j for j, x in enumerate(g.leaves)}
        for row in g.ins:
            for _, s in row:
                if s[0] == "n":
                    g.consumers[s[1]] += 1
        g.roots = [(o, i, 0) for i, o in enumerate(ops) if not g.consumers[i]]
        for _, i, _ in g.roots:
            g.consumers[i] += 1
        return g

    def _source(self, p, k, is_node) -> tuple:
        if is_node:
            j = self.pos[id(p)]
            self.consumers[j] += 1
            return ("n", j, k)
        j = self._leaf_pos.get(id(p))
        if j is None:
            j = self._leaf_pos[id(p)] = len(self.leaves)
            self.leaves.append(p)
        return ("l", j)

    def leaf_index(self, t) -> int | None:
        return self._leaf_pos.get(id(t))

    def runs(self, blocked, keep=4) -> list[list[int]]:
        """Maximal linear chains (each op feeds only the next, which has no other op input),
        less ``keep // 2`` ops at each end, which stay visible."""
        runs, cur, prev = [], [], None   # prev: the op before i (cur[-1] whenever cur is not empty)
        for i, (row, op) in enumerate(zip(self.ins, self.ops, strict=True)):
            node_ins = [s for _, s in row if s[0] == "n"]
            linked = (
                cur and not blocked[i] and len(node_ins) == 1 and node_ins[0][1] == cur[-1]
                and node_ins[0][2] == 0 and self.consumers[cur[-1]] == 1 and prev.n_out == 1
            )
            prev = op
            if linked:
                cur.append(i)
                continue
            if len(cur) >= 3 + keep:
                runs.append(cur[keep // 2: len(cur) - keep // 2])
            cur = [] if blocked[i] else [i]
        if len(cur) >= 3 + keep:
            runs.append(cur[keep // 2: len(cur) - keep // 2])
        return runs

    def op_inputs(self) -> list[list[int]]:
        """Per op, the positions of the ops it reads."""
        return [[s[1] for _, s in row if s[0] == "n"] for row in self.ins]

    def op_outputs(self) -> list[list[int]]:
        """Per op, the positions of the ops that read it."""
        outs = [[] for _ in self.ops]
        for i, row in enumerate(self.op_inputs()):
            for j in row:
                outs[j].append(i)
        return outs

    def downstream(self, start) -> set:
        """``start`` (op positions) and every op that reads them, directly or not: the path to the output."""
        return reach(start, self.op_outputs())


def reach(start, adj) -> set:
    """Positions reachable from ``start`` along ``adj`` (an explicit stack, no recursion)."""
    seen = set(start)
    stack = list(start)
    while stack:
        for j in adj[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


# -- names and modules --------------------------------------------------------------------------

def names_of(params, leaves) -> tuple[dict, dict]:
    """id(tensor) -> name (from ``params``, else a leaf's ``.name``), and module prefix -> class name."""
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
    for leaf in leaves:
        nm = getattr(leaf, "name", None)
        if isinstance(nm, str) and nm and id(leaf) not in names:
            names[id(leaf)] = nm
    return names, kinds


def modules(g: Graph, names: dict) -> tuple[list[str], list[int]]:
    """Module prefixes, and per op the module it belongs to (-1 for none).

    An op belongs to module M when it consumes a parameter of M, or when it lies between
    such ops (a descendant of one and an ancestor of another: the matmul between a
    Linear's transpose and its bias add).
    """
    mods, leaf_mod = _leaf_modules(g, names)
    group = [-1] * len(g.ops)
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
    if len(mods) * len(g.ops) > 5_000_000:  # too big to close the groups: direct members only
        return mods, group
    ins, outs = g.op_inputs(), g.op_outputs()
    claims = Counter()
    owner = {}
    for m, members in enumerate(direct):
        for i in reach(members, outs) & reach(members, ins):
            if group[i] == -1:
                claims[i] += 1
                owner[i] = m
    for i, c in claims.items():
        if c == 1:
            group[i] = owner[i]
    return mods, group


def _leaf_modules(g: Graph, names: dict) -> tuple[list[str], dict]:
    """Module prefixes in first-use order, and leaf# -> module index for named parameters."""
    mods, mod_index, leaf_mod = [], {}, {}
    for j, leaf in enumerate(g.leaves):
        name = names.get(id(leaf))
        if name is not None and module_of(name):
            m = module_of(name)
            if m not in mod_index:
                mod_index[m] = len(mods)
                mods.append(m)
            leaf_mod[j] = mod_index[m]
    return mods, leaf_mod
