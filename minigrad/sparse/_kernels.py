"""Index kernels of the sparse tensors, on backend arrays only (no autograd here).

Everything is written with array operations NumPy and CuPy both have (sort,
lexsort, searchsorted, bincount, cumsum, divmod, flatnonzero, gathers and
scatters), so the same code runs on the GPU. Nothing here allocates anything
of the size of a tensor's dense shape: work and memory are O(nnz), plus
O(rows) for CSR row pointers and, for a grouping whose key space is at most a
small multiple of nnz, O(key space) counting bins.
"""
from __future__ import annotations

import numpy as np

from .. import kernels as _k

# Keys that are row-major linear indices must fit in an int64 with room for
# ``k * dim + c`` steps; past this the kernels use lexicographic ranks instead.
_KEY_LIMIT = 1 << 62
# A grouping counts into bins instead of sorting when the key space is at most this
# many times nnz (plus a constant): O(nnz + bins) with no sort.
_BIN_FACTOR = 4
_BIN_SLACK = 1 << 16

int64 = np.dtype(np.int64)


def prod(dims) -> int:
    p = 1
    for d in dims:
        p *= int(d)
    return p


def arange(xp, n):
    return xp.arange(n, dtype=np.int64)


# ---------------------------------------------------------------------------
# keys: one int64 per entry, ordered like the coordinates (lexicographically)
# ---------------------------------------------------------------------------

def keys_of(xp, rows, dims):
    """Keys of the coordinates given by ``rows`` (one 1-D int64 array per dim).

    Returns ``(keys, exact)``. ``exact``: the keys are the row-major linear
    indices in ``dims`` (they can be unravelled). Otherwise (the shape's size
    does not fit an int64) they are the ranks of the distinct coordinates in
    lexicographic order. Either way equal coordinates have equal keys and keys
    order like coordinates.
    """
    rows = list(rows)
    if not rows:
        raise ValueError("internal: keys_of needs at least one dim")
    if prod(dims) <= _KEY_LIMIT:
        k = rows[0]
        for j, (r, d) in enumerate(zip(rows[1:], dims[1:], strict=True)):
            if j == 0:
                k = k * int(d)
            else:
                k *= int(d)
            k += r
        return k, True
    n = rows[0].shape[0]
    if n == 0:
        return xp.zeros(0, dtype=np.int64), False
    order = xp.lexsort(xp.stack(rows[::-1]))  # lexsort's primary key is the last row
    change = xp.zeros(n, dtype=bool)
    for r in rows:
        rs = r[order]
        change[1:] |= rs[1:] != rs[:-1]
    ranks_sorted = xp.cumsum(change, dtype=np.int64)
    ranks = xp.empty(n, dtype=np.int64)
    ranks[order] = ranks_sorted
    return ranks, False


def unravel(xp, keys, dims, out=None):
    """Row-major linear keys -> coordinates, one row per dim of ``out`` ((len(dims), n) int64)."""
    n = keys.shape[0]
    m = len(dims)
    if out is None:
        out = xp.empty((m, n), dtype=np.int64)
    if n == 0:  # nothing to do (and the only case where a dim may have size 0)
        return out
    if m == 1:
        out[0] = keys
        return out
    # Peel the dims off from the last: the quotient k // d goes straight into the row of the
    # dim before (it is that row's key), and the remainder k - q * d into row j. Writing into
    # ``out`` avoids temporaries; floor_divide by a scalar is fast, NumPy's divmod and % are not.
    k = keys
    for j in range(m - 1, 0, -1):
        d = int(dims[j])
        q = out[j - 1]
        xp.floor_divide(k, d, out=q)
        if k is keys:
            xp.multiply(q, d, out=out[j])
            xp.subtract(k, out[j], out=out[j])
        else:  # k is row j itself (the previous quotient): subtract in place
            k -= q * d
        k = q
    return out


def is_sorted(xp, keys, strict=False) -> bool:
    if keys.shape[0] < 2:
        return True
    if strict:
        return bool((keys[1:] > keys[:-1]).all())
    return bool((keys[1:] >= keys[:-1]).all())


# ---------------------------------------------------------------------------
# grouping equal keys
# ---------------------------------------------------------------------------

class Groups:
    """Equal keys gathered into groups ordered by key.

    ``n`` is the number of groups and ``keys`` one key per group (sorted).
    ``inverse()`` maps each entry to its group (``identity``: every entry is its
    own group, already in order). ``representatives()`` gives the position of one
    entry of each group. A grouping that counted keys into bins (``binned``) keeps
    the entry keys and the key space instead, and builds the inverse map only when
    asked (a gather), since a binned sum needs none.
    """

    __slots__ = ("_inv", "n", "keys", "rep", "xp", "nnz", "identity", "entry_keys", "space")

    def __init__(self, xp, inv, n, keys, rep, nnz, identity=False, entry_keys=None, space=None):
        self.xp, self._inv, self.n, self.keys, self.rep, self.nnz = xp, inv, n, keys, rep, nnz
        self.identity = identity
        self.entry_keys = entry_keys
        self.space = space

    @property
    def binned(self) -> bool:
        return self.entry_keys is not None

    def inverse(self):
        if self._inv is None:
            xp = self.xp
            if self.identity:
                self._inv = arange(xp, self.nnz)
            else:  # binned: rank of each key among the present ones
                rank = xp.empty(self.space, dtype=np.int64)
                rank[self.keys] = arange(xp, self.n)
                self._inv = rank[self.entry_keys]
        return self._inv

    def representatives(self):
        if self.rep is None:
            if self.identity:
                self.rep = arange(self.xp, self.nnz)
            else:  # any member of a group has the group's coordinates
                rep = self.xp.empty(self.n, dtype=np.int64)
                rep[self.inverse()] = arange(self.xp, self.nnz)
                self.rep = rep
        return self.rep


def group(xp, keys, key_space=None, assume_sorted=None) -> Groups:
    """Group equal keys (``key_space``: an upper bound of the keys, when known).

    Sorted keys (coalesced input, kept dims a prefix, CSR rows) find their groups in one
    pass; a key space of at most a few times nnz is counted into bins (no sort, no
    inverse map: on NumPy a bincount over the bins beats building one with a cumsum);
    otherwise an argsort.
    """
    n = int(keys.shape[0])
    if n == 0:
        e = xp.zeros(0, dtype=np.int64)
        return Groups(xp, e, 0, e, e, 0, identity=True)
    if n == 1:
        return Groups(xp, None, 1, keys, xp.zeros(1, dtype=np.int64), 1, identity=True)
    binnable = key_space is not None and key_space <= _BIN_FACTOR * n + _BIN_SLACK
    if assume_sorted is None:
        assume_sorted = bool((keys[1:] >= keys[:-1]).all())
    if assume_sorted:
        start = xp.empty(n, dtype=bool)  # start[i]: entry i begins a group
        start[0] = True
        xp.not_equal(keys[1:], keys[:-1], out=start[1:])
        nu = int(xp.count_nonzero(start))
        if nu == n:
            return Groups(xp, None, n, keys, None, n, identity=True)
        rep = xp.flatnonzero(start)
        if binnable:  # the sums need no inverse map (see above), nor ``rep``: not kept in the graph
            return Groups(xp, None, nu, keys[rep], None, n, entry_keys=keys, space=int(key_space))
        return Groups(xp, _ranks(xp, start), nu, keys[rep], rep, n)
    if binnable:
        present = xp.zeros(int(key_space), dtype=bool)
        present[keys] = True
        uniq = xp.flatnonzero(present)
        del present
        return Groups(xp, None, int(uniq.shape[0]), uniq, None, n, entry_keys=keys, space=int(key_space))
    order = xp.argsort(keys, kind="stable") if xp is np else xp.argsort(keys)
    ks = keys[order]
    start = xp.empty(n, dtype=bool)
    start[0] = True
    xp.not_equal(ks[1:], ks[:-1], out=start[1:])
    gid = _ranks(xp, start)
    nu = int(gid[-1]) + 1
    inv = xp.empty(n, dtype=np.int64)
    inv[order] = gid
    first = xp.flatnonzero(start)
    return Groups(xp, inv, nu, ks[first], order[first], n)


def _ranks(xp, start):
    """Group number of each entry of sorted keys, given where groups start (bool)."""
    # cumsum of an int64 copy: NumPy's cumsum casting bool to int64 on the fly is slower
    r = start.astype(np.int64)
    xp.cumsum(r, out=r)
    r -= 1
    return r


def group_coords(xp, rows, dims, assume_sorted=None, out=None, at=None):
    """Group entries by their coordinates ``rows`` (one int64 array per dim) in ``dims``.

    Returns ``(groups, coords)``: the Groups and the distinct coordinates in
    lexicographic order, one row per dim, written into ``out(n_groups)`` (a callable
    returning an int64 array (m, n_groups)) at rows ``at``, or into a new
    (len(dims), n_groups) array. ``assume_sorted``: whether the coordinates are known
    to be in lexicographic order (None: check, O(nnz)).
    """
    keys, exact = keys_of(xp, rows, dims)
    if not exact:
        assume_sorted = None
    g = group(xp, keys, prod(dims) if exact else keys.shape[0], assume_sorted)
    dest = out(g.n) if out is not None else xp.empty((len(rows), g.n), dtype=np.int64)
    at = list(range(len(rows))) if at is None else list(at)
    contiguous = at == list(range(at[0], at[0] + len(at)))
    if g.identity:
        for j, r in zip(at, rows, strict=True):
            dest[j] = r
    elif exact and contiguous:
        unravel(xp, g.keys, dims, out=dest[at[0]:at[0] + len(at)])
    elif exact:
        tmp = unravel(xp, g.keys, dims)
        for j, t in zip(at, tmp, strict=True):
            dest[j] = t
    else:
        rep = g.representatives()
        for j, r in zip(at, rows, strict=True):
            xp.take(r, rep, out=dest[j])
    return g, dest


# ---------------------------------------------------------------------------
# segment sums (values of a group added together)
# ---------------------------------------------------------------------------

def segment_sum(xp, v, inv, n):
    """out[g] = sum of v[i] over the entries i with inv[i] == g; v is (nnz, *dense)."""
    shape = (n,) + tuple(v.shape[1:])
    if v.shape[0] == 0 or n == 0:
        return xp.zeros(shape, dtype=v.dtype)
    if v.dtype.kind in "fc":
        if v.ndim == 1:
            return _k.bincount_add(xp, inv, v, n)
        k = prod(v.shape[1:])
        if k == 0:
            return xp.zeros(shape, dtype=v.dtype)
        # one bincount over (group, column) bins instead of a row scatter
        flat = (inv * k)[:, None] + arange(xp, k)[None, :]
        return _k.bincount_add(xp, flat.reshape(-1), v.reshape(-1), n * k).reshape(shape)
    out = xp.zeros(shape, dtype=v.dtype)
    _k.index_add(xp, out, inv, v)
    return out


def binned_sum(xp, v, g):
    """The per-group sums of 1-D ``v`` for a binned grouping: one bincount over the key
    space, read at the present keys (no inverse map needed)."""
    full = _k.bincount_add(xp, g.entry_keys, v, g.space)
    return full[g.keys]


def binned_spread(xp, gv, g):
    """The adjoint of binned_sum: each entry gets its group's value."""
    # no need to zero the bins: every entry key is one of the present keys written here
    full = xp.empty(g.space, dtype=gv.dtype)
    full[g.keys] = gv
    return full[g.entry_keys]


# ---------------------------------------------------------------------------
# CSR row pointers
# ---------------------------------------------------------------------------

def crow_to_rows(xp, crow, nnz):
    """Row of every stored entry of a 2-D CSR (crow (rows+1,))."""
    nrows = crow.shape[0] - 1
    if nnz == 0:
        return xp.zeros(0, dtype=np.int64)
    if nrows <= 1:
        return xp.zeros(nnz, dtype=np.int64)
    # a row begins where crow[1:rows] points: count the row starts at or before each entry
    marks = xp.bincount(crow[1:nrows], minlength=nnz + 1)[:nnz]
    return xp.cumsum(marks, dtype=np.int64)


def batched_crow_offsets(xp, crow):
    """Global start of each batch in the flat col/values arrays ((batch,) int64)."""
    counts = crow[:, -1]
    off = xp.zeros(crow.shape[0], dtype=np.int64)
    if crow.shape[0] > 1:
        off[1:] = xp.cumsum(counts[:-1])
    return off


def batched_crow_to_coords(xp, crow, nnz):
    """(batch, row) of every stored entry of a batched CSR (crow (batch, rows+1))."""
    b, r1 = crow.shape
    rows = r1 - 1
    if nnz == 0:
        z = xp.zeros(0, dtype=np.int64)
        return z, z
    off = batched_crow_offsets(xp, crow)
    glob = (crow[:, :-1] + off[:, None]).reshape(-1)  # start of each (batch, row) in flat order
    q = crow_to_rows(xp, xp.concatenate([glob, xp.asarray([nnz], dtype=np.int64)]), nnz)
    if rows == 0:  # unreachable with nnz > 0
        return q, q
    bi, ri = xp.divmod(q, rows)
    return bi, ri


def rows_to_crow(xp, rows, nrows):
    """Row pointers of sorted row ids."""
    crow = xp.zeros(nrows + 1, dtype=np.int64)
    if rows.shape[0]:
        crow[1:] = xp.cumsum(xp.bincount(rows, minlength=nrows)[:nrows])
    return crow


def batched_rows_to_crow(xp, bi, ri, nbatch, nrows):
    crow = xp.zeros((nbatch, nrows + 1), dtype=np.int64)
    if bi.shape[0] and nrows:
        counts = xp.bincount(bi * nrows + ri, minlength=nbatch * nrows)[: nbatch * nrows]
        crow[:, 1:] = xp.cumsum(counts.reshape(nbatch, nrows), axis=1)
    return crow


# ---------------------------------------------------------------------------
# looking coordinates up in a coalesced set (sparse upstream gradients)
# ---------------------------------------------------------------------------

def lookup(xp, src_rows, query_rows, dims):
    """Positions of the ``query`` coordinates among the coalesced ``src`` ones.

    Returns ``(pos, found)``: ``pos`` is valid where ``found``. Keys are computed
    jointly so that ranks stay comparable when the shape overflows an int64.
    """
    src_rows, query_rows = list(src_rows), list(query_rows)
    ns = int(src_rows[0].shape[0]) if src_rows else 0
    nq = int(query_rows[0].shape[0]) if query_rows else 0
    if not src_rows:  # 0 sparse dims: every query hits the single coordinate ()
        return xp.zeros(nq, dtype=np.int64), xp.full(nq, ns > 0, dtype=bool)
    if ns == 0 or nq == 0:
        return xp.zeros(nq, dtype=np.int64), xp.zeros(nq, dtype=bool)
    if prod(dims) <= _KEY_LIMIT:
        ks, _ = keys_of(xp, src_rows, dims)
        kq, _ = keys_of(xp, query_rows, dims)
    else:
        joint = [xp.concatenate([a, b]) for a, b in zip(src_rows, query_rows, strict=True)]
        k, _ = keys_of(xp, joint, dims)
        ks, kq = k[:ns], k[ns:]
    pos = xp.searchsorted(ks, kq)
    pos = xp.minimum(pos, ns - 1)
    found = ks[pos] == kq
    return pos, found
