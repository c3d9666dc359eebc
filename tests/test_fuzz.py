"""Differential fuzzing against PyTorch (issue 18), in float64.

``test_random_programs_match_torch``: random programs of 3-8 ops drawn from the op registry
(every entry with a forward and a ``.torch`` oracle; the shapes and keyword arguments of its
``.samples`` are the templates, elementwise ones also get random broadcastable shapes), mixed
with random views (slices, transposes, reshapes) and in-place writes (``add_``, ``mul_``,
``setitem``) on non-leaf clones and their views, stale views included. Each program runs in
minigrad and, step by step, in PyTorch; values, first-order gradients (random upstream
weights; plain ``backward`` and ``mg.grad(create_graph=True)``) and second-order gradients
(the gradient of ``grad . v``) must agree at rtol 1e-9.

``test_invalid_arguments_raise_named_errors``: random invalid arguments to every function in
``mg.ops.exports()`` and every registered Tensor method: a call may succeed (the argument was
valid after all) or raise TypeError / ValueError / IndexError / RuntimeError (or minigrad's
subclasses) whose message names the function (or its op); never another exception type. Grad
mode and a small backward still work afterwards.

Fixed seed; ``MINIGRAD_FUZZ_EXAMPLES=N`` sets the number of programs (default 150) and of
bad-input rounds, for long runs. A disagreement prints the program, replayable by its seed.
"""
import os

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import run_op

from conftest import to_np

torch = pytest.importorskip("torch")

N_PROGRAMS = int(os.environ.get("MINIGRAD_FUZZ_EXAMPLES", "150"))
SEED = int(os.environ.get("MINIGRAD_FUZZ_SEED", "20240518"))
RTOL = 1e-9

REG = mg.ops.registry()
OPS = sorted(name for name, op in REG.items() if op.torch is not None and op.forward is not None)
# ops whose domain is narrower than the positive values ``positive`` gives
DOMAINS = {"arcsin": "unit", "arccos": "unit", "arctanh": "unit", "arccosh": "above1"}


class Refused(Exception):
    """Both frameworks refused a step (the same program is invalid in both): not a disagreement."""


# ---------------------------------------------------------------------------------------------
# values in both frameworks
# ---------------------------------------------------------------------------------------------

class Pair:
    """One value of a program: the minigrad Tensor and the PyTorch tensor computed the same way."""

    __slots__ = ("m", "t", "what")

    def __init__(self, m, t, what):
        self.m, self.t, self.what = m, t, what

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


class Program:
    """A random program, built and run at once in minigrad and PyTorch."""

    def __init__(self, rng):
        self.rng = rng
        self.pool = []     # Pairs: every value so far
        self.leaves = []   # Pairs that require grad
        self.lines = []    # what ran, for the report
        self.ops = []      # registry ops used

    # -- building blocks ---------------------------------------------------------------------
    def leaf(self, shape, grad=True, positive=False):
        a = self.rng.standard_normal(shape)
        if positive:
            a = np.abs(a) + 0.5
        m = mg.tensor(a, requires_grad=grad)
        t = torch.tensor(a, requires_grad=grad)
        p = Pair(m, t, f"leaf{len(self.leaves)}{shape}" if grad else f"const{shape}")
        if grad:
            self.leaves.append(p)
        self.lines.append(f"{p.what} = randn{shape}")
        return p

    def push(self, p):
        self.pool.append(p)
        self.lines.append(f"v{len(self.pool) - 1} = {p.what}  # {p.shape}")
        return p

    def tame(self, p):
        """Keep values in a range where chains of exp/pow stay finite: 3 tanh(x / 3) past 20."""
        if np.abs(to_np(p.m)).max(initial=0) <= 20:
            return p
        m, t = both("tame", lambda: mg.tanh(p.m / 3.0) * 3.0, lambda: torch.tanh(p.t / 3.0) * 3.0)
        return Pair(m, t, f"tame({p.what})")

    def positive(self, p):
        """A value in (0.5, 1.5), for an argument with a domain (log, sqrt, pow's base, a divisor)."""
        m, t = both("positive", lambda: mg.sigmoid(p.m) + 0.5, lambda: torch.sigmoid(p.t) + 0.5)
        return Pair(m, t, f"pos({p.what})")

    def inside(self, p, domain):
        """A value in an op's domain (``DOMAINS``): (-0.9, 0.9) ("unit") or (1.2, 2.2) ("above1")."""
        if domain == "unit":
            m, t = both("unit", lambda: mg.tanh(p.m) * 0.9, lambda: torch.tanh(p.t) * 0.9)
            return Pair(m, t, f"unit({p.what})")
        m, t = both("above1", lambda: mg.sigmoid(p.m) + 1.2, lambda: torch.sigmoid(p.t) + 1.2)
        return Pair(m, t, f"above1({p.what})")

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
            m, t = both("reshape", lambda: p.m.reshape(shape), lambda: p.t.reshape(shape))
            return Pair(m, t, f"{p.what}.reshape{tuple(shape)}")
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
        ms, ts, desc = [], [], []
        for k, a in enumerate(sample.args):
            if k in shapes:
                a = sample.args[k]
                pos = bool(a.min(initial=1.0) > 0) and name not in ("binary_cross_entropy_with_logits",)
                domain = DOMAINS.get(name)
                if domain:
                    p = self.inside(self.operand(shapes[k], grad=k not in sample.nondiff), domain)
                else:
                    p = self.operand(shapes[k], positive=pos, grad=k not in sample.nondiff)
                ms.append(p.m)
                ts.append(p.t)
                desc.append(p.what)
            elif isinstance(a, np.ndarray):
                c = sample_cond if (k == 0 and sample_cond is not None) else a
                ms.append(mg.tensor(c))
                ts.append(torch.tensor(c))
                desc.append(f"const{c.shape}")
            else:
                ms.append(a)
                ts.append(a)
                desc.append(repr(a))
        kw = dict(sample.kwargs)
        m, t = both(name, lambda: run_op(op, *ms, **kw), lambda: op.torch(torch, *ts, **kw))
        self.ops.append(name)
        return self.push(Pair(m, t, f"{name}({', '.join(desc)}{', ' if kw else ''}"
                                    f"{', '.join(f'{k}={v!r}' for k, v in kw.items())})"))

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
            m, t = both("slice", lambda: p.m[idx], lambda: p.t[idx])
            return Pair(m, t, f"{p.what}[{'...' if ax else ''}{lo}:{hi}:{step}]")
        if kind in ("slice", "transpose") and len(shape) >= 2:
            perm = tuple(int(i) for i in self.rng.permutation(len(shape)))
            m, t = both("permute", lambda: p.m.permute(*perm), lambda: p.t.permute(*perm))
            return Pair(m, t, f"{p.what}.permute{perm}")
        if kind == "reshape" and p.m.is_contiguous() and p.t.is_contiguous():
            n = int(np.prod(shape))
            divs = [d for d in range(1, n + 1) if n % d == 0]
            d = int(self.rng.choice(divs))
            new = (d, n // d) if self.rng.random() < 0.7 else (n,)
            m, t = both("reshape", lambda: p.m.reshape(new), lambda: p.t.reshape(new))
            return Pair(m, t, f"{p.what}.reshape{new}")
        m, t = both("view", lambda: p.m[...], lambda: p.t[...])
        return Pair(m, t, f"{p.what}[...]")

    def step_view(self):
        p = self.pick()
        if p is None:
            return self.step_op()
        return self.push(self.view_of(p))

    def step_write(self):
        """Clone a value, take a view of the clone, write into the clone or the view (or both):
        the other is then stale or updated through copy_slices."""
        p = self.pick()
        if p is None or not p.shape:
            return self.step_op()
        p = self.tame(p)
        m, t = both("clone", lambda: p.m.clone(), lambda: p.t.clone())
        c = Pair(m, t, f"{p.what}.clone()")
        v = self.view_of(c, writable=True)
        targets = [c, v] if self.rng.random() < 0.3 else [[c, v][self.rng.integers(2)]]
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
                both(kind, lambda: getattr(target.m, kind)(s), lambda: getattr(target.t, kind)(s))
                target.what = f"{target.what}.{kind}({s:.3f})"
            else:
                o = self.operand(self.broadcastable(shape))
                both(kind, lambda: getattr(target.m, kind)(o.m), lambda: getattr(target.t, kind)(o.t))
                target.what = f"{target.what}.{kind}({o.what})"
            self.lines.append(f"{target.what}")
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
        if self.rng.random() < 0.3:
            val = float(self.rng.standard_normal())
            vm, vt, vw = val, val, f"{val:.3f}"
        else:
            o = self.operand(self.broadcastable(sel) if self.rng.random() < 0.5 else sel)
            vm, vt, vw = o.m, o.t, o.what
        im = mg.tensor(idx) if isinstance(idx, np.ndarray) else idx
        it = torch.tensor(idx) if isinstance(idx, np.ndarray) else idx

        def wm():
            target.m[im] = vm

        def wt():
            target.t[it] = vt

        both("setitem", wm, wt)
        target.what = f"{target.what}[{idx!r}]={vw}"
        self.lines.append(target.what)

    def build(self, n_steps):
        for _ in range(n_steps):
            r = self.rng.random()
            if r < 0.65 or not self.pool:
                self.step_op()
            elif r < 0.82:
                self.step_view()
            else:
                self.step_write()

    def report(self):
        return "\n".join(self.lines)


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------

def _close(what, got, want):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch {want.shape}"
    scale = np.abs(want[np.isfinite(want)]).max(initial=1.0)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=what, equal_nan=True)


def _tg(t):
    return None if t is None else t.detach().numpy(force=True)  # force: torch.sign's zero gradient is a ZeroTensor


def run_program(seed):
    """Build one program from ``seed`` and compare it with PyTorch; returns the ops it used
    (an empty list when both frameworks refused it)."""
    rng = np.random.default_rng(seed)
    prog = Program(rng)
    try:
        prog.build(int(rng.integers(3, 9)))
        outs = [p for p in prog.pool[-2:] if p.m.requires_grad]
        if not outs or not prog.leaves:
            return prog.ops
        for k, p in enumerate(prog.pool):
            _close(f"value v{k} = {p.what}", to_np(p.m), _tg(p.t))
        ws = [rng.standard_normal(p.shape) for p in outs]
        lm = sum(((p.m * mg.tensor(w)).sum() for p, w in zip(outs, ws, strict=True)), mg.tensor(0.0))
        lt = sum(((p.t * torch.tensor(w)).sum() for p, w in zip(outs, ws, strict=True)), torch.tensor(0.0,
                                                                                                  dtype=torch.float64))
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
        # second order: d/dleaf of sum(grad . v)
        used = [k for k in used if gms[k].requires_grad and gts[k].requires_grad]
        if not used:
            return prog.ops
        vs = [rng.standard_normal(gms[k].shape) for k in used]
        sm = sum(((gms[k] * mg.tensor(v)).sum() for k, v in zip(used, vs, strict=True)), mg.tensor(0.0))
        st = sum(((gts[k] * torch.tensor(v)).sum() for k, v in zip(used, vs, strict=True)),
                 torch.tensor(0.0, dtype=torch.float64))
        hms, hts = both("grad of grad", lambda: mg.grad(sm, ms, allow_unused=True),
                        lambda: torch.autograd.grad(st, tsr, allow_unused=True))
        for k, (hm, ht) in enumerate(zip(hms, hts, strict=True)):
            hm = np.zeros(ms[k].shape) if hm is None else to_np(hm)
            ht = np.zeros(ms[k].shape) if ht is None else _tg(ht)
            _close(f"second-order grad of leaf{k}", hm, ht)
    except Refused:
        return []
    except AssertionError as e:
        raise AssertionError(f"program seed {seed} disagrees with PyTorch:\n{prog.report()}\n{e}") from None
    return prog.ops


def test_random_programs_match_torch():
    root = np.random.default_rng(SEED)
    seeds = root.integers(2**31, size=N_PROGRAMS)
    used = {}
    refused = 0
    with np.errstate(all="ignore"):
        for s in seeds:
            ops = run_program(int(s))
            refused += not ops
            for o in ops:
                used[o] = used.get(o, 0) + 1
    assert refused < N_PROGRAMS / 4, f"{refused} of {N_PROGRAMS} programs refused by both frameworks"
    if N_PROGRAMS >= 100:
        missing = set(OPS) - set(used)
        assert len(missing) <= len(OPS) // 3, f"ops never drawn: {sorted(missing)}"
    print(f"fuzz: {N_PROGRAMS} programs, {sum(used.values())} registry ops ({len(used)} distinct), "
          f"{refused} refused by both")


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
