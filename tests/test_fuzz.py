"""Differential fuzzing against PyTorch (issue 18), in float64.

``test_random_programs_match_torch``: random programs of 3-8 ops drawn from the op registry
(every entry with a forward and a ``.torch`` oracle; the shapes and keyword arguments of its
``.samples`` are the templates, elementwise ones also get random broadcastable shapes), mixed
with random views (slices, transposes, reshapes) and in-place writes (``add_``, ``mul_``,
``setitem``) on non-leaf clones and their views, stale views included, and on clones of constants
(buffers that a write makes differentiable). Each program runs in minigrad and, step by step, in
PyTorch, and is recorded as it runs (``Program.tape``), so that it can be replayed as a function
``F(*leaves) -> outputs`` under the function transforms of both frameworks. Compared at rtol
1e-9, each composition on its own (a disagreement in one does not hide another):

- ``values``: every intermediate value;
- ``rev``: first-order gradients of ``<F, w>`` (random weights ``w``): plain ``backward`` and
  ``mg.grad(create_graph=True)``;
- ``rev over rev``: the gradient of ``<grad, v>``;
- ``fwd``: ``mg.func.jvp(F, x, u)`` against ``torch.func.jvp`` (outputs and tangents);
- ``rev over fwd``: ``mg.func.grad`` of ``<jvp tangent, w>`` w.r.t. the primals and the
  tangents (``argnums`` all of them) against ``torch.func.grad`` of ``torch.func.jvp``;
- ``fwd over fwd``: ``jvp`` of ``(x, u) -> jvp(F, x, u) tangent`` with tangents ``(u2, u3)``;
- ``fwd over rev``: ``jvp`` of ``grad(<F, w>)`` (a Hessian-vector product), and ``mg.func.hvp``
  against the same torch composition.

Where minigrad and torch.func disagree in a transform, the composition runs a third time in
PyTorch's reverse mode alone (``_rev_jvp``: the double-vjp trick; ``torch.autograd.grad``), a
second opinion on the oracle. Oracle artifacts (``_artifact``: PyTorch's number is not the
derivative, so the difference says nothing about minigrad) are counted and printed, not failed:
NaN from PyTorch at a kink (std at zero spread, copysign at 0), a NaN derivative on either side
where F's value itself is NaN, logsumexp over an empty axis in forward mode, and torch.func's
wrong mixed second-order rules through det, slogdet, solve and eigh (``_TORCH_FUNC_WRONG``). Every other difference, or an error raised by one framework only,
is a disagreement. Ops are not drawn where they are not functions of their input (repeated
singular values, ...: ``_ILL_POSED``). The test collects every disagreement, then fails with the
counts per composition and, for each, its shortest program in full: the program as code (each
value named, its shape), the composition, the numbers, and the seed that replays it.

Fixed seed; ``MINIGRAD_FUZZ_EXAMPLES=N`` sets the number of programs (default 150, ~6 s here) and
of bad-input rounds, for long runs; ``MINIGRAD_FUZZ_PROGRAM=<seed>`` runs only the program of that
seed (the seed a report names), to replay one disagreement.

``test_invalid_arguments_raise_named_errors``: random invalid arguments to every function in
``mg.ops.exports()`` and every registered Tensor method: a call may succeed (the argument was
valid after all) or raise TypeError / ValueError / IndexError / RuntimeError (or minigrad's
subclasses) whose message names the function (or its op); never another exception type. Grad
mode and a small backward still work afterwards.
"""
import os
import time

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import run_op
from minigrad.ops.linalg import _lsym

from conftest import to_np

torch = pytest.importorskip("torch")

N_PROGRAMS = int(os.environ.get("MINIGRAD_FUZZ_EXAMPLES", "150"))
SEED = int(os.environ.get("MINIGRAD_FUZZ_SEED", "20240518"))
ONLY = os.environ.get("MINIGRAD_FUZZ_PROGRAM")
RTOL = 1e-9

REG = mg.ops.registry()
OPS = sorted(name for name, op in REG.items() if op.torch is not None and op.forward is not None)
# ops whose domain is narrower than the positive values ``positive`` gives
DOMAINS = {"arcsin": "unit", "arccos": "unit", "arctanh": "unit", "arccosh": "above1", "erfinv": "unit", "logit": "prob"}

COMPOSITIONS = ("values", "rev", "rev over rev", "fwd", "rev over fwd", "fwd over fwd", "fwd over rev")


class Refused(Exception):
    """Both frameworks refused a step (the same program is invalid in both): not a disagreement."""


class Mismatch(AssertionError):
    """Two arrays differ; keeps them, for ``_artifact``."""

    def __init__(self, msg, got=None, want=None):
        super().__init__(msg)
        self.got, self.want = got, want


# ---------------------------------------------------------------------------------------------
# values in both frameworks
# ---------------------------------------------------------------------------------------------

class Pair:
    """One value of a program: the minigrad Tensor and the PyTorch tensor computed the same way;
    ``idx`` is its place in ``Program.vals`` (and in a replay's environment), ``name`` (``t<idx>``)
    what the report calls it."""

    __slots__ = ("m", "t", "idx")

    def __init__(self, m, t, idx):
        self.m, self.t, self.idx = m, t, idx

    @property
    def name(self):
        return f"t{self.idx}"

    @property
    def shape(self):
        return tuple(self.m.shape)


def both(what, fm, ft):
    """Run one step in both frameworks; an error in exactly one is a disagreement."""
    em = et = None
    rm = rt = None
    try:
        rm = fm()
    except Exception as e:  # noqa: BLE001 - compared below
        em = e
    try:
        rt = ft()
    except Exception as e:  # noqa: BLE001 - compared below
        et = e
    if em is not None and et is not None:
        raise Refused(f"{what}: minigrad {type(em).__name__}: {em} | torch {type(et).__name__}: {et}")
    if em is not None or et is not None:
        who, e = ("minigrad", em) if em is not None else ("torch", et)
        raise AssertionError(f"{what}: only {who} raised {type(e).__name__}: {e}")
    return rm, rt


def _qr_signs(x0, which):
    Q = torch.linalg.qr(x0.detach())[0]
    d = torch.tensor(np.sign((np.linalg.qr(x0.detach().numpy())[0] * Q.numpy()).sum(axis=-2)))
    if which == 0:
        return lambda th, x: th.linalg.qr(x)[0] * d[..., None, :]
    return lambda th, x: th.linalg.qr(x)[1] * d[..., :, None]


def _eigh_signs(x0, upper=False):
    V = torch.linalg.eigh(_lsym(torch, x0.detach(), upper))[1]
    d = torch.tensor(np.sign((np.linalg.eigh(x0.detach().numpy(), "U" if upper else "L")[1] * V.numpy()).sum(axis=-2)))
    return lambda th, x, upper=False: th.linalg.eigh(_lsym(th, x, upper))[1] * d[..., None, :]


def _svd_signs(x0, which, full):
    U = torch.linalg.svd(x0.detach(), full_matrices=full)[0]
    Un = np.linalg.svd(x0.detach().numpy(), full_matrices=full)[0]
    d = torch.tensor(np.sign((Un * U.numpy()).sum(axis=-2)))
    k = min(x0.shape[-2:])

    def oracle(th, x, full):
        U, _, Vh = th.linalg.svd(x, full_matrices=full)
        return U * d[..., None, :] if which == 0 else (Vh * d[..., :k, None] if Vh.shape[-2] == k else Vh)
    return oracle


# The registry's oracles for eigenvectors, singular vectors and QR turn PyTorch's signs to NumPy's
# with a sign per vector read from the input's values (``x.detach().numpy()``), which a tensor
# inside a torch.func transform does not have. The signs are constants (they do not move with a
# perturbation), so the replay's oracle takes them from the eager input, where the program is
# built: the same oracle, readable by torch.func.
_SIGN_FIXED = {
    "qr_q": lambda x0: _qr_signs(x0, 0),
    "qr_r": lambda x0: _qr_signs(x0, 1),
    "eigh_vectors": lambda x0, upper=False: _eigh_signs(x0, upper),
    "svd_u": lambda x0, full: _svd_signs(x0, 0, full),
    "svd_vh": lambda x0, full: _svd_signs(x0, 1, full),
}


def _close_gaps(vals, zero=False):
    """Whether sorted spectra ``vals`` (the last axis) have two values within 1e-4 of their scale
    (or, with ``zero``, a value that close to 0)."""
    v = np.sort(np.abs(vals) if zero else vals, axis=-1)
    tol = 1e-4 * max(np.abs(v).max(initial=0.0), 1e-300)
    return bool((np.diff(v, axis=-1) < tol).any() or (zero and (v[..., 0] < tol).any()))


def _rank_deficient(r):
    """Whether the triangular ``r`` has a diagonal entry within 1e-4 of 0 (relative to the largest)."""
    d = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    return bool((d < 1e-4 * max(d.max(initial=0.0), 1e-300)).any())


# Where an op's result (or its derivative) is not a function of its input, the two frameworks may
# both be right and disagree: eigen- and singular vectors of a repeated (or, for SVD, zero) value
# are any basis of their space, Q and R of a rank-deficient matrix any completion, and the
# eigen- and singular values themselves have a kink there. Programs reach such inputs (the
# orthogonal output of one decomposition fed to another, a buffer with equal rows): the step then
# draws another op. Near-singular matrices are avoided for the solvers (1 / cond amplifies the
# rounding past rtol).
_ILL_POSED = {
    "svd_u": lambda x: _close_gaps(np.linalg.svd(x, compute_uv=False), zero=True),
    "svd_vh": lambda x: _close_gaps(np.linalg.svd(x, compute_uv=False), zero=True),
    "svdvals": lambda x: _close_gaps(np.linalg.svd(x, compute_uv=False), zero=True),
    "eigh_vectors": lambda x: _close_gaps(np.linalg.eigvalsh(x)),
    "eigvalsh": lambda x: _close_gaps(np.linalg.eigvalsh(x)),
    "qr_q": lambda x: _rank_deficient(np.linalg.qr(x)[1]),
    "qr_r": lambda x: _rank_deficient(np.linalg.qr(x)[1]),
    "inv": lambda x: bool((np.linalg.cond(x) > 1e6).any()),
    "solve": lambda x: bool((np.linalg.cond(x) > 1e6).any()),
    "det": lambda x: bool((np.linalg.cond(x) > 1e6).any()),
    "logabsdet": lambda x: bool((np.linalg.cond(x) > 1e6).any()),
}


class Program:
    """A random program, built and run at once in minigrad and PyTorch, and recorded on a tape.

    Every step is a pair of functions of its input values (``fm`` for minigrad, ``ft`` for PyTorch);
    the tape holds them in order, with the indices of their inputs and output (None for an in-place
    write, whose first input is the tensor written). Decisions that read values (``tame``, a
    reshape that needs a contiguous value) are taken once, while building, and the replay takes the
    same path: it sees the same values. Constants (non-differentiable operands) are steps without
    inputs; the differentiable leaves are the replay's arguments."""

    def __init__(self, rng):
        self.rng = rng
        self.pool = []     # Pairs: the program's values, which later steps may use
        self.leaves = []   # Pairs that require grad: the replay's arguments
        self.vals = []     # every Pair made (leaves, constants, steps), by idx
        self.tape = []     # (out idx or None, input idxs, fm, ft)
        self.lines = []    # the program as code, for the report
        self.ops = []      # registry ops used
        self.flags = set()  # conditions for oracle artifacts met by this program (``_artifact``)
        self.outs = []     # the Pairs F returns
        self.n_writes = 0  # in-place steps

    # -- the tape ------------------------------------------------------------------------------
    def _new(self, m, t):
        p = Pair(m, t, len(self.vals))
        self.vals.append(p)
        return p

    def apply(self, what, ins, fm, ft, code):
        """One step making a new value from ``ins`` (Pairs): run in both frameworks and recorded.
        ``code`` says what it does, ``{}`` standing for the inputs' names (for the report)."""
        try:
            m, t = both(what, lambda: fm(*[q.m for q in ins]), lambda: ft(*[q.t for q in ins]))
        except AssertionError:
            self.lines.append(f"{code.format(*[q.name for q in ins])}  # <- disagrees")
            raise
        p = self._new(m, t)
        self.tape.append((p.idx, tuple(q.idx for q in ins), fm, ft))
        self.lines.append(f"{p.name} = {code.format(*[q.name for q in ins])}  # {p.shape}")
        return p

    def mutate(self, what, target, ins, fm, ft, code):
        """An in-place step: ``fm(target, *ins)`` writes into ``target``; ``code`` as ``apply``'s,
        the target first."""
        self.n_writes += 1
        try:
            both(what, lambda: fm(target.m, *[q.m for q in ins]), lambda: ft(target.t, *[q.t for q in ins]))
        except AssertionError:
            self.lines.append(f"{code.format(target.name, *[q.name for q in ins])}  # <- disagrees")
            raise
        self.tape.append((None, (target.idx,) + tuple(q.idx for q in ins), fm, ft))
        self.lines.append(code.format(target.name, *[q.name for q in ins]))

    def replay(self, lib, xs):
        """Run the program again on the leaves ``xs`` (``lib`` "m": minigrad Tensors, "t": torch
        tensors, either possibly dual or traced by a transform); returns the outputs."""
        env = [None] * len(self.vals)
        for p, x in zip(self.leaves, xs, strict=True):
            env[p.idx] = x
        for out, ins, fm, ft in self.tape:
            r = (fm if lib == "m" else ft)(*[env[i] for i in ins])
            if out is not None:
                env[out] = r
        return tuple(env[p.idx] for p in self.outs)

    def fn(self, lib):
        """The program as a function of its leaves, for the transforms."""
        return lambda *xs: self.replay(lib, xs)

    # -- building blocks ---------------------------------------------------------------------
    def leaf(self, shape, grad=True, positive=False):
        a = self.rng.standard_normal(shape)
        if positive:
            a = np.abs(a) + 0.5
        m = mg.tensor(a, requires_grad=grad)
        t = torch.tensor(a, requires_grad=grad)
        p = self._new(m, t)
        how = f"randn{shape}" + (".abs() + 0.5" if positive else "")
        if grad:
            self.leaves.append(p)
            self.lines.append(f"{p.name} = {how}  # leaf{len(self.leaves) - 1}, requires grad")
        else:
            self.tape.append((p.idx, (), lambda m=m: m, lambda t=t: t))
            self.lines.append(f"{p.name} = {how}  # a constant")
        return p

    def push(self, p):
        self.pool.append(p)
        return p

    def tame(self, p):
        """Keep values in a range where chains of exp/pow stay finite: 3 tanh(x / 3) past 20."""
        if np.abs(to_np(p.m)).max(initial=0) <= 20:
            return p
        f = lambda x: (x / 3.0).tanh() * 3.0  # noqa: E731 - the same method calls in both
        return self.apply("tame", [p], f, f, "({} / 3.0).tanh() * 3.0")

    def positive(self, p):
        """A value in (0.5, 1.5), for an argument with a domain (log, sqrt, pow's base, a divisor)."""
        f = lambda x: x.sigmoid() + 0.5  # noqa: E731
        return self.apply("positive", [p], f, f, "{}.sigmoid() + 0.5")

    def inside(self, p, domain):
        """A value in an op's domain (``DOMAINS``): (-0.9, 0.9) ("unit"), (0.1, 0.9) ("prob") or (1.2, 2.2) ("above1")."""
        if domain == "unit":
            f = lambda x: x.tanh() * 0.9  # noqa: E731
            return self.apply("unit", [p], f, f, "{}.tanh() * 0.9")
        if domain == "prob":
            f = lambda x: x.sigmoid() * 0.8 + 0.1  # noqa: E731
            return self.apply("prob", [p], f, f, "{}.sigmoid() * 0.8 + 0.1")
        f = lambda x: x.sigmoid() + 1.2  # noqa: E731
        return self.apply("above1", [p], f, f, "{}.sigmoid() + 1.2")

    def reshaped(self, p, shape):
        f = lambda x: x.reshape(shape)  # noqa: E731
        return self.apply("reshape", [p], f, f, f"{{}}.reshape({tuple(shape)})")

    def pick(self, shape=None):
        """A pool value (of ``shape``: reshaped from one of the same size where needed), or None."""
        if not self.pool:
            return None
        if shape is None:
            return self.pool[self.rng.integers(len(self.pool))]
        same = [p for p in self.pool if p.shape == tuple(shape)]
        if same and self.rng.random() < 0.8:
            return same[self.rng.integers(len(same))]
        size = int(np.prod(shape))
        sized = [p for p in self.pool if int(np.prod(p.shape)) == size]
        if sized and self.rng.random() < 0.7:
            p = sized[self.rng.integers(len(sized))]
            return self.reshaped(p, tuple(shape))
        return None

    def operand(self, shape, positive=False, grad=True):
        p = self.pick(shape) if grad else None
        if p is None:
            p = self.leaf(shape, grad=grad, positive=positive)
            return p
        p = self.tame(p)
        return self.positive(p) if positive else p

    # -- steps --------------------------------------------------------------------------------
    def step_op(self):
        name = OPS[self.rng.integers(len(OPS))]
        op = REG[name]
        samples = op.samples(np.random.default_rng(self.rng.integers(2**31)))
        sample = samples[self.rng.integers(len(samples))]
        float_pos = [k for k, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        shapes = {k: sample.args[k].shape for k in float_pos}
        # elementwise ops: any pool value's shape, the other operands broadcastable against it
        if op.kind == "elementwise" and self.pool and self.rng.random() < 0.6 and float_pos:
            base = self.pick().shape
            for j, k in enumerate(float_pos):
                if j == 0 or not op.broadcast:
                    shapes[k] = base
                else:
                    shapes[k] = self.broadcastable(base)
            if name == "where" and isinstance(sample.args[0], np.ndarray):
                sample_cond = self.rng.random(base) < 0.5
            else:
                sample_cond = None
        else:
            sample_cond = None
        slots, desc = [], []  # per argument: a Pair (a value of the program) or (minigrad, torch) constants
        for k, a in enumerate(sample.args):
            if k in shapes:
                a = sample.args[k]
                pos = bool(a.min(initial=1.0) > 0) and name not in ("binary_cross_entropy_with_logits",)
                domain = DOMAINS.get(name)
                if domain:
                    p = self.inside(self.operand(shapes[k], grad=k not in sample.nondiff), domain)
                else:
                    p = self.operand(shapes[k], positive=pos, grad=k not in sample.nondiff)
                slots.append(p)
                desc.append("{}")
            elif isinstance(a, np.ndarray):
                c = sample_cond if (k == 0 and sample_cond is not None) else a
                slots.append((mg.tensor(c), torch.tensor(c)))
                desc.append(_const_code(c))
            else:
                slots.append((a, a))
                desc.append(repr(a).replace("{", "{{").replace("}", "}}"))
        kw = dict(sample.kwargs)
        ins = [s for s in slots if isinstance(s, Pair)]

        def fill(xs, side):
            it = iter(xs)
            return [next(it) if isinstance(s, Pair) else s[side] for s in slots]

        kws = ", ".join(f"{k}={v!r}" for k, v in kw.items()).replace("{", "{{").replace("}", "}}")
        code = f"{name}({', '.join(desc)}{', ' if kw and desc else ''}{kws})"
        if name in _ILL_POSED and ins and _ILL_POSED[name](to_np(ins[0].m)):
            return self.step_op()  # another op: this one is not a function of its input here
        oracle = _SIGN_FIXED[name](ins[0].t, **kw) if name in _SIGN_FIXED else op.torch
        p = self.apply(name, ins, lambda *xs: run_op(op, *fill(xs, 0), **kw),
                       lambda *xs: oracle(torch, *fill(xs, 1), **kw), code)
        self.ops.append(name)
        self.note_artifacts(name, ins, kw, p)
        return self.push(p)

    def note_artifacts(self, name, ins, kw, p):
        """Flag the conditions of the oracle artifacts ``_artifact`` knows."""
        if name == "std" and np.any(to_np(p.m) == 0):  # a zero std: zero spread along its axes
            self.flags.add("std at zero spread")
        if name == "copysign" and ins and np.any(to_np(ins[0].m) == 0):  # |x| at its kink
            self.flags.add("copysign at zero")
        if name == "logsumexp" and ins:
            axes = kw.get("axes")
            shape = ins[0].shape
            if axes == () or 0 in shape:
                self.flags.add("logsumexp over an empty axis")

    def broadcastable(self, shape):
        shape = list(shape)
        if shape and self.rng.random() < 0.3:
            shape = shape[self.rng.integers(len(shape) + 1):]
        return tuple(1 if self.rng.random() < 0.3 else s for s in shape)

    def view_of(self, p, writable=False):
        """A random view (slice, transpose; reshape of a contiguous value unless ``writable``)."""
        shape = p.shape
        kinds = ["slice", "transpose"] + ([] if writable else ["reshape"])
        kind = kinds[self.rng.integers(len(kinds))]
        if kind == "slice" and shape and max(shape) > 1:
            ax = int(self.rng.choice([i for i, s in enumerate(shape) if s > 1]))
            n = shape[ax]
            lo = int(self.rng.integers(n))
            hi = int(self.rng.integers(lo + 1, n + 1))
            step = int(self.rng.integers(1, 3))
            idx = (slice(None),) * ax + (slice(lo, hi, step),)
            f = lambda x: x[idx]  # noqa: E731
            return self.apply("slice", [p], f, f, f"{{}}[{':, ' * ax}{lo}:{hi}:{step}]")
        if kind in ("slice", "transpose") and len(shape) >= 2:
            perm = tuple(int(i) for i in self.rng.permutation(len(shape)))
            f = lambda x: x.permute(*perm)  # noqa: E731
            return self.apply("permute", [p], f, f, f"{{}}.permute{perm}")
        if kind == "reshape" and p.m.is_contiguous() and p.t.is_contiguous():
            n = int(np.prod(shape))
            divs = [d for d in range(1, n + 1) if n % d == 0]
            d = int(self.rng.choice(divs))
            new = (d, n // d) if self.rng.random() < 0.7 else (n,)
            return self.reshaped(p, new)
        f = lambda x: x[...]  # noqa: E731
        return self.apply("view", [p], f, f, "{}[...]")

    def step_view(self):
        p = self.pick()
        if p is None:
            return self.step_op()
        return self.push(self.view_of(p))

    def step_write(self):
        """Clone a value, take a view of the clone, write into the clone or the view (or both):
        the other is then stale or updated through copy_slices. A quarter of the clones are of a
        constant instead (a buffer written with differentiable values, ``buf = x.new_zeros(n);
        buf[i] = y``): a tensor with neither a gradient nor a tangent until a write gives it one."""
        p = self.pick()
        if p is None or not p.shape:
            return self.step_op()
        f = lambda x: x.clone()  # noqa: E731
        buffer = self.rng.random() < 0.25
        src = self.leaf(p.shape, grad=False) if buffer else self.tame(p)
        c = self.apply("clone", [src], f, f, "{}.clone()")
        v = self.view_of(c, writable=True)
        # both written: the view first where the clone does not require grad (a buffer, or a clone of
        # one), as PyTorch refuses a write into a view taken while its base (a tensor without
        # history) did not require grad once a write into the base made it require grad ("a leaf
        # Variable that requires grad is being used in an in-place operation")
        both_ = [c, v] if c.t.requires_grad else [v, c]
        targets = both_ if self.rng.random() < 0.3 else [[c, v][self.rng.integers(2)]]
        for target in targets:
            self.write(target)
        self.push(c)
        return self.push(v)

    def write(self, target):
        kind = ["add_", "mul_", "setitem"][self.rng.integers(3)]
        shape = target.shape
        if kind in ("add_", "mul_"):
            if self.rng.random() < 0.4:
                s = float(self.rng.uniform(0.5, 1.5))
                f = lambda x: getattr(x, kind)(s)  # noqa: E731
                self.mutate(kind, target, [], f, f, f"{{}}.{kind}({s!r})")
            else:
                o = self.operand(self.broadcastable(shape))
                f = lambda x, y: getattr(x, kind)(y)  # noqa: E731
                self.mutate(kind, target, [o], f, f, f"{{}}.{kind}({{}})")
            return
        if not shape:
            idx = ()
        elif self.rng.random() < 0.5:
            idx = int(self.rng.integers(shape[0]))
        elif self.rng.random() < 0.5:
            lo = int(self.rng.integers(shape[0]))
            idx = slice(lo, int(self.rng.integers(lo + 1, shape[0] + 1)))
        else:  # advanced: distinct rows (repeated indices in a write are nondeterministic in PyTorch)
            k = int(self.rng.integers(1, shape[0] + 1))
            idx = np.sort(self.rng.choice(shape[0], size=k, replace=False)).astype(np.int64)
        sel = tuple(np.empty(shape)[idx].shape)
        im = mg.tensor(idx) if isinstance(idx, np.ndarray) else idx
        it = torch.tensor(idx) if isinstance(idx, np.ndarray) else idx
        if self.rng.random() < 0.3:
            val = float(self.rng.standard_normal())
            ins, vw = [], repr(val)

            def wm(x):
                x[im] = val

            def wt(x):
                x[it] = val
        else:
            o = self.operand(self.broadcastable(sel) if self.rng.random() < 0.5 else sel)
            ins, vw = [o], "{}"

            def wm(x, y):
                x[im] = y

            def wt(x, y):
                x[it] = y
        ix = f"{_const_code(idx)}" if isinstance(idx, np.ndarray) else repr(idx)
        self.mutate("setitem", target, ins, wm, wt, f"{{}}[{ix}] = {vw}")

    def build(self, n_steps):
        for _ in range(n_steps):
            r = self.rng.random()
            if r < 0.65 or not self.pool:
                self.step_op()
            elif r < 0.82:
                self.step_view()
            else:
                self.step_write()

    def writes(self):
        """Whether the program writes in place (or tried to)."""
        return self.n_writes > 0

    def report(self):
        """The program as code: ``op(...)`` is the registry op (``run_op(mg.ops.registry()[op], ...)``
        in minigrad, its ``.torch`` oracle in PyTorch); ``randn`` draws come from the seed."""
        outs = ", ".join(p.name for p in self.outs)
        leaves = ", ".join(p.name for p in self.leaves)
        return "\n".join(["  " + line for line in self.lines] + [f"  F({leaves}) = ({outs})"])


_LEGEND = ("op(...) is the registry op: run_op(mg.ops.registry()['op'], ...) in minigrad, its .torch oracle in "
           "PyTorch; F is the program as a function of its leaves, the transforms' f")


def _const_code(c):
    """A constant array as code: its values when small (an index, a condition), else its shape."""
    c = np.asarray(c)
    if c.size <= 12:
        return f"np.array({c.tolist()!r})".replace("{", "{{").replace("}", "}}")
    return f"const{c.shape}"


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------

def _close(what, got, want):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        raise Mismatch(f"{what}: shape {got.shape} != torch {want.shape}")
    scale = np.abs(want[np.isfinite(want)]).max(initial=1.0)
    try:
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=what, equal_nan=True)
    except AssertionError as e:
        raise Mismatch(str(e), got, want) from None


def _tg(t):
    """A torch result as a NumPy array. A ZeroTensor (torch.sign's zero gradient; torch.func.grad's
    gradient of an input that nothing depends on) has no storage: ``numpy(force=True)`` reads
    whatever memory its null pointer gives (garbage, or a segfault), so it is read as zeros."""
    if t is None:
        return None
    if t._is_zerotensor():
        return np.zeros(tuple(t.shape), dtype=np.float64)
    return t.detach().numpy(force=True)


def _bad(got, want):
    """Where ``_close`` finds ``got`` and ``want`` different."""
    scale = np.abs(want[np.isfinite(want)]).max(initial=1.0)
    with np.errstate(all="ignore"):
        ok = (np.abs(got - want) <= RTOL * scale + RTOL * np.abs(want)) | (got == want)
    return ~(ok | (np.isnan(got) & np.isnan(want)))


_FUNC_REFUSES_WRITE = "a leaf Variable that requires grad is being used in an in-place operation"


def _torch_nan_only(err):
    """Every entry that differs is a NaN from PyTorch and a number from minigrad."""
    got, want = getattr(err, "got", None), getattr(err, "want", None)
    if got is None or want is None:
        return False
    bad = _bad(got, want)
    return bool(bad.any()) and bool(np.all(np.isnan(want[bad]) & ~np.isnan(got[bad])))


def _artifact(prog, comp, err):
    """The oracle artifact a disagreement is (its name), or None for a disagreement.

    Only a disagreement where every differing entry is a NaN from PyTorch and a number from
    minigrad, in a program that met the artifact's condition (``Program.note_artifacts``,
    ``run_program``):

    - "std at zero spread": std is not differentiable where its argument has no spread (sqrt at
      0). PyTorch's rule divides by the std and gives NaN (0/0); minigrad gives the derivative of
      the flat function it is there, 0 (std of equal values stays 0 along the directions that keep
      them equal). Neither is a derivative; torch's NaN then spreads through the chain rule.
    - "copysign at zero" (found by this fuzzer: ``copysign(mod(x, x), -1)``, a constant 0): copysign(x, y)
      is +-|x|, with a kink at x = 0. PyTorch's backward is ``grad * where(x == 0, 0, result / x)``,
      whose own derivative (second order: rev over rev, rev over fwd) is 0 / 0 = NaN where x = 0
      (the masked division still runs backward); minigrad gives a subgradient, 0.
    - "derivative where F's value is NaN" (found by this fuzzer: ``fmod(y, rint(x))`` at rint(x) = 0):
      an output of the program is NaN in both frameworks (outside its function's domain), so it has
      no derivative; a difference where one side's derivative is NaN and the other's a number (or
      NaN) says nothing. This one alone does not need the NaN to be torch's.
    - "logsumexp over an empty axis" (forward mode): the value is -inf (the log of an empty sum);
      PyTorch's forward rule computes the tangent as sum(t * exp(x - lse)) with x - lse = -inf - -inf
      = NaN, minigrad the empty sum's tangent, 0; the reverse rule has nothing to send back.
    """
    got, want = getattr(err, "got", None), getattr(err, "want", None)
    if got is None or want is None:
        return None
    bad = _bad(got, want)
    if not bad.any():
        return None
    if "NaN output" in prog.flags and np.all(np.isnan(want[bad]) | np.isnan(got[bad])):
        return "derivative where F's value is NaN"
    if not np.all(np.isnan(want[bad]) & ~np.isnan(got[bad])):
        return None
    for kink in ("std at zero spread", "copysign at zero"):
        if kink in prog.flags:
            return kink
    if "logsumexp over an empty axis" in prog.flags and "fwd" in comp:
        return "logsumexp over an empty axis (forward mode)"
    return None


# Ops through which torch.func (PyTorch 2.13) computes wrong mixed second-order derivatives (rev over
# fwd, fwd over fwd, fwd over rev), each checked for a 3x3 input at unit scale against central
# differences of the first-order torch.func.jvp (well tested) and against torch's reverse mode
# alone, which both agree with minigrad to 1e-8 or better. A disagreement in a program using one
# of them, where ``_second_opinion`` agrees with minigrad, is this artifact; the same evidence in a
# program without one stays a disagreement (its message says so, for a person to judge and to add
# the op here with its evidence).
_TORCH_FUNC_WRONG = {
    "det": "grad of <jvp tangent, w> off by up to 25, jvp of the jvp tangent by 10 (LU-based forward rule)",
    "logabsdet": "slogdet: grad of <jvp tangent, w> w.r.t. x exactly 0; jvp of the jvp tangent off by 0.2",
    "solve": "grad of <jvp tangent, w> w.r.t. A off by 3e-2, jvp of the jvp tangent by 0.3",
    "eigh_vectors": "linalg.eigh's vectors: grad of <jvp tangent, w> NaN at distinct eigenvalues, "
                    "where the derivative is finite",
}


def _dot(outs, ws):
    """``sum_i <outs_i, w_i>``: a scalar of the outputs."""
    total = None
    for o, w in zip(outs, ws, strict=True):
        s = (o * w).sum()
        total = s if total is None else total + s
    return total


def _check_reverse(prog, ws, rng):
    """``rev`` and ``rev over rev``: the eager tensors' graphs (backward, mg.grad, grad of grad)."""
    outs = prog.outs
    lm = _dot([p.m for p in outs], [mg.tensor(w) for w in ws])
    lt = _dot([p.t for p in outs], [torch.tensor(w) for w in ws])
    ms = [p.m for p in prog.leaves]
    tsr = [p.t for p in prog.leaves]
    _close("loss", to_np(lm), _tg(lt))
    # first order: the plain walk (backward into .grad) and mg.grad with create_graph
    both("backward", lambda: lm.backward(retain_graph=True), lambda: lt.backward(retain_graph=True))
    for k, (m, t) in enumerate(zip(ms, tsr, strict=True)):
        gm = None if m.grad is None else to_np(m.grad)
        gt = _tg(t.grad)
        if gm is None or gt is None:
            assert gm is None and gt is None or np.all((gm if gt is None else gt) == 0), f"grad leaf{k}"
            continue
        _close(f"backward grad of leaf{k}", gm, gt)
    gms, gts = both("grad", lambda: mg.grad(lm, ms, create_graph=True, allow_unused=True),
                    lambda: torch.autograd.grad(lt, tsr, create_graph=True, allow_unused=True))
    used = []
    for k, (gm, gt) in enumerate(zip(gms, gts, strict=True)):
        if gm is None or gt is None:
            other = gt if gm is None else gm
            assert other is None or np.all(to_np(other) == 0 if gt is None else _tg(other) == 0), \
                f"grad of leaf{k}: one framework says unused, the other a nonzero gradient"
            continue
        _close(f"mg.grad of leaf{k}", to_np(gm), _tg(gt))
        used.append(k)
    yield "rev"
    # second order: d/dleaf of sum(grad . v)
    used = [k for k in used if gms[k].requires_grad and gts[k].requires_grad]
    if not used:
        return
    vs = [rng.standard_normal(gms[k].shape) for k in used]
    sm = _dot([gms[k] for k in used], [mg.tensor(v) for v in vs])
    st = _dot([gts[k] for k in used], [torch.tensor(v) for v in vs])
    hms, hts = both("grad of grad", lambda: mg.grad(sm, ms, allow_unused=True),
                    lambda: torch.autograd.grad(st, tsr, allow_unused=True))
    for k, (hm, ht) in enumerate(zip(hms, hts, strict=True)):
        hm = np.zeros(ms[k].shape) if hm is None else to_np(hm)
        ht = np.zeros(ms[k].shape) if ht is None else _tg(ht)
        _close(f"second-order grad of leaf{k}", hm, ht)
    yield "rev over rev"


# -- the function transforms ------------------------------------------------------------------
# Each composition is written once, against a "lib" (its jvp, grad, tensor), and run three ways:
# minigrad (``mg.func``), the oracle (``torch.func``), and, only when those two disagree, a second
# opinion: the same composition in PyTorch's reverse mode alone (``REVTORCH``: ``_rev_jvp`` and
# ``_rev_grad``), which checks the oracle itself (``run_program``'s ``fail``).

class _Lib:
    def __init__(self, name, tensor, jvp, grad, hvp=None):
        self.name, self.tensor, self.jvp, self.grad, self.hvp = name, tensor, jvp, grad, hvp


def _rev_jvp(F, xs, us):
    """``torch.func.jvp``'s result by reverse mode only (the double-vjp trick): J u = d/dv <J^T v, u>,
    every backward recorded (``create_graph``), so an outer reverse pass or another ``_rev_jvp``
    differentiates it. Inputs that require grad (an outer level's) are used as they are."""
    xs = [x if x.requires_grad else x.detach().requires_grad_() for x in xs]
    outs = F(*xs)
    ts = [torch.zeros_like(o) for o in outs]
    live = [k for k, o in enumerate(outs) if o.requires_grad]
    if live:
        vs = [torch.zeros_like(outs[k], requires_grad=True) for k in live]
        gs = torch.autograd.grad([outs[k] for k in live], xs, vs, create_graph=True, allow_unused=True)
        s = _dot([g for g in gs if g is not None], [u for g, u in zip(gs, us, strict=True) if g is not None])
        if s is not None and s.requires_grad:
            for k, t in zip(live, torch.autograd.grad(s, vs, create_graph=True, allow_unused=True), strict=True):
                if t is not None:
                    ts[k] = t
    return tuple(outs), tuple(ts)


def _rev_grad(f, argnums):
    """``torch.func.grad(f, argnums)`` (argnums a tuple) by ``torch.autograd.grad(create_graph=True)``."""
    def g(*args):
        args = list(args)
        for i in argnums:
            if not args[i].requires_grad:
                args[i] = args[i].detach().requires_grad_()
        out = f(*args)
        xs = [args[i] for i in argnums]
        gs = (torch.autograd.grad(out, xs, create_graph=True, allow_unused=True) if out.requires_grad
              else [None] * len(xs))
        return tuple(torch.zeros_like(x) if gx is None else gx for gx, x in zip(gs, xs, strict=True))
    return g


MG = _Lib("minigrad", mg.tensor, mg.func.jvp, mg.func.grad, mg.func.hvp)
TORCH = _Lib("torch.func", torch.tensor, torch.func.jvp, torch.func.grad)
REVTORCH = _Lib("torch reverse mode (double-vjp)", torch.tensor, _rev_jvp, _rev_grad)


def _compositions(prog, ws, rng):
    """The forward-mode and mixed compositions of the replayed program ``F``: name -> a function of
    a lib returning the results as (label, tensor) pairs, the same labels for every lib."""
    n = len(prog.leaves)
    shapes = [p.shape for p in prog.leaves]
    xs = [to_np(p.m) for p in prog.leaves]
    us, u2s, u3s = ([rng.standard_normal(s) for s in shapes] for _ in range(3))
    outn = [f"output {k}" for k in range(len(prog.outs))]
    leafn = [f"leaf{k}" for k in range(n)]
    tann = [f"tangent of leaf{k}" for k in range(n)]
    every, primals = tuple(range(2 * n)), tuple(range(n))

    def args(L, *groups):
        return tuple(L.tensor(a) for g in groups for a in g)

    def F(L):
        return prog.fn("m" if L is MG else "t")

    def W(L):
        return [L.tensor(w) for w in ws]

    def labelled(what, names, ts):
        ts = tuple(ts)
        assert len(ts) == len(names), f"{what}: {len(ts)} results, expected {len(names)}"
        return [(f"{what} {k}", t) for k, t in zip(names, ts, strict=True)]

    def fwd(L):
        o, j = L.jvp(F(L), args(L, xs), args(L, us))
        return labelled("jvp: primal of", outn, o) + labelled("jvp: tangent of", outn, j)

    def rev_over_fwd(L):
        f, w = F(L), W(L)

        def g(*a):
            return _dot(L.jvp(f, a[:n], a[n:])[1], w)

        return labelled("grad of <jvp tangent, w> w.r.t.", leafn + tann, L.grad(g, every)(*args(L, xs, us)))

    def fwd_over_fwd(L):
        f = F(L)

        def h(*a):
            return L.jvp(f, a[:n], a[n:])[1]

        o, j = L.jvp(h, args(L, xs, us), args(L, u2s, u3s))
        return labelled("inner jvp tangent of", outn, o) + labelled("outer jvp tangent of the inner tangent of", outn, j)

    def fwd_over_rev(L):
        f, w = F(L), W(L)

        def loss(*a):
            return _dot(f(*a), w)

        g, hv = L.jvp(L.grad(loss, primals), args(L, xs), args(L, us))
        # mg.func.hvp is its own code path (no reverse pass differentiates the tangents): it is held
        # to the same oracle as minigrad's jvp of grad
        hv2 = L.hvp(loss, args(L, xs), args(L, us))[1] if L.hvp else hv
        return (labelled("jvp of grad: grad of", leafn, g) + labelled("jvp of grad: hvp of", leafn, hv)
                + labelled(f"{'mg.func.hvp' if L.hvp else 'jvp of grad'}: hvp of", leafn, hv2))

    return {"fwd": fwd, "rev over fwd": rev_over_fwd, "fwd over fwd": fwd_over_fwd, "fwd over rev": fwd_over_rev}


def _arr(x):
    return to_np(x) if isinstance(x, mg.Tensor) else _tg(x)


def _compare(what, ms, ts):
    for (label, m), (_, t) in zip(ms, ts, strict=True):
        _close(f"{what}: {label}", _arr(m), _arr(t))


def _second_opinion(comp, run, mres, tres):
    """Run ``comp`` in PyTorch's reverse mode alone; returns (whether minigrad's results ``mres``
    match it, a line for the report). ``tres``: torch.func's results (None when it raised)."""
    who = f"second opinion, {REVTORCH.name}"
    try:
        rres = run(REVTORCH)
    except Exception as e:  # noqa: BLE001 - a second opinion may be unavailable
        return False, f"{who}: raised {type(e).__name__}: {str(e)[:200]}"
    if mres is not None:
        try:
            _compare(comp, mres, rres)
            return True, f"{who}: agrees with minigrad"
        except AssertionError:
            pass
    if tres is not None:
        try:
            _compare(comp, tres, rres)
            return False, f"{who}: agrees with torch.func"
        except AssertionError as e:
            return False, f"{who}: agrees with neither; against torch.func: {str(e)[:400]}"
    return False, f"{who}: ran, and disagrees with minigrad"


def _quiet(run, lib):
    """``run(lib)``, or None where it raises."""
    try:
        return run(lib)
    except Exception:  # noqa: BLE001 - the disagreement already says who raised
        return None


class Result:
    """What one program found: the ops it used, and per composition its outcome."""

    def __init__(self, seed):
        self.seed = seed
        self.ops = []
        self.passed = []       # compositions that agreed
        self.refused = []      # (composition, why): both frameworks raised
        self.artifacts = []    # (composition, artifact name, message)
        self.failures = []     # (composition, message): disagreements
        self.writes = False    # whether the program writes in place
        self.size = 0          # lines in its report (the shortest failing program is shown)


def run_program(seed):
    """Build one program from ``seed`` and compare it with PyTorch in every composition."""
    res = Result(seed)
    rng = np.random.default_rng(seed)
    prog = Program(rng)

    def fail(comp, e, run=None):
        art = _artifact(prog, comp, e)
        second = ""
        if art is None and run is not None:
            mres, tres = (_quiet(run, MG), _quiet(run, TORCH))
            agree, second = _second_opinion(comp, run, mres, tres)
            known = sorted(set(prog.ops) & set(_TORCH_FUNC_WRONG))
            if agree and known:
                art = "torch.func wrong through det/slogdet/solve/eigh (_TORCH_FUNC_WRONG)"
                second = f"{second}; ops of _TORCH_FUNC_WRONG in the program: {known}"
            elif agree and "cumprod" in prog.ops and _torch_nan_only(e):
                # torch.func differentiates torch's forward-mode rule of cumprod, which divides by the
                # input: where the input is 0 (relu, sign, round before it) that is 0/0 = NaN; torch's own
                # reverse mode (double vjp) gives the number minigrad gives
                art = "torch.func NaN through cumprod's forward rule at a zero input"
            elif agree and tres is None and _FUNC_REFUSES_WRITE in str(e):
                # torch.func alone refuses the program (its transforms wrap the tangents as leaves, and a
                # write into a view of a tensor written before then counts as a write into a leaf); torch's
                # own reverse mode runs the same composition and agrees with minigrad
                art = "torch.func refuses an in-place write that torch's reverse mode accepts"
            elif agree:
                second += (" (torch.func disagrees with torch's own reverse mode: a torch.func error? if so, "
                           "name the op in _TORCH_FUNC_WRONG, with the check that shows it)")
        if art is not None:
            res.artifacts.append((comp, art, f"{prog.report()}\n{e}\n{second}"))
            return
        res.failures.append((comp, f"program seed {seed} disagrees with PyTorch in {comp!r} "
                                   f"(MINIGRAD_FUZZ_PROGRAM={seed} replays it; {_LEGEND}):\n{prog.report()}\n{e}"
                                   + (f"\n{second}" if second else "")))

    try:
        prog.build(int(rng.integers(3, 9)))
    except Refused:
        return res
    except AssertionError as e:
        res.ops, res.writes, res.size = prog.ops, prog.writes(), len(prog.lines)
        fail("values", e)
        return res
    res.ops, res.writes, res.size = prog.ops, prog.writes(), len(prog.lines)
    prog.outs = [p for p in prog.pool[-2:] if p.m.requires_grad]
    if not prog.outs or not prog.leaves:
        return res
    try:
        for p in prog.pool:
            _close(f"value {p.name}", to_np(p.m), _tg(p.t))
        res.passed.append("values")
    except AssertionError as e:
        fail("values", e)
    if any(np.isnan(to_np(p.m)).any() and torch.isnan(p.t).any() for p in prog.outs):
        prog.flags.add("NaN output")
    ws = [rng.standard_normal(p.shape) for p in prog.outs]
    done = None
    try:
        for done in _check_reverse(prog, ws, np.random.default_rng([seed, 1])):
            res.passed.append(done)
    except Refused as e:
        res.refused.append(("rev" if done is None else "rev over rev", str(e)))
    except AssertionError as e:
        fail("rev" if done is None else "rev over rev", e)
    for comp, run in _compositions(prog, ws, np.random.default_rng([seed, 2])).items():
        try:
            mres, tres = both(f"{comp}: mg.func / torch.func", lambda run=run: run(MG), lambda run=run: run(TORCH))
            _compare(comp, mres, tres)
            res.passed.append(comp)
        except Refused as e:
            res.refused.append((comp, str(e)))
        except AssertionError as e:
            fail(comp, e, run)
    return res


def test_random_programs_match_torch():
    start = time.perf_counter()
    if ONLY:
        seeds = [int(ONLY)]
    else:
        seeds = [int(s) for s in np.random.default_rng(SEED).integers(2**31, size=N_PROGRAMS)]
    used = {}
    refused = 0
    passed, refusals, artifacts, failures = {}, {}, {}, {}
    inplace = {}  # composition -> disagreeing programs that write in place
    shortest = {}  # composition -> (size, message) of its shortest disagreeing program
    with np.errstate(all="ignore"):
        for s in seeds:
            res = run_program(s)
            refused += not res.ops
            for o in res.ops:
                used[o] = used.get(o, 0) + 1
            for c in res.passed:
                passed[c] = passed.get(c, 0) + 1
            for c, _ in res.refused:
                refusals[c] = refusals.get(c, 0) + 1
            for c, a, _ in res.artifacts:
                artifacts[(c, a)] = artifacts.get((c, a), 0) + 1
            for c, msg in res.failures:
                failures.setdefault(c, []).append(s)
                inplace[c] = inplace.get(c, 0) + res.writes
                if c not in shortest or res.size < shortest[c][0]:
                    shortest[c] = (res.size, msg)
    n = len(seeds)

    def table(d):
        return ", ".join(f"{k}: {v}" for k, v in sorted(d.items())) or "none"

    summary = (f"fuzz: {n} programs ({time.perf_counter() - start:.1f} s), {sum(used.values())} registry ops "
               f"({len(used)} distinct), {refused} refused by both\n"
               f"  agreed, per composition: {table(passed)}\n"
               f"  refused by both, per composition: {table(refusals)}\n"
               f"  oracle artifacts: {table({f'{c}: {a}': v for (c, a), v in artifacts.items()})}\n"
               f"  DISAGREEMENTS, per composition (programs; of them with in-place writes): "
               f"{table({c: f'{len(v)}; {inplace[c]}' for c, v in failures.items()})}")
    print(summary)
    for c, ss in sorted(failures.items()):
        print(f"  {c}: program seeds {ss}")
    assert not failures, summary + "\n\n" + "\n\n".join(
        f"=== the shortest of the {len(failures[c])} programs that disagree in {c!r} (seeds {failures[c][:20]}"
        f"{' ...' if len(failures[c]) > 20 else ''}) ===\n{shortest[c][1]}"
        for c in COMPOSITIONS if c in failures)
    if not ONLY:
        assert refused < n / 4, f"{refused} of {n} programs refused by both frameworks"
    if n >= 100:
        missing = set(OPS) - set(used)
        assert len(missing) <= len(OPS) // 3, f"ops never drawn: {sorted(missing)}"


def test_registry_ops_drawn_by_the_fuzzer_exist():
    assert len(OPS) >= 30, OPS
    for name in OPS:
        assert REG[name].samples is not None, name


# ---------------------------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------------------------

ALLOWED = (TypeError, ValueError, IndexError, RuntimeError)


def _bad_values(rng):
    """Values that are wrong for almost every parameter."""
    return [None, "abc", object(), 1.5, -99, 99, (1, "a"), [None], {"a": 1}, 1 + 2j,
            mg.ones((5, 7)), mg.ones(()), np.array(["x"]), np.array([1, 2], dtype=object),
            mg.tensor([1, 2, 3]), slice(None), Ellipsis, float("nan")]


def _op_names():
    """Function name -> the names a message may use (the function, its op, its Tensor methods)."""
    names = {}
    for op in REG.values():
        if op.frontend is None:
            continue
        fn = op.frontend
        ns = names.setdefault(fn, {fn.__name__.strip("_"), op.name})
        ns.update(m.strip("_") for m in op.method)
        if op.export:
            ns.add(op.export)
    return names


NAMES = _op_names()


# Functions whose messages for some invalid arguments may still come from the helpers they call
# without naming them: none left (issue 18 named them all: ``named`` in ops/elementwise.py prefixes
# the public name, e.g. ``transpose: permute: ...``). A name added here needs a comment saying why.
UNNAMED = frozenset()


def _callables():
    out = [(f"mg.{name}", fn) for name, fn in sorted(mg.ops.exports().items())]
    for op in sorted(REG.values(), key=lambda o: o.name):
        for m in op.method:
            if m in ("cuda", "to", "cpu"):  # device moves: no CuPy here (tests/test_device.py)
                continue
            out.append((f"Tensor.{m}", getattr(mg.Tensor, m)))
    return out


def _good_x(rng):
    return mg.tensor(rng.standard_normal((2, 3)), requires_grad=True)


def _check_one(label, fn, args, kwargs):
    try:
        with np.errstate(all="ignore"):
            fn(*args, **kwargs)
    except ALLOWED as e:
        msg = str(e)
        names = NAMES.get(fn, {fn.__name__.strip("_")}) | {label.split(".")[-1]}
        if not any(n in msg for n in names) and label not in UNNAMED:
            return f"{label}{_fmt(args, kwargs)}: {type(e).__name__} message does not name {sorted(names)}: {msg!r}"
    except Exception as e:  # noqa: BLE001 - the point of the test
        return f"{label}{_fmt(args, kwargs)} raised {type(e).__name__}: {e}"
    return None


def _fmt(args, kwargs):
    def short(a):
        return f"Tensor{tuple(a.shape)}" if isinstance(a, mg.Tensor) else repr(a)[:30]

    return "(" + ", ".join([short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]) + ")"


def test_invalid_arguments_raise_named_errors():
    rng = np.random.default_rng(SEED)
    rounds = max(2, N_PROGRAMS // 50)
    bad = _bad_values(rng)
    failures = []

    def _check_call(*a):
        r = _check_one(*a)
        if r is not None and r not in failures:
            failures.append(r)

    for label, fn in _callables():
        for _ in range(rounds):
            for b in bad:
                x = _good_x(rng)
                is_method = label.startswith("Tensor.")
                # a bad value as the tensor itself (functions), as the second argument, as a keyword
                if not is_method:
                    _check_call(label, fn, (b,), {})
                _check_call(label, fn, (x, b), {})
                _check_call(label, fn, (x, x, b), {})
                kw = ["axis", "dim", "keepdims", "shape", "dtype", "min", "max"][rng.integers(7)]
                _check_call(label, fn, (x,), {kw: b})
            # mismatched shapes
            _check_call(label, fn, (_good_x(rng), mg.ones((4, 5))), {})
    assert not failures, f"{len(failures)} bad calls:\n" + "\n".join(failures)
    assert mg.is_grad_enabled()
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [2.0, 4.0])
