"""Per-op profile: ``with mg.autograd.profile() as p: ...`` then ``print(p.table())``.

While its block runs, a profile is an observer in this thread's Mode (the protocol is in
``_state.py``): ``engine.run_op`` times each op's forward and reports it (``forward``, once
per call) and reports each Node it records (``recorded``: the bytes saved for backward);
backward times every gradient rule (``backward``). Outside a profile nothing is timed: the
engine reads the Mode's empty tuple of observers and goes on.

Beside the per-op totals, a profile keeps a record of each op it saw recorded (``records``, an
``OpRecord`` each, and ``inputs``, the leaves and outside ops they read): name, shapes and dtypes,
edges, attributes, times, ``file:line``. The record is written when the op is recorded and holds
no array and no Node (only a weak reference to each), so ``mg.viz.html(profile)`` draws the
profiled graph after the step's tensors are gone, as a training step leaves it.

Forward time is the time of the array computation itself (wrapping and recording
are not included); the block's wall time is reported beside it, so the
framework's own overhead is the difference. The ops a gradient rule runs (with
``create_graph=True``) count as that rule's backward time, not as forward calls.
"""
from __future__ import annotations

import time
import weakref

from . import _state
from .anomaly import user_where
from .engine import Node as _Node
from .tape import TextTable, fmt_bytes

__all__ = ["Profile", "OpStats", "OpRecord", "InputRecord"]


class OpStats:
    """What one op cost inside a profile."""

    __slots__ = ("op", "calls", "forward_s", "backward_calls", "backward_s", "saved_bytes")

    def __init__(self, op: str):
        self.op = op
        self.calls = 0            # forward calls
        self.forward_s = 0.0
        self.backward_calls = 0   # gradient rules run
        self.backward_s = 0.0
        self.saved_bytes = 0      # saved for backward, summed over the recorded Nodes

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s

    def __repr__(self):
        return (f"OpStats({self.op!r}, calls={self.calls}, forward_s={self.forward_s:.3g}, "
                f"backward_calls={self.backward_calls}, backward_s={self.backward_s:.3g}, "
                f"saved_bytes={self.saved_bytes})")


class OpRecord:
    """One op a profile saw recorded, written when it was recorded: what ``mg.viz.html(profile)``
    draws. It keeps no array and no Node (a weak reference only), so it outlives the step's tensors.

    ``op`` (its name), ``seq`` (the Node's creation number), ``inputs``: per input that requires
    grad, ``(input index, source)``, the source ``("n", position, output index)`` (the op at that
    position of ``profile.records``) or ``("l", j)`` (``profile.inputs[j]``: a leaf, or an op the
    profile did not see recorded); ``meta``: per input its (shape, dtype), None for a constant;
    ``out_meta``: the (first) output's (shape, dtype); ``n_out``; ``info``: the attributes the tape
    shows (axis...) or None; ``consts``: ((input index, shape, dtype), ...) of the Tensor inputs that
    need no grad, or None; ``saved_bytes``: saved for backward, when recorded; ``forward_s``,
    ``backward_s``; ``where``: the user's (file, line) or None; ``node()``: the Node while it is
    alive, else None.
    """

    __slots__ = ("op", "seq", "inputs", "meta", "out_meta", "n_out", "info", "consts", "saved_bytes",
                 "forward_s", "backward_s", "where", "node")

    def __repr__(self):
        return f"<OpRecord {self.op} #{self.seq} -> {self.out_meta[0]}>"


class InputRecord:
    """A tensor that an op of the profile read and whose history the profile did not record: a leaf
    (``op`` None; ``ref()`` the tensor while it is alive, else None; ``name`` its ``.name``), or
    output ``k`` of an op recorded outside the profile (before its block, or by a gradient rule
    with ``create_graph``): ``op`` its name, ``seq`` its creation number. ``shape``, ``dtype``."""

    __slots__ = ("shape", "dtype", "name", "op", "seq", "k", "ref")

    def __repr__(self):
        what = "leaf" if self.op is None else f"output {self.k} of {self.op} #{self.seq}"
        return f"<InputRecord {what} {self.shape} {self.dtype}>"


_PLAIN = (str, int, float, bool, type(None))


def _plain(v) -> bool:
    return isinstance(v, _PLAIN) or (type(v) is tuple and all(_plain(x) for x in v))


def _plain_info(info):
    """The op's display attributes, anything but plain values (an array, a device) made text."""
    if info is None or all(_plain(v) for v in info.values()):
        return info
    return {k: v if _plain(v) else str(v) for k, v in info.items()}


class Profile:
    """A context manager collecting per-op calls, forward/backward time and bytes saved.

    Profiles nest: an inner one also reports to the one around it.

    >>> with mg.autograd.profile() as p:
    ...     loss = (x @ w).tanh().sum()
    ...     loss.backward()
    >>> print(p.table())
    """

    def __init__(self):
        self.stats: dict[str, OpStats] = {}
        self.wall_s = 0.0
        self._t0 = None
        self._active = False
        self.records: list[OpRecord] = []      # per op recorded in the block, in the order they ran
        self.inputs: list[InputRecord] = []    # the leaves (and outside ops) they read
        self._pos = {}          # a Node's seq -> its position in records
        self._input_pos = {}    # id(leaf) or (seq, k) of an outside op -> its position in inputs
        self._shared = {}       # the (shape, dtype) and (file, line) tuples records share
        self._last_forward = 0.0

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> "Profile":
        if self._active:
            raise RuntimeError("profile: this profile is already active; make a new one with mg.autograd.profile()")
        self._active = True
        self._token = _state.add_observer(self)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall_s += time.perf_counter() - self._t0
        _state.reset(self._token)
        self._active = False
        return False

    # -- the observer protocol the engine calls (minigrad/_state.py) -------------------
    def _get(self, op) -> OpStats:
        s = self.stats.get(op)
        if s is None:
            s = self.stats[op] = OpStats(op)
        return s

    def forward(self, op: str, seconds: float, out) -> None:
        s = self._get(op)
        s.calls += 1
        s.forward_s += seconds
        self._last_forward = seconds  # the op's Node, if one is recorded, is reported next

    def recorded(self, node) -> None:
        self._get(node.op).saved_bytes += node.saved_bytes
        r = OpRecord()
        share = self._shared.setdefault  # a step's ops repeat shapes and lines: one tuple each
        r.op, r.seq, r.n_out = node.op, node.seq, node.n_out
        r.meta, r.out_meta = share(node.meta, node.meta), share(node.out_meta, node.out_meta)
        r.info, r.consts, r.saved_bytes = _plain_info(node.info), node.consts, node.saved_bytes
        r.inputs = self._edges(node.parents, node.meta)
        r.forward_s, r.backward_s = self._last_forward, 0.0
        w = user_where()
        r.where = w if w is None else share(w, w)
        r.node = weakref.ref(node)
        self._pos[node.seq] = len(self.records)
        self.records.append(r)

    def _edges(self, parents, meta) -> tuple:
        """Per input that requires grad: (input index, source), read off the Node's parents."""
        out = []
        for i, p in enumerate(parents):
            if p is None:
                continue
            if type(p) is tuple:
                p, k = p
            else:
                k = 0
            if type(p) is not _Node:  # a leaf
                out.append((i, ("l", self._leaf(p, meta[i]))))
                continue
            j = self._pos.get(p.seq)
            if j is None:  # recorded outside the profile
                out.append((i, ("l", self._outside(p, k, meta[i]))))
                continue
            out.append((i, ("n", j, k)))
        return tuple(out)

    def _leaf(self, t, meta) -> int:
        j = self._input_pos.get(id(t))
        if j is not None:
            ref = self.inputs[j].ref
            if ref is not None and ref() is t:
                return j
        try:
            ref = weakref.ref(t)
        except TypeError:
            ref = None
        name = getattr(t, "name", None)
        return self._add_input(id(t), meta, name if isinstance(name, str) else None, None, None, 0, ref)

    def _outside(self, node, k, meta) -> int:
        j = self._input_pos.get((node.seq, k))
        if j is not None:
            return j
        return self._add_input((node.seq, k), meta, None, node.op, node.seq, k, None)

    def _add_input(self, key, meta, name, op, seq, k, ref) -> int:
        x = InputRecord()
        x.shape, x.dtype = meta if meta is not None else ((), None)
        x.name, x.op, x.seq, x.k, x.ref = name, op, seq, k, ref
        self._input_pos[key] = len(self.inputs)
        self.inputs.append(x)
        return len(self.inputs) - 1

    def backward(self, node, seconds: float, grads) -> None:
        s = self._get(node.op)
        s.backward_calls += 1
        s.backward_s += seconds
        i = self._pos.get(node.seq)
        if i is not None:
            self.records[i].backward_s += seconds

    def nodes(self) -> list[tuple]:
        """Per op recorded in the block whose Node is still alive, in the order they ran:
        ``(node, forward_s, backward_s, (file, line))``. (``mg.viz.html(profile)`` draws
        ``records``, which outlive the Nodes.)

        >>> [(n.op, f) for n, f, b, where in p.nodes()]
        """
        out = []
        for r in self.records:
            n = r.node()
            if n is not None:
                out.append((n, r.forward_s, r.backward_s, r.where))
        return out

    # -- reading it ----------------------------------------------------------------------
    def rows(self, sort_by: str = "total") -> list[OpStats]:
        """Per-op stats, sorted (descending) by ``"total"``, ``"forward"``, ``"backward"``,
        ``"calls"`` or ``"saved"``; ``"op"`` sorts by name."""
        keys = {
            "total": lambda s: s.total_s, "forward": lambda s: s.forward_s, "backward": lambda s: s.backward_s,
            "calls": lambda s: s.calls, "saved": lambda s: s.saved_bytes,
        }
        if sort_by == "op":
            return sorted(self.stats.values(), key=lambda s: s.op)
        if sort_by not in keys:
            raise ValueError(f"profile.rows: sort_by must be one of {', '.join(list(keys) + ['op'])}, got {sort_by!r}")
        return sorted(self.stats.values(), key=lambda s: (-keys[sort_by](s), s.op))

    @property
    def total_forward_s(self) -> float:
        return sum(s.forward_s for s in self.stats.values())

    @property
    def total_backward_s(self) -> float:
        return sum(s.backward_s for s in self.stats.values())

    def table(self, sort_by: str = "total", limit: int | None = None) -> str:
        """A text table: per op, calls, forward time, backward calls and time, bytes saved,
        and its share of the time in ops; sorted by total time (``sort_by`` as in ``rows``)."""
        rows = self.rows(sort_by)
        total = self.total_forward_s + self.total_backward_s
        head = ("op", "calls", "forward", "bwd calls", "backward", "total", "%", "saved")
        out = [head]
        shown = rows if limit is None else rows[:limit]
        for s in shown:
            pct = 100.0 * s.total_s / total if total > 0 else 0.0
            out.append((s.op, str(s.calls), _fmt_s(s.forward_s), str(s.backward_calls), _fmt_s(s.backward_s),
                        _fmt_s(s.total_s), f"{pct:.1f}", fmt_bytes(s.saved_bytes)))
        out.append(("total", str(sum(s.calls for s in rows)), _fmt_s(self.total_forward_s),
                    str(sum(s.backward_calls for s in rows)), _fmt_s(self.total_backward_s), _fmt_s(total),
                    "100.0" if total > 0 else "0.0", fmt_bytes(sum(s.saved_bytes for s in rows))))
        widths = [max(len(r[c]) for r in out) for c in range(len(head))]
        rule = "  ".join("-" * w for w in widths)

        def fmt(r):
            return "  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True)))

        lines = [fmt(out[0]), rule]
        lines += [fmt(r) for r in out[1:-1]]
        if limit is not None and len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more ops")
        lines += [rule, fmt(out[-1])]
        overhead = self.wall_s - total
        lines.append(f"wall time in the block: {_fmt_s(self.wall_s)} (array work in ops: {_fmt_s(total)}, "
                     f"the rest is Python: recording, wrapping, your code: {_fmt_s(max(overhead, 0.0))})")
        return TextTable("\n".join(lines), [out[0]] + [tuple(r) for r in out[1:]])  # a notebook shows it as HTML

    def __str__(self):
        return self.table()

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self):
        return f"<Profile: {len(self.stats)} ops, {sum(s.calls for s in self.stats.values())} calls>"


def _fmt_s(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"
