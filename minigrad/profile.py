"""Per-op profile: ``with mg.autograd.profile() as p: ...`` then ``print(p.table())``.

While its block runs, a profile is an observer in this thread's Mode (the protocol is in
``_state.py``): ``engine.run_op`` times each op's forward and reports it (``forward``, once
per call) and reports each Node it records (``recorded``: the bytes saved for backward);
backward times every gradient rule (``backward``). Outside a profile nothing is timed: the
engine reads the Mode's empty tuple of observers and goes on.

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
from .tape import TextTable, fmt_bytes

__all__ = ["Profile", "OpStats"]


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
        # per recorded Node, for mg.viz.html(profile): [weakref, forward s, backward s, (file, line)]
        self._nodes = []
        self._index = {}        # id(node) -> its row in _nodes
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
        i = self._index.get(id(node))
        if i is None or self._nodes[i][0]() is not node:  # an autograd.Function's Node comes twice
            self._index[id(node)] = len(self._nodes)
            self._nodes.append([weakref.ref(node), self._last_forward, 0.0, user_where()])

    def backward(self, node, seconds: float, grads) -> None:
        s = self._get(node.op)
        s.backward_calls += 1
        s.backward_s += seconds
        i = self._index.get(id(node))
        if i is not None and self._nodes[i][0]() is node:
            self._nodes[i][2] += seconds

    def nodes(self) -> list[tuple]:
        """Per op recorded in the block whose Node is still alive, in the order they ran:
        ``(node, forward_s, backward_s, (file, line))`` (``mg.viz.html(profile)`` draws them).

        >>> [(n.op, f) for n, f, b, where in p.nodes()]
        """
        out = []
        for ref, fwd, bwd, where in self._nodes:
            n = ref()
            if n is not None:
                out.append((n, fwd, bwd, where))
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
