"""einsum in two grammars, any number of operands, with backward and an optimised contraction.

Both grammars parse into one internal form: per operand a tuple of integer
labels (``...`` expanded into one label per broadcast dim), the output's
labels and each label's size. From that form a *plan* is built (and cached per
pattern and shapes) out of elementary steps, each recorded as its own Node:

1. ``reshape``: drop the size-1 dims that broadcast against a bigger size
   elsewhere (the operand is constant along that label, so it simply stops
   carrying it; in backward the contraction sums the gradient over it);
2. ``einsum_diag``: a label repeated inside one operand takes the diagonal
   (backward: ``einsum_undiag`` scatters onto the diagonal; each is the
   other's gradient);
3. ``sum``: labels that only this operand has and the output lacks;
4. ``einsum``: pairwise contractions, in the order ``opt_einsum`` (when
   installed) or ``np.einsum_path`` chooses, each mapped onto one batched
   ``matmul`` (transpose + reshape to (batch, M, K) @ (batch, K, N)) or, with
   nothing to contract, onto a broadcasting multiply. Its gradient for either
   operand is again a pairwise contraction, of the upstream gradient with the
   other operand, so rules are minigrad ops and ``create_graph`` works;
5. ``permute`` into the output's order when needed.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _batched
from .. import backend as _be
from .. import kernels as _k
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, defop, linear_jvp, multilinear_jvp, public
from .einsum_parse import _LETTERS, _err, _resolve

__all__ = ["einsum"]


# ---------------------------------------------------------------------------
# the plan: elementary steps, built once per (pattern, shapes)
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _pattern_of(la, lb, lout, names=None):
    """A label-tuple triple as text for the tape and graphs: in the user's own names when
    ``names`` is given (einops grammar: space-separated), else as NumPy-grammar letters."""
    if names is not None:
        if any(n.startswith("...") for n in names):  # einops: '...' dims as …0, …1
            names = tuple("…" + n[3:] if n.startswith("...") else n for n in names)
        sep = " " if any(len(n) > 1 for n in names) else ""
        term = lambda labs: sep.join(names[i] for i in labs)  # noqa: E731
        arrow = " -> " if sep else "->"
        return (", " if sep else ",").join(term(t) for t in ((la,) if lb is None else (la, lb))) + arrow + term(lout)
    f = "".join
    if lb is None:
        return f"{f(_LETTERS[i] for i in la)}->{f(_LETTERS[i] for i in lout)}"
    return (f"{f(_LETTERS[i] for i in la)},{f(_LETTERS[i] for i in lb)}->"
            f"{f(_LETTERS[i] for i in lout)}")


def _path(labels, size, out, optimize, pattern, shapes):
    """Contraction order for 3+ operands: a list of tuples of positions (einsum_path's format)."""
    n = len(labels)
    if optimize is False:
        return [(0, 1)] * (n - 1)
    if isinstance(optimize, (list, tuple)) and not isinstance(optimize, str):
        path = [tuple(p) for p in optimize if p != "einsum_path"]
        _check_path(path, n, pattern, shapes)
        return path
    subs = ",".join("".join(_LETTERS[i] for i in labs) for labs in labels) + "->" + "".join(
        _LETTERS[i] for i in out)
    shapes = [tuple(size[i] for i in labs) for labs in labels]
    kind = "auto" if optimize in (True, None) else optimize
    oe = _opt_einsum()
    if oe is not None:
        return [tuple(p) for p in oe.contract_path(subs, *shapes, shapes=True, optimize=kind)[0]]
    if kind == "auto":
        kind = "optimal" if n <= 4 else "greedy"
    dummies = [np.broadcast_to(np.zeros((), np.float64), s) for s in shapes]
    path = np.einsum_path(subs, *dummies, optimize=(kind, 1 << 62))[0]
    return [tuple(p) for p in path[1:]]


def _check_path(path, n, pattern, shapes):
    """An explicit path must name existing positions, once per step, and end with one operand."""
    left = n
    for step in path:
        if not step or len(set(step)) != len(step) or any(not 0 <= i < left for i in step):
            raise _err(f"bad contraction path {path}: the step {step} must name distinct positions in "
                       f"[0, {left - 1}] (operands left at that step: {left})", pattern, shapes)
        left -= len(step) - 1
    if left != 1:
        raise _err(f"bad contraction path {path}: it leaves {left} operands, expected 1", pattern, shapes)


_OPT_EINSUM = None   # the opt_einsum module once looked up, or False when missing
USE_OPT_EINSUM = True  # set False to always use np.einsum_path


def _opt_einsum():
    global _OPT_EINSUM
    if not USE_OPT_EINSUM:
        return None
    if _OPT_EINSUM is None:
        try:
            import opt_einsum  # noqa: PLC0415 - optional, imported on first use

            _OPT_EINSUM = opt_einsum
        except ImportError:
            _OPT_EINSUM = False
    return _OPT_EINSUM or None


@functools.lru_cache(maxsize=1024)
def _plan(grammar, pattern, shapes, optimize, use_oe):
    """-> (steps per operand, contractions, final permutation, the names to show or None)."""
    in_labels, out, size, names = _resolve(grammar, pattern, shapes)
    labels, pre = _operand_steps(in_labels, shapes, size, out)
    if len(shapes) >= 2:
        pairs, final = _contractions(labels, size, out, optimize, pattern, shapes)
    else:
        pairs, final = [], labels[0]
    # 5. the output order
    perm = tuple(final.index(lab) for lab in out)
    # the user's names, for the tape and graphs (NumPy-grammar '...' dims have none: letters then)
    shown = tuple(names) if grammar == "einops" or not any(nm.startswith("...") for nm in names) else None
    return tuple(tuple(s) for s in pre), tuple(pairs), perm, shown


def _operand_steps(in_labels, shapes, size, out):
    """Steps 1-3, each operand on its own: -> (labels per operand after them, steps per operand)."""
    n = len(shapes)
    labels = []
    pre = []
    for labs, shp in zip(in_labels, shapes, strict=True):
        steps = []
        # 1. size-1 dims broadcasting against a bigger size elsewhere: drop them
        keep = [i for i, (lab, s) in enumerate(zip(labs, shp, strict=True)) if not (s == 1 and size[lab] != 1)]
        if len(keep) != len(labs):
            labs = tuple(labs[i] for i in keep)
            steps.append(("reshape", tuple(shp[i] for i in keep)))
        # 2. repeated labels: the diagonal
        uniq = tuple(dict.fromkeys(labs))
        if len(uniq) != len(labs):
            steps.append(("diag", labs, uniq))
            labs = uniq
        labels.append(labs)
        pre.append(steps)
    # 3. labels only one operand has and the output lacks: sum them there
    out_set = set(out)
    for k in range(n):
        others = set(out_set)
        for j in range(n):
            if j != k:
                others.update(labels[j])
        axes = tuple(i for i, lab in enumerate(labels[k]) if lab not in others)
        if axes:
            pre[k].append(("sum", axes))
            labels[k] = tuple(lab for lab in labels[k] if lab in others)
    return labels, pre


def _contractions(labels, size, out, optimize, pattern, shapes):
    """Step 4, the pairwise contractions of 2+ operands along the path:
    -> (list of (slot a, slot b, result slot, la, lb, lout), the last result's labels)."""
    n = len(labels)
    out_set = set(out)
    pairs = []
    path = [(0, 1)] if n == 2 else _path(labels, size, out, optimize, pattern, shapes)
    work = list(range(n))          # slots in the order einsum_path numbers them
    slot_labels = dict(enumerate(labels))
    nxt = n
    for step in path:
        group = [work[i] for i in step]
        for i in sorted(step, reverse=True):
            del work[i]
        cur = group[0]
        for j, other in enumerate(group[1:], 2):
            rest = set(out_set)
            for s in work + group[j:]:
                rest.update(slot_labels[s])
            la, lb = slot_labels[cur], slot_labels[other]
            lout = _pair_out(la, lb, rest, out, last=not work and j == len(group))
            pairs.append((cur, other, nxt, la, lb, lout))
            slot_labels[nxt] = lout
            cur = nxt
            nxt += 1
        work.append(cur)
    if len(work) != 1:  # explicit paths are checked first; this would be a path-finder's bug
        raise _err(f"the contraction path {path} leaves {len(work)} operands, expected 1", pattern, shapes)
    return pairs, slot_labels[work[0]]


def _pair_out(la, lb, rest, out, last):
    """The labels a pairwise contraction keeps, in an order that needs no transpose."""
    if last:
        return tuple(out)
    sb = set(lb)
    keep = [lab for lab in la if lab in rest]
    batch = [lab for lab in keep if lab in sb]
    fa = [lab for lab in keep if lab not in sb]
    sa = set(la)
    fb = [lab for lab in lb if lab in rest and lab not in sa]
    return tuple(batch + fa + fb)


# ---------------------------------------------------------------------------
# pairwise contraction on backend arrays: one batched matmul
# ---------------------------------------------------------------------------

def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _pair_arrays(a, la, b, lb, lout):
    """Contract arrays ``a`` (labels ``la``) and ``b`` (``lb``) into labels ``lout``.

    Every label of ``a`` or ``b`` is either in ``lout`` or in both (the plan sums
    the others first), and labels are unique within each operand."""
    sa, sb, so = set(la), set(lb), set(lout)
    batch = [lab for lab in lout if lab in sa and lab in sb]
    fa = [lab for lab in lout if lab in sa and lab not in sb]
    fb = [lab for lab in lout if lab in sb and lab not in sa]
    grouped = tuple(batch + fa + fb)
    if tuple(lout) != grouped and tuple(lout) == tuple(batch + fb + fa):
        a, la, b, lb, fa, fb = b, lb, a, la, fb, fa  # swap: (AB)^T = B^T A^T, computed directly
        grouped = tuple(lout)
    con = [lab for lab in la if lab in sb and lab not in so]
    da = dict(zip(la, a.shape, strict=True))
    db = dict(zip(lb, b.shape, strict=True))
    bshape = tuple(da[lab] for lab in batch)
    ashape = tuple(da[lab] for lab in fa)
    bfshape = tuple(db[lab] for lab in fb)
    if not con:  # nothing to contract: an outer / elementwise product by broadcasting
        av = _arrange(a, la, batch + fa).reshape(bshape + ashape + (1,) * len(fb))
        bv = _arrange(b, lb, batch + fb).reshape(bshape + (1,) * len(fa) + bfshape)
        out = av * bv
    else:
        nb, m, k, nn = _prod(bshape), _prod(ashape), _prod(da[lab] for lab in con), _prod(bfshape)
        a3 = _as3(a, la, batch, fa, con, nb, m, k, False)
        b3 = _as3(b, lb, batch, fb, con, nb, nn, k, True)
        out = _k.matmul(a3, b3).reshape(bshape + ashape + bfshape)
    if grouped != tuple(lout):
        out = out.transpose(tuple(grouped.index(lab) for lab in lout))
    return out


def _arrange(x, lx, order):
    perm = tuple(lx.index(lab) for lab in order)
    return x if perm == tuple(range(x.ndim)) else x.transpose(perm)


def _as3(x, lx, batch, free, con, nb, nf, k, right):
    """``x`` as a (batch, free, con) stack (``right``: (batch, con, free)), with as
    little copying as its layout allows: when the contracted labels come before
    the free ones in memory, take the other arrangement and swap the last two axes
    (a view that BLAS reads as a transposed matrix)."""
    fc = batch + free + con  # (nb, nf, k)
    cf = batch + con + free  # (nb, k, nf)
    ident = tuple(lx)
    if ident == tuple(cf) or (ident != tuple(fc) and lx[-1] in free):
        v = _arrange(x, lx, cf).reshape(nb, k, nf)
        return v if right else v.swapaxes(1, 2)
    v = _arrange(x, lx, fc).reshape(nb, nf, k)
    return v.swapaxes(1, 2) if right else v


# ---------------------------------------------------------------------------
# the recorded ops: pairwise contraction, diagonal, and its scatter
# ---------------------------------------------------------------------------

def _pair_rule(ctx, g, la, lb, lout, names=None):
    a, b = ctx.saved  # each saved only when the other operand needs a gradient
    pair = ctx.xp.run_op
    ga = None if b is None else pair(PAIR, g, b, la=lout, lb=lb, lout=la, names=names)
    gb = None if a is None else pair(PAIR, a, g, la=la, lb=lout, lout=lb, names=names)
    return ga, gb


def _pair_samples(rng):
    r = rng.standard_normal
    return [Sample(r((2, 3, 4)), r((2, 4, 5)), la=(0, 1, 2), lb=(0, 2, 3), lout=(0, 1, 3)),
            Sample(r((3,)), r((4,)), la=(0,), lb=(1,), lout=(1, 0)),
            Sample(r((3, 3)), r((3, 3)), la=(0, 1), lb=(1, 2), lout=(0, 2))]  # square


PAIR = defop("einsum", lambda xp, a, b, la, lb, lout, names=None: _pair_arrays(a, la, b, lb, lout), _pair_rule,
             save=(0, 1), save_for_others=True, kind="other", jvp=multilinear_jvp(0, 1), samples=_pair_samples,
             info=lambda la, lb, lout, names=None: {"pattern": _pattern_of(la, lb, lout, names)}, complex='holomorphic')


def _pair(a, la, b, lb, lout, names=None):
    """Pairwise contraction of Tensors, recorded as one ``einsum`` Node (``names``: the user's
    label names, for the pattern the tape and graphs show)."""
    return run_op(PAIR, a, b, la=la, lb=lb, lout=lout, names=names)


@functools.lru_cache(maxsize=256)
def _diag_index(shape, lx, lu):
    """Flat (C-order) positions in an array of ``shape`` (labels ``lx``) of its diagonal over
    ``lu``, laid out in ``lu``'s order: built on the host once per shape."""
    cstr = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        cstr[i] = cstr[i + 1] * shape[i + 1]
    idx = np.zeros((), np.int64)
    for u in lu:
        n = shape[lx.index(u)]
        step = sum(st for st, lab in zip(cstr, lx, strict=True) if lab == u)
        idx = idx[..., None] + np.arange(n, dtype=np.int64) * step
    return idx.reshape(-1)


def _device_index(x, shape, lx, lu):
    idx = _diag_index(tuple(shape), lx, lu)
    xp = _be.array_module(x)
    return idx if xp is np else xp.asarray(idx)


def _diag_fwd(xp, x, lx, lu, shape):
    out_shape = tuple(x.shape[lx.index(u)] for u in lu)
    return x.reshape(-1)[_device_index(x, x.shape, lx, lu)].reshape(out_shape)


def _undiag_fwd(xp, g, lu, lx, shape):
    z = xp.zeros(_prod(shape), dtype=g.dtype)
    z[_device_index(g, shape, lx, lu)] = g.reshape(-1)
    return z.reshape(shape)


DIAG = defop("einsum_diag", _diag_fwd, lambda ctx, g, lx, lu, shape: (ctx.xp.run_op(UNDIAG, g, lu=lu, lx=lx, shape=shape),),
             kind="other", jvp=linear_jvp(0), info=lambda lx, lu, shape: {"pattern": _pattern_of(lx, None, lu)},
             samples=lambda rng: [Sample(rng.standard_normal((3, 3, 2)), lx=(0, 0, 1), lu=(0, 1), shape=(3, 3, 2))], complex=True)
UNDIAG = defop("einsum_undiag", _undiag_fwd,
               lambda ctx, g, lu, lx, shape: (ctx.xp.run_op(DIAG, g, lx=lx, lu=lu, shape=tuple(g.shape)),),
               kind="other", jvp=linear_jvp(0), info=lambda lu, lx, shape: {"pattern": _pattern_of(lu, None, lx)},
               batch=_batched.fresh_buffers,
               samples=lambda rng: [Sample(rng.standard_normal((3, 2)), lu=(0, 1), lx=(0, 0, 1), shape=(3, 3, 2))], complex=True)


def _diag(x, lx, lu):
    """The diagonal over repeated labels (``"ii->i"``), recorded as ``einsum_diag``."""
    return run_op(DIAG, x, lx=lx, lu=lu, shape=tuple(x.shape))


# ---------------------------------------------------------------------------
# the public function
# ---------------------------------------------------------------------------

_OPTIMIZE = ("auto", "greedy", "optimal")


def _operand(x, k):
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_grad_target"):
        raise TypeError(f"einsum: operand {k} is a sparse tensor, which einsum does not support; "
                        "convert it with .to_dense() first")
    if isinstance(x, str):
        raise TypeError("einsum: got more than one pattern string; pass the pattern first (NumPy "
                        "grammar) or last (einops grammar), and tensors everywhere else")
    try:
        return Tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"einsum: operand {k} ({type(x).__name__}) is not a tensor, an array or a "
                        f"number ({e})") from None


@public(PAIR, numpy=(np.einsum,))
def einsum(*args, optimize="auto") -> Tensor:
    """Einstein summation, differentiable in every operand.

    Two grammars, told apart by where the pattern is:

    * NumPy: ``einsum("ij,jk->ik", a, b)``. One letter per label; ``->`` optional
      (the implicit output is ``...`` then the labels seen once, sorted); ``...``
      broadcasts; a label repeated in one operand takes the diagonal
      (``"ii->i"``, ``"ii"`` is the trace); size-1 dims broadcast.
    * NumPy's sublist form: ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (int labels, ``...``
      as ``Ellipsis``; the output sublist optional, last).
    * einops: ``einsum(q, k, "batch seq_q d, batch seq_k d -> batch seq_q seq_k")``.
      Pattern last, space-separated names, ``->`` required, ``...`` allowed.

    Labels missing from the output are summed, ``...`` dims too when the
    output has no ``...`` (``"...->"`` sums everything).

    Args:
        *args: the pattern and the operands (Tensors, arrays or numbers), in
            either order above; the operands may also come as one list of
            Tensors (``einsum("ij,jk", [a, b])``, as ``torch.einsum`` allows).
        optimize: contraction order for three or more operands: ``"auto"``
            (opt_einsum's choice when installed, else ``np.einsum_path``'s),
            ``"greedy"``, ``"optimal"``, ``False`` (left to right), or an explicit
            path as ``np.einsum_path`` returns it.

    Returns:
        a Tensor. Each pairwise contraction is one batched matmul and one Node;
        gradients are contractions too, so higher derivatives work.

    Raises:
        ValueError: naming the pattern and the operand shapes, for a wrong number
            of operands, a rank mismatch, inconsistent sizes for a label, a repeated
            output label, an output label no input has, more than 52 names, or bad
            characters.

    >>> a, b = mg.ones(2, 3), mg.ones(3, 4)
    >>> mg.einsum("ij,jk->ik", a, b).shape
    (2, 4)
    >>> mg.einsum(a, b, "row k, k col -> col row").shape
    (4, 2)
    """
    grammar, pattern, ops = _split_args(args)
    shapes = tuple(tuple(int(s) for s in x.shape) for x in ops)
    optimize = _check_optimize(optimize)
    pre, pairs, perm, shown = _plan(grammar, pattern, shapes, optimize, bool(_opt_einsum()))
    return _run(ops, pre, pairs, perm, shown)




def _is_sublist(v) -> bool:
    return isinstance(v, (list, tuple)) and all(e is Ellipsis or (isinstance(e, int) and not isinstance(e, bool))
                                                for e in v)


def _sublist_pattern(args):
    """NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as (pattern, operands)."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(args) % 2:  # an odd count: the last is the output's sublist
        out = ops.pop()
        if not _is_sublist(out):
            raise TypeError("einsum: in the sublist form the output sublist comes last "
                            "(einsum(a, [0, 1], b, [1, 2], [0, 2]))")

    def letters(sub):
        try:
            return "".join("..." if e is Ellipsis else _LETTERS[e] for e in sub)
        except IndexError:
            raise ValueError(f"einsum: sublist labels must be in [0, 52), got {list(sub)}") from None

    if not all(_is_sublist(s) for s in subs):
        raise TypeError("einsum: in the sublist form every operand is followed by a list of int labels")
    pattern = ",".join(letters(s) for s in subs) + ("" if out is None else "->" + letters(out))
    return pattern, ops


def _split_args(args):
    """-> (grammar, pattern, operands as Tensors) from einsum's positional arguments."""
    if len(args) >= 2 and not isinstance(args[0], str) and _is_sublist(args[1]):
        pattern, ops = _sublist_pattern(args)
        return "numpy", pattern, [_operand(x, k) for k, x in enumerate(ops)]
    if args and isinstance(args[0], str):
        grammar, pattern, ops = "numpy", args[0], args[1:]
    elif args and isinstance(args[-1], str):
        grammar, pattern, ops = "einops", args[-1], args[:-1]
    else:
        raise TypeError("einsum: expected a pattern string, first (NumPy grammar: einsum('ij,jk->ik', a, b)) "
                        "or last (einops grammar: einsum(a, b, 'i j, j k -> i k'))")
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)) and ops[0] and all(
            isinstance(x, Tensor) for x in ops[0]):
        ops = tuple(ops[0])  # torch.einsum's other form: the operands as one list
    return grammar, pattern, [_operand(x, k) for k, x in enumerate(ops)]


def _check_optimize(optimize):
    """``optimize`` checked, and an explicit path made hashable for the plan cache."""
    if isinstance(optimize, (list, tuple)):  # an explicit path, hashable for the plan cache
        try:
            optimize = tuple(p if isinstance(p, str) else tuple(int(i) for i in p) for p in optimize)
        except (TypeError, ValueError):
            raise TypeError(f"einsum: an explicit path is a list of tuples of operand positions, as "
                            f"np.einsum_path returns it; got {optimize!r}") from None
    elif isinstance(optimize, str) and optimize not in _OPTIMIZE:
        raise ValueError(f"einsum: optimize must be one of {', '.join(map(repr, _OPTIMIZE))}, a bool or "
                         f"an explicit path; got {optimize!r}")
    elif not isinstance(optimize, (bool, str)) and optimize is not None:
        raise TypeError(f"einsum: optimize must be 'auto', 'greedy', 'optimal', a bool or a path, got {optimize!r}")
    return optimize


def _run(ops, pre, pairs, perm, shown):
    """Carry out a plan on the operands: their own steps, the contractions, the final permutation."""
    slots = {}
    for k, (x, steps) in enumerate(zip(ops, pre, strict=True)):
        for step in steps:
            if step[0] == "reshape":
                x = x.reshape(step[1])
            elif step[0] == "diag":
                x = _diag(x, step[1], step[2])
            else:
                x = x.sum(axis=step[1])
        slots[k] = x
    x = slots[0]
    for i, j, k, la, lb, lout in pairs:
        x = _pair(slots.pop(i), la, slots.pop(j), lb, lout, shown)
        slots[k] = x
    if perm != tuple(range(len(perm))) or (not pairs and x is ops[0]):
        x = x.permute(perm)  # also makes a fresh (view) Tensor for an identity pattern
    return x


def _clear_cache():
    """Forget the cached plans (after changing USE_OPT_EINSUM)."""
    _plan.cache_clear()

