"""The Tensor Puzzles (Sasha Rush), solved in minigrad.

Each puzzle is one line that uses only ``mg.arange``, ``mg.where``, ``@``, arithmetic
(``+ - * / // %``), comparisons, shapes and indexing (``None`` for a new axis,
integer tensors as indices), with Python scalars mixed in; a puzzle may call the ones
before it. No loops, no other library function. Bool and int tensors behave as in
NumPy (``1 * mask`` is an int tensor, ``mask[:, None]`` broadcasts).

Run ``python examples/puzzles.py`` to check every solution against its spec (the plain
Python loop that defines the puzzle) on random inputs; ``tests/test_puzzles.py`` does
the same against NumPy and gradchecks the differentiable ones.
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402
from minigrad import arange, where  # noqa: E402

def ones(i):
    """1. ones(i)[k] = 1"""
    return where(arange(i) >= 0, 1, 0)


def sum(a):  # noqa: A001 - the puzzle's name
    """2. sum(a)[0] = a[0] + a[1] + ...   (shape (1,))"""
    return ones(a.shape[0]) @ a[:, None]


def outer(a, b):
    """3. outer(a, b)[i, j] = a[i] * b[j]"""
    return a[:, None] * b[None, :]


def diag(a):
    """4. diag(a)[i] = a[i, i]"""
    return a[arange(a.shape[0]), arange(a.shape[0])]


def eye(j):
    """5. eye(j)[i, k] = 1 if i == k else 0"""
    return where(arange(j)[:, None] == arange(j), 1, 0)


def triu(j):
    """6. triu(j)[i, k] = 1 if i <= k else 0"""
    return where(arange(j)[:, None] <= arange(j), 1, 0)


def cumsum(a):
    """7. cumsum(a)[i] = a[0] + ... + a[i]"""
    return a @ triu(a.shape[0])


def diff(a, i):
    """8. diff(a, i)[0] = a[0]; diff(a, i)[k] = a[k] - a[k - 1]"""
    return a - where(arange(i) > 0, a[arange(i) - 1], 0)


def vstack(a, b):
    """9. vstack(a, b)[0] = a; vstack(a, b)[1] = b"""
    return where(arange(2)[:, None] == 0, a, b)


def roll(a, i):
    """10. roll(a, i)[k] = a[(k + 1) % i]"""
    return a[(arange(i) + 1) % i]


def flip(a, i):
    """11. flip(a, i)[k] = a[i - 1 - k]"""
    return a[i - 1 - arange(i)]


def compress(g, v, i):
    """12. compress(g, v, i): the v[k] where g[k], moved to the front, zeros after"""
    return v @ where(g[:, None], arange(i) == (cumsum(1 * g) - 1)[:, None], 0)


def pad_to(a, i, j):
    """13. pad_to(a, i, j)[k] = a[k] for k < min(i, j), else 0"""
    return a @ (1 * (arange(i)[:, None] == arange(j)))


def sequence_mask(values, length):
    """14. sequence_mask(values, length)[i, j] = values[i, j] if j < length[i] else 0"""
    return where(length[:, None] > arange(values.shape[1]), values, 0)


def bincount(a, j):
    """15. bincount(a, j)[k] = how many a[i] == k"""
    return ones(a.shape[0]) @ eye(j)[a]


def scatter_add(values, link, j):
    """16. scatter_add(values, link, j)[k] = sum of values[i] where link[i] == k"""
    return values @ eye(j)[link]


def flatten(a, i, j):
    """17. flatten(a, i, j)[k] = a[k // j, k % j]"""
    return a[arange(i * j) // j, arange(i * j) % j]


def linspace(i, j, n):
    """18. linspace(i, j, n)[k] = i + (j - i) * k / max(1, n - 1)"""
    return i + (j - i) * arange(n) / (n - 1 + (n == 1))


def heaviside(a, b):
    """19. heaviside(a, b)[k] = b[k] if a[k] == 0 else (1 if a[k] > 0 else 0)"""
    return where(a == 0, b, a > 0)


def repeat(a, d):
    """20. repeat(a, d)[r, k] = a[k] for each of the d rows"""
    return ones(d)[:, None] @ a[None, :]


def bucketize(v, boundaries):
    """21. bucketize(v, boundaries)[k] = how many boundaries are <= v[k] (boundaries sorted)"""
    return (1 * (v[:, None] >= boundaries)) @ ones(boundaries.shape[0])


PUZZLES = [ones, sum, outer, diag, eye, triu, cumsum, diff, vstack, roll, flip, compress, pad_to,
           sequence_mask, bincount, scatter_add, flatten, linspace, heaviside, repeat, bucketize]


# -- the specs: each puzzle's definition as a plain loop -------------------------------------

def _specs():
    import numpy as np

    def ones_spec(i):
        out = np.zeros(i, np.int64)
        for k in range(i):
            out[k] = 1
        return out

    def sum_spec(a):
        out = np.zeros(1)
        for x in a:
            out[0] += x
        return out

    def outer_spec(a, b):
        return np.array([[x * y for y in b] for x in a])

    def diag_spec(a):
        return np.array([a[k, k] for k in range(len(a))])

    def eye_spec(j):
        return np.array([[1 if r == c else 0 for c in range(j)] for r in range(j)])

    def triu_spec(j):
        return np.array([[1 if r <= c else 0 for c in range(j)] for r in range(j)])

    def cumsum_spec(a):
        out, total = [], 0.0
        for x in a:
            total += x
            out.append(total)
        return np.array(out)

    def diff_spec(a, i):
        return np.array([a[0]] + [a[k] - a[k - 1] for k in range(1, i)])

    def vstack_spec(a, b):
        return np.array([list(a), list(b)])

    def roll_spec(a, i):
        return np.array([a[(k + 1) % i] for k in range(i)])

    def flip_spec(a, i):
        return np.array([a[i - 1 - k] for k in range(i)])

    def compress_spec(g, v, i):
        out, j = np.zeros(i), 0
        for k in range(i):
            if g[k]:
                out[j] = v[k]
                j += 1
        return out

    def pad_to_spec(a, i, j):
        out = np.zeros(j)
        for k in range(min(i, j)):
            out[k] = a[k]
        return out

    def sequence_mask_spec(values, length):
        out = np.zeros(values.shape)
        for r in range(values.shape[0]):
            for c in range(values.shape[1]):
                out[r, c] = values[r, c] if c < length[r] else 0
        return out

    def bincount_spec(a, j):
        out = np.zeros(j, np.int64)
        for x in a:
            out[x] += 1
        return out

    def scatter_add_spec(values, link, j):
        out = np.zeros(j)
        for x, k in zip(values, link, strict=False):
            out[k] += x
        return out

    def flatten_spec(a, i, j):
        return np.array([a[k // j, k % j] for k in range(i * j)])

    def linspace_spec(i, j, n):
        return np.array([i + (j - i) * k / max(1, n - 1) for k in range(n)])

    def heaviside_spec(a, b):
        return np.array([b[k] if a[k] == 0 else (1 if a[k] > 0 else 0) for k in range(len(a))])

    def repeat_spec(a, d):
        return np.array([list(a) for _ in range(d)])

    def bucketize_spec(v, boundaries):
        return np.array([len([b for b in boundaries if x >= b]) for x in v])

    return {f.__name__[:-5]: f for f in locals().values() if callable(f) and f.__name__.endswith("_spec")}


def cases(rng, n=5, m=4):
    """Random inputs for every puzzle: name -> (args for the puzzle as NumPy values)."""
    import numpy as np

    a = rng.standard_normal(n)
    b = rng.standard_normal(m)
    sq = rng.standard_normal((n, n))
    mat = rng.standard_normal((n, m))
    g = rng.random(n) < 0.5
    ints = rng.integers(0, m, n)
    a0 = np.where(rng.random(n) < 0.3, 0.0, a)
    return {
        "ones": (n,), "sum": (a,), "outer": (a, b), "diag": (sq,), "eye": (n,), "triu": (n,),
        "cumsum": (a,), "diff": (a, n), "vstack": (a, rng.standard_normal(n)), "roll": (a, n),
        "flip": (a, n), "compress": (g, a, n), "pad_to": (a, n, m), "sequence_mask": (mat, rng.integers(0, m + 1, n)),
        "bincount": (ints, m), "scatter_add": (a, ints, m), "flatten": (mat, n, m), "linspace": (-1.5, 2.0, n),
        "heaviside": (a0, rng.standard_normal(n)), "repeat": (a, 3), "bucketize": (a, np.sort(b)),
    }


def as_inputs(args):
    """NumPy arrays -> minigrad tensors (float64 kept); ints and floats stay Python scalars."""
    import numpy as np

    return tuple(mg.tensor(x) if isinstance(x, np.ndarray) else x for x in args)


def main(argv=None) -> int:
    """Check every puzzle against its spec on random inputs; 0 when all are solved."""
    import argparse

    import numpy as np

    ap = argparse.ArgumentParser(description="Check every Tensor Puzzle's one-line minigrad solution against its "
                                             "spec (a plain Python loop) on random inputs.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("seed", nargs="?", type=int, default=0, help="seed of the random inputs")
    args = ap.parse_args(argv)
    specs = _specs()
    rng = np.random.default_rng(args.seed)
    failed = 0
    for name, args in cases(rng).items():
        puzzle = globals()[name]
        got = puzzle(*as_inputs(args)).numpy()
        want = specs[name](*args)
        ok = got.shape == want.shape and np.allclose(got, want)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:14s} -> shape {got.shape}")
    print(f"{len(PUZZLES) - failed}/{len(PUZZLES)} puzzles solved")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
