"""A measure of gradcheck itself: every op's gradient rule (VJP) and forward-mode rule (JVP) is
corrupted in turn, and the checker runs on the op's own samples in the corrupted rule's mode
(``fast=True``, order 1). The score is the fraction of corruptions caught; it must stay >= 99%.

The corruptions (each wraps ``op.rule`` or ``op.jvp`` through monkeypatch; no file is edited):

- ``flip``: every gradient (tangent) negated;
- ``x1.5``, ``x2``: every gradient (tangent) scaled;
- ``transpose``: a 2-D square output's cotangent is transposed before the rule reads it (VJP),
  or the 2-D square tangent the rule returns is transposed (JVP);
- ``drop i``: the gradient of input ``i`` is zeroed (VJP), or input ``i``'s tangent is dropped, so
  its term of the sum is missing (JVP); for ops with two or more Tensor inputs.
- ``drop conj`` (complex numbers, on the complex samples of every op that takes them): a holomorphic
  op's gradient rule loses the conjugates the engine places (its text ``g f'(x)`` as it stands,
  where PyTorch's convention wants ``g conj(f'(z))``); any other op's gradient or tangent is
  conjugated (a conjugate dropped or misplaced in its text).

A corruption that never fires on the samples (no square output, an input that never needs a
gradient) does not apply. One that fires but changes no value (a zero gradient flipped) is an
escape all the same: the samples cannot see that fault. Only the derivatives that are zero
everywhere (``ZERO``: no input could tell a corrupted rule from the right one) are left out, and
the test checks that those corruptions really change nothing on every sample.

A second measure holds order 2 to the two paths every rule has: each rule scaled by 1.5 only where
it runs on Tensors (when differentiated again; order 1 runs it on arrays and cannot see that),
checked at order 2 (fast).

Run it alone to see the table: ``pytest -s tests/test_gradcheck_mutations.py``.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad.engine import TENSORS
from minigrad.ops._registry import conj
from test_registry import REG, _call, _inputs

# derivatives that are zero wherever they exist, so that a corrupted rule is the same rule: op ->
# the inputs concerned (None: all of them, the op is piecewise constant)
ZERO = {"sign": None, "floor": None, "ceil": None, "trunc": None, "rint": None, "round": None,
        "floor_divide_": None, "floor_": None, "ceil_": None, "round_": None,  # (their in-place forms)
        "copy_": (0,), "fill_": (0,),  # the destination is overwritten: no gradient reaches it
        "copysign": (1,)}              # only the sign of y is read

SCALES = {"flip": -1.0, "x1.5": 1.5, "x2": 2.0}

OPS = sorted(name for name, e in REG.items() if e.forward is not None and e.rule is not None and e.samples)
COMPLEX_OPS = [name for name in OPS if REG[name].complex]


def _host(r):
    if r is None:
        return None
    a = mg.backend.to_numpy(r.data if isinstance(r, mg.Tensor) else r)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _differs(a, b):
    """Whether two rule results (tuples of arrays/Tensors/None) hold different values."""
    for x, y in zip(a, b, strict=True):
        hx, hy = _host(x), _host(y)
        if (hx is None) != (hy is None):
            if not np.all((hx if hx is not None else hy) == 0):
                return True
        elif hx is not None and not np.allclose(hx, hy, rtol=1e-12, atol=1e-14, equal_nan=True):
            return True
    return False


def _square(a):
    """2-D and square, larger than 1 x 1 (whose transpose is itself)."""
    return getattr(a, "ndim", 0) == 2 and a.shape[0] == a.shape[1] > 1


class Mutant:
    """One corruption of one op's rule: ``wrap(rule)`` gives the corrupted rule; ``fired`` says it
    changed what the rule was handed or returned at least once, ``changed`` that the values differed."""

    def __init__(self, op, mode, kind, at=None, tensors_only=False):
        self.op, self.mode, self.kind, self.at = op, mode, kind, at
        self.tensors_only = tensors_only  # corrupt the rule only where it runs on Tensors (higher order)
        self.fired = self.changed = False

    @property
    def label(self):
        return f"{self.op} {self.mode} {self.kind}" + ("" if self.at is None else f" {self.at}")

    def _outcome(self, good, bad):
        self.fired = True
        self.changed = self.changed or _differs(good, bad)

    def wrap_vjp(self, rule):
        def corrupted(ctx, g, **params):
            good = tuple(rule(ctx, g, **params))
            if self.tensors_only and ctx.xp is not TENSORS:
                return good
            if self.kind in SCALES:
                c = SCALES[self.kind]
                bad = tuple(None if r is None else r * c for r in good)
            elif self.kind == "transpose":
                if not _square(g):
                    return good
                bad = tuple(rule(ctx, g.T, **params))
            elif self.kind == "drop conj":
                if not _complex(good):  # a real gradient: no conjugate to drop
                    return good
                raw = getattr(rule, "real_rule", None)  # a holomorphic op's text, without the engine's conjugates
                bad = tuple(raw(ctx, g, **params)) if raw is not None else tuple(map(_conj, good))
            else:  # drop
                if len(good) <= self.at or good[self.at] is None:
                    return good
                bad = tuple(r * 0 if k == self.at else r for k, r in enumerate(good))
            if any(r is not None for r in bad):
                self._outcome(good, bad)
            return bad

        return corrupted

    def wrap_jvp(self, jvp):
        def corrupted(ctx, *ts, **params):
            good = jvp(ctx, *ts, **params)
            if self.tensors_only and ctx.xp is not TENSORS:
                return good
            many = isinstance(good, (tuple, list))
            goods = tuple(good) if many else (good,)
            if self.kind in SCALES:
                c = SCALES[self.kind]
                bads = tuple(None if r is None else r * c for r in goods)
            elif self.kind == "transpose":
                if many or not _square(good):
                    return good
                bads = (good.T,)
            elif self.kind == "drop conj":
                if not _complex(goods):
                    return good
                bads = tuple(map(_conj, goods))
            else:  # drop input `at`'s term
                if self.at >= len(ts) or ts[self.at] is None:
                    return good
                rest = list(ts)
                rest[self.at] = None
                if all(t is None for t in rest):  # no term left: a zero tangent (rules are not called so)
                    bads = (None,) * len(goods)
                else:
                    bad = jvp(ctx, *rest, **params)
                    bads = tuple(bad) if many else (bad,)
            if any(r is not None for r in goods):
                self._outcome(goods, bads)
            return type(good)(bads) if many else bads[0]

        return corrupted


def _conj(r):
    return None if r is None else conj(r)


def _complex(rs):
    return any(r is not None and getattr(r, "dtype", np.dtype(float)).kind == "c" for r in rs)


def _float_inputs(op, device):
    """The positions of floating Tensor inputs in any sample, and the most in one sample."""
    at, most = set(), 0
    for s in op.samples(np.random.default_rng(0)):
        here = {k for k, x in enumerate(_inputs(s, device)) if isinstance(x, mg.Tensor) and x.dtype.kind == "f"}
        at |= here
        most = max(most, len(here))
    return sorted(at), most


def _mutants(name, device):
    at, most = _float_inputs(REG[name], device)
    out = []
    for mode in ("rev", "fwd"):
        kinds = [(k, None) for k in (*SCALES, "transpose")]
        if most >= 2:
            kinds += [("drop", i) for i in at]
        out += [Mutant(name, mode, k, i) for k, i in kinds]
    return out


def _cases(name, device, complex_samples=False):
    op = REG[name]
    cases = []
    rng = np.random.default_rng(0)
    for sample in op.complex_samples(rng) if complex_samples else op.samples(rng):
        xs = _inputs(sample, device)
        if any(isinstance(x, mg.Tensor) and x.requires_grad for x in xs):
            cases.append((_call(op, sample, device), xs))
    return cases


def _check(cases, mode, order=1):
    """True when the checker passes every sample (the corruption escapes)."""
    return all(mg.gradcheck(fn, xs, modes=(mode,), fast=True, locate=False, raise_exception=False, order=order)
               for fn, xs in cases)


def _run(device, monkeypatch, mutants=None, order=1, complex_samples=False):
    results = {"caught": [], "escaped": [], "equivalent": [], "skipped": [], "inapplicable": []}
    for name in COMPLEX_OPS if complex_samples else OPS:
        entry = REG[name]
        cases = _cases(name, device, complex_samples)
        if not cases:
            continue
        ok = {}
        for mode in ("rev", "fwd"):
            if mode == "fwd" and entry.jvp is None:
                ok[mode] = f"{name}: no forward-mode rule yet"
                continue
            try:
                ok[mode] = True if _check(cases, mode, order) else f"{name}: the right rules fail the {mode} check"
            except Exception as e:  # noqa: BLE001 - reported: the op cannot be measured in this mode
                ok[mode] = f"{name} ({mode}): {type(e).__name__}: {str(e)[:100]}"
        for m in (mutants or _mutants)(name, device):
            if ok[m.mode] is not True:
                results["skipped"].append((m, ok[m.mode]))
                continue
            attr = "rule" if m.mode == "rev" else "jvp"
            with monkeypatch.context() as patch:
                patch.setattr(entry.op, attr, (m.wrap_vjp if m.mode == "rev" else m.wrap_jvp)(getattr(entry.op, attr)))
                twin = entry.op.twin  # a holomorphic op's rule for complex outputs: what those Nodes run
                if attr == "rule" and twin is not None:
                    patch.setattr(twin, "rule", m.wrap_vjp(twin.rule))
                try:
                    escaped = _check(cases, m.mode, order)
                except Exception as e:  # noqa: BLE001 - a corrupted rule that breaks the run is seen
                    escaped, m.error = False, f"{type(e).__name__}: {str(e)[:80]}"
            if not m.fired:
                results["inapplicable"].append(m)
                continue  # does not apply to these samples
            if not escaped:
                results["caught"].append(m)
            elif _equivalent(m):
                results["equivalent"].append(m)
            else:
                results["escaped"].append(m)
    return results


def _equivalent(m):
    """A corruption of a derivative that is zero everywhere (ZERO)."""
    if m.op not in ZERO:
        return False
    return ZERO[m.op] is None or (m.kind == "drop" and m.at in ZERO[m.op])


def _why(m):
    if not m.changed:
        return "the corrupted rule returns the same values on every sample: the samples cannot see this fault"
    return "the values changed but the checker passed"


def _score(res):
    caught, escaped = res["caught"], res["escaped"]
    total = len(caught) + len(escaped)
    return caught, escaped, total, (len(caught) / total if total else 1.0)


def test_gradcheck_catches_corrupted_rules(device, monkeypatch):
    res = _run(device, monkeypatch)
    caught, escaped, total, score = _score(res)
    print(f"\ngradcheck mutation score: {len(caught)}/{total} = {score:.4f} (fast=True, order 1, on {device})")
    for mode in ("rev", "fwd"):
        c = sum(m.mode == mode for m in caught)
        t = c + sum(m.mode == mode for m in escaped)
        print(f"  {mode}: {c}/{t} caught")
    kinds = sorted({m.kind for m in caught + escaped})
    print("  by kind: " + ", ".join(f"{k} {sum(m.kind == k for m in caught)}/{sum(m.kind == k for m in caught + escaped)}"
                                    for k in kinds))
    errors = [m for m in caught if getattr(m, "error", None)]
    if errors:  # a corrupted rule that made the run raise (a shape the engine refuses): seen, not checked
        print(f"  caught by an error, not by a comparison ({len(errors)}): "
              + "; ".join(f"{m.label} ({m.error})" for m in errors))
    print(f"escapes ({len(escaped)}):")
    for m in escaped:
        print(f"  {m.label}: {_why(m)}")
    zero_changed = [m.label for m in res["equivalent"] if m.changed]
    print(f"left out ({len(res['equivalent'])}): corruptions of derivatives that are zero everywhere: "
          + ", ".join(m.label for m in res["equivalent"]))
    flat = sorted({m.op for m in res["inapplicable"] if m.kind == "transpose" and m.mode == "rev"})
    print(f"transpose does not apply (no sample's output is 2-D and square) to {len(flat)} ops: {', '.join(flat)}")
    skipped = sorted({why for _, why in res["skipped"]})
    print(f"not measured ({len(res['skipped'])} corruptions): " + "; ".join(skipped))
    assert not zero_changed, f"ZERO lists derivatives that are not zero on the samples: {zero_changed}"
    assert total > 0
    assert score >= 0.99, f"mutation score {score:.4f} < 0.99; escapes: {[m.label for m in escaped]}"


def _tensor_path_mutants(name, device):
    return [Mutant(name, mode, "x1.5", tensors_only=True) for mode in ("rev", "fwd")]


def test_order_2_catches_rules_whose_tensor_path_is_corrupted(device, monkeypatch):
    """A rule runs on arrays in first order and on Tensors when differentiated again: each op's rule
    is scaled by 1.5 on its Tensor path only (order 1 cannot see that), and order 2 (fast) must."""
    res = _run(device, monkeypatch, _tensor_path_mutants, order=2)
    caught, escaped, total, score = _score(res)
    print(f"\ntensor-path corruptions caught at order 2: {len(caught)}/{total} = {score:.4f} (on {device})")
    for m in escaped:
        print(f"  escaped: {m.label} (tensor path): {_why(m)}")
    assert total > 0
    assert score >= 0.99, f"score {score:.4f} < 0.99; escapes: {[m.label for m in escaped]}"


def _conj_mutants(name, device):
    return [Mutant(name, mode, "drop conj") for mode in ("rev", "fwd")]


def test_gradcheck_catches_dropped_conjugates(device, monkeypatch):
    """Every op that takes complex numbers, on its complex samples: a gradient rule that drops its
    conjugates (a holomorphic op's text as it stands), or a gradient or tangent conjugated, is caught.
    A corruption that changes no value (an op whose derivative is real: sum, reshape, indexing) is
    inapplicable, not an escape."""
    res = _run(device, monkeypatch, _conj_mutants, complex_samples=True)
    caught, escaped, total, score = _score(res)
    print(f"\ndropped conjugates caught: {len(caught)}/{total} = {score:.4f} (fast=True, order 1, on {device})")
    for mode in ("rev", "fwd"):
        c = sum(m.mode == mode for m in caught)
        print(f"  {mode}: {c}/{c + sum(m.mode == mode for m in escaped)} caught")
    for m in escaped:
        print(f"  escaped: {m.label}: {_why(m)}")
    unchanged = sorted({m.label for m in res["inapplicable"]})
    print(f"no value changed (a real derivative) ({len(unchanged)}): {', '.join(unchanged)}")
    assert total > 0
    assert score >= 0.99, f"score {score:.4f} < 0.99; escapes: {[m.label for m in escaped]}"
