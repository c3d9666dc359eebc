"""einsum: both grammars against np.einsum, gradients against finite differences (float64),
second derivatives, the contraction path, and every error.

The seed article's six patterns run on x (10, 5, 2, 3), y (3, 10, 5, 7) for values and on
smaller shapes of the same pattern for the gradchecks (a full Jacobian is one backward per
output element).
"""
import numpy as np
import pytest

import minigrad as mg
from conftest import check, leaf, leaves, rnd, to_np
from minigrad.ops import einsum as E


def ops_of(t):
    return [n.op for n in mg.autograd.tape(t)]


# -- the seed article: einops grammar, two operands ---------------------------------------------

SEED = [
    ("a b c d, d a b e -> b e c", "abcd,dabe->bec"),
    ("a b c d, d a b e -> a b c d e", "abcd,dabe->abcde"),
    ("a b c d, d a b e -> e d c b a", "abcd,dabe->edcba"),
    ("a b c d, d a b e -> a", "abcd,dabe->a"),
    ("a b c d, d a b e ->", "abcd,dabe->"),
    ("a b c d, d a b e -> a e", "abcd,dabe->ae"),
]


@pytest.mark.parametrize("pattern,np_pattern", SEED)
def test_seed_patterns_values(pattern, np_pattern):
    x, y = rnd((10, 5, 2, 3), 0), rnd((3, 10, 5, 7), 1)
    out = mg.einsum(mg.tensor(x), mg.tensor(y), pattern)
    np.testing.assert_allclose(to_np(out), np.einsum(np_pattern, x, y), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pattern,np_pattern", SEED)
def test_seed_patterns_gradients(pattern, np_pattern):
    # a=3, b=2, c=2, d=2, e=3: every label has its own size, so a mix-up cannot hide
    x, y = leaf((3, 2, 2, 2), 0), leaf((2, 3, 2, 3), 1)
    check(lambda p, q: mg.einsum(p, q, pattern), x, y)


@pytest.mark.parametrize("pattern,np_pattern", SEED)
def test_seed_patterns_gradcheck_full_size(pattern, np_pattern):
    # the article's own shapes: the full Jacobian (1350 inputs), and second derivatives along
    # random directions
    x, y = leaf((10, 5, 2, 3), 0), leaf((3, 10, 5, 7), 1)
    fn = lambda p, q: mg.einsum(p, q, pattern)  # noqa: E731
    assert mg.gradcheck(fn, [x, y])
    assert mg.gradgradcheck(fn, [x, y], fast=True)


@pytest.mark.parametrize("pattern,np_pattern", SEED)
def test_seed_patterns_gradients_full_size_vs_torch(pattern, np_pattern):
    torch = pytest.importorskip("torch")
    x, y = rnd((10, 5, 2, 3), 0), rnd((3, 10, 5, 7), 1)
    X, Y = mg.tensor(x, requires_grad=True), mg.tensor(y, requires_grad=True)
    out = mg.einsum(X, Y, pattern)
    g = rnd(out.shape, 2)
    out.backward(mg.tensor(g))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.tensor(y, requires_grad=True)
    torch.einsum(np_pattern, tx, ty).backward(torch.tensor(g))
    np.testing.assert_allclose(to_np(X.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(Y.grad), ty.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_seed_pattern_is_one_contraction():
    x, y = leaf((3, 2, 2, 2), 0), leaf((2, 3, 2, 3), 1)
    assert ops_of(mg.einsum(x, y, "a b c d, d a b e -> b e c")) == ["einsum"]
    # c only in x, e only in y, neither in the output: summed where they live, then one matmul
    assert ops_of(mg.einsum(x, y, "a b c d, d a b e -> a")) == ["sum", "sum", "einsum"]


# -- the attention example ----------------------------------------------------------------------

def test_attention_scores():
    q, k = rnd((100, 20, 32), 0), rnd((100, 20, 32), 1)
    Q, K = mg.tensor(q, requires_grad=True), mg.tensor(k, requires_grad=True)
    s = mg.einsum(Q, K, "batch seq_q d_model, batch seq_k d_model -> batch seq_q seq_k")
    assert s.shape == (100, 20, 20)
    np.testing.assert_allclose(to_np(s), np.einsum("bqd,bkd->bqk", q, k), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(s), q @ k.transpose(0, 2, 1), rtol=1e-10, atol=1e-12)
    s2 = mg.einsum("bqd,bkd->bqk", Q, K)  # the same thing in NumPy's grammar
    np.testing.assert_allclose(to_np(s2), to_np(s))
    g = rnd((100, 20, 20), 2)
    s.backward(mg.tensor(g))
    np.testing.assert_allclose(to_np(Q.grad), g @ k, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(K.grad), g.transpose(0, 2, 1) @ q, rtol=1e-10, atol=1e-12)
    assert ops_of(s) == ["einsum"]


def test_attention_gradcheck_and_float32():
    check(lambda a, b: mg.einsum(a, b, "batch seq_q d, batch seq_k d -> batch seq_q seq_k"),
          leaf((2, 3, 4), 0), leaf((2, 2, 4), 1))
    q = mg.tensor(rnd((4, 5, 8), 0).astype(np.float32), requires_grad=True)
    k = mg.tensor(rnd((4, 6, 8), 1).astype(np.float32), requires_grad=True)
    s = mg.einsum(q, k, "b q d, b k d -> b q k")
    assert s.dtype == np.float32
    (s * s).sum().backward()
    assert q.grad.dtype == np.float32 and k.grad.dtype == np.float32


# -- NumPy grammar -------------------------------------------------------------------------------

NUMPY_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),            # implicit output
    ("ba", [(2, 3)]),                        # implicit: alphabetical, so a transpose
    ("bA", [(2, 3)]),                        # uppercase sorts before lowercase (ASCII)
    ("ij->ji", [(2, 3)]),
    ("ij->ij", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),                        # trace
    ("iii->i", [(2, 2, 2)]),
    ("iij->ij", [(3, 3, 2)]),
    ("iji->j", [(2, 3, 2)]),
    ("ii,i->i", [(1, 1), (3,)]),             # a diagonal of size-1 dims broadcasts
    ("ij,jk->ik", [(2, 1), (3, 4)]),         # size-1 broadcast in a contracted label
    ("ij,ij->ij", [(2, 1), (1, 3)]),         # ... and in kept labels
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...,i...", [(2, 3), (2, 5, 1)]),      # implicit output with '...' broadcast
    ("...i,...i->...", [(1, 3), (5, 3)]),    # HIPS autograd #376: grad must keep shape (1, 3)
    ("ij...->ji...", [(2, 3, 4)]),
    ("->", [()]),
    (",->", [(), ()]),
    (",ij->ij", [(), (2, 3)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),  # spaces are ignored
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 3)]),
    ("ij,ji->", [(2, 3), (3, 2)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
]


@pytest.mark.parametrize("pattern,shapes", NUMPY_CASES)
def test_numpy_grammar_values(pattern, shapes):
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    out = mg.einsum(pattern, *[mg.tensor(x) for x in xs])
    want = np.einsum(pattern, *xs)
    assert out.shape == want.shape
    np.testing.assert_allclose(to_np(out), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pattern,shapes", NUMPY_CASES)
def test_numpy_grammar_gradients(pattern, shapes):
    check(lambda *a: mg.einsum(pattern, *a), *leaves(shapes))


def test_sum_all_with_ellipsis():
    x = rnd((2, 3, 4))
    for pattern in ("...->", "...ij->"):
        out = mg.einsum(pattern, mg.tensor(x))
        assert out.shape == ()
        np.testing.assert_allclose(to_np(out), x.sum())
    # '...' dims absent from an explicit output are summed
    np.testing.assert_allclose(to_np(mg.einsum("...ij->ij", mg.tensor(x))), x.sum(0))
    np.testing.assert_allclose(to_np(mg.einsum("ij...->ij", mg.tensor(x))), x.sum(2))
    check(lambda a: mg.einsum("...->", a), leaf((2, 3)))
    check(lambda a: mg.einsum("i...->", a), leaf((2, 1, 3)))


@pytest.mark.parametrize("pattern,shapes", [
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("ij->", [(0, 3)]),
    ("ii->i", [(0, 0)]),
    ("ij,jk,kl->il", [(2, 0), (0, 3), (3, 2)]),
    ("...i,...i->...", [(0, 3), (1, 3)]),
])
def test_zero_size_dims(pattern, shapes):
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    out = mg.einsum(pattern, *ts)
    want = np.einsum(pattern, *xs)
    assert out.shape == want.shape
    np.testing.assert_allclose(to_np(out), want)
    out.backward(mg.ones(*out.shape, dtype="float64"))
    for t, x in zip(ts, xs, strict=True):
        assert t.grad.shape == x.shape


def test_broadcast_grad_keeps_size_one_dims():
    # HIPS autograd #376: the gradient of a size-1 '...' dim must be summed back, not dropped
    a, b = leaf((1, 3), 0), leaf((5, 3), 1)
    out = mg.einsum("...i,...i->...", a, b)
    out.backward(mg.ones(5, dtype="float64"))
    assert a.grad.shape == (1, 3)
    np.testing.assert_allclose(to_np(a.grad), to_np(b).sum(0, keepdims=True))
    a, b = leaf((2, 1), 0), leaf((3, 4), 1)
    out = mg.einsum("ij,jk->ik", a, b)
    out.backward(mg.ones(2, 4, dtype="float64"))
    np.testing.assert_allclose(to_np(a.grad), np.ones((2, 4)) @ to_np(b).sum(0)[:, None])
    assert a.grad.shape == (2, 1)


def test_diagonal_gradient_is_scattered():
    x = leaf((3, 3))
    mg.einsum("ii->i", x).backward(mg.tensor([1.0, 2.0, 3.0], dtype="float64"))
    np.testing.assert_allclose(to_np(x.grad), np.diag([1.0, 2.0, 3.0]))
    x = leaf((2, 2, 2))
    mg.einsum("iii", x).backward()
    want = np.zeros((2, 2, 2))
    want[0, 0, 0] = want[1, 1, 1] = 1
    np.testing.assert_allclose(to_np(x.grad), want)
    assert "einsum_diag" in ops_of(mg.einsum("ii->i", x[0]))


def test_diagonal_second_order():
    check(lambda a, b: mg.einsum("iij,jk->ik", a, b), leaf((2, 2, 3), 0), leaf((3, 2), 1))
    check(lambda a: mg.einsum("ii", a) * mg.einsum("ii", a), leaf((3, 3)))


def test_non_tensor_operands_and_dtypes():
    a = rnd((2, 3), 0)
    out = mg.einsum("ij,j->i", mg.tensor(a), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(to_np(out), a @ np.array([1.0, 2.0, 3.0]), rtol=1e-6)
    i = mg.tensor(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(to_np(mg.einsum("ij,kj->ik", i, i)), np.einsum("ij,kj->ik", *[np.arange(6).reshape(2, 3)] * 2))
    x32 = mg.tensor(rnd((2, 3)).astype(np.float32))
    assert mg.einsum("ij->j", x32).dtype == np.float32


def test_identity_pattern_gives_a_new_tensor():
    x = leaf((2, 3))
    y = mg.einsum("ij->ij", x)
    assert y is not x
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.ones((2, 3)))


# -- einops grammar -----------------------------------------------------------------------------

def test_einops_grammar_features():
    x, y = rnd((2, 3, 4), 0), rnd((4, 5), 1)
    X, Y = mg.tensor(x), mg.tensor(y)
    np.testing.assert_allclose(to_np(mg.einsum(X, Y, "batch row k, k col -> batch col row")),
                               np.einsum("brk,kc->bcr", x, y))
    np.testing.assert_allclose(to_np(mg.einsum(X, Y, "... k, k col -> ... col")), np.einsum("...k,kc->...c", x, y))
    np.testing.assert_allclose(to_np(mg.einsum(X, Y, "...k,k col->...col")), np.einsum("...k,kc->...c", x, y))
    np.testing.assert_allclose(to_np(mg.einsum(X, "b r k -> k")), x.sum((0, 1)))
    d = rnd((3, 3, 2), 2)
    np.testing.assert_allclose(to_np(mg.einsum(mg.tensor(d), "n1 n1 h -> h n1")), np.einsum("iih->hi", d))
    check(lambda a, b: mg.einsum(a, b, "... k, k col -> col ..."), leaf((2, 1, 4), 0), leaf((4, 3), 1))
    check(lambda a: mg.einsum(a, "n1 n1 h -> h"), leaf((2, 2, 3)))


# -- three or more operands ---------------------------------------------------------------------

CHAINS = [
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 3)]),
    ("i,ij,j->", [(3,), (3, 4), (4,)]),
    ("bij,bjk,bkl->bil", [(2, 2, 3), (2, 3, 2), (2, 2, 3)]),
    ("ij,jk,ki->", [(2, 3), (3, 4), (4, 2)]),
    ("ij,jk,k->i", [(3, 4), (4, 5), (5,)]),
    ("abc,cd,bde->ae", [(2, 3, 2), (2, 3), (3, 3, 2)]),
    ("ii,ij,jk->k", [(2, 2), (2, 3), (3, 2)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("...ij,jk,...k->...i", [(2, 1, 3, 4), (4, 2), (5, 2)]),
]


@pytest.fixture(params=["opt_einsum", "np.einsum_path"])
def path_backend(request, monkeypatch):
    if request.param == "opt_einsum":
        pytest.importorskip("opt_einsum")
    monkeypatch.setattr(E, "USE_OPT_EINSUM", request.param == "opt_einsum")
    return request.param


@pytest.mark.parametrize("pattern,shapes", CHAINS)
def test_chains_values_and_gradients(pattern, shapes, path_backend):
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    out = mg.einsum(pattern, *[mg.tensor(x) for x in xs])
    np.testing.assert_allclose(to_np(out), np.einsum(pattern, *xs), rtol=1e-10, atol=1e-12)
    check(lambda *a: mg.einsum(pattern, *a), *leaves(shapes))


@pytest.mark.parametrize("optimize", [False, "greedy", "optimal", [(1, 2), (0, 1)], ["einsum_path", (0, 1, 2)]])
def test_chain_optimize_choices(optimize):
    xs = [rnd(s, i) for i, s in enumerate([(2, 3), (3, 4), (4, 2)])]
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    out = mg.einsum("ij,jk,kl->il", *ts, optimize=optimize)
    np.testing.assert_allclose(to_np(out), np.linalg.multi_dot(xs), rtol=1e-10)
    assert ops_of(out).count("einsum") == 2  # one Node per pairwise contraction
    out.sum().backward()
    np.testing.assert_allclose(to_np(ts[0].grad), np.ones((2, 2)) @ (xs[1] @ xs[2]).T, rtol=1e-10)


def test_many_operands(path_backend):
    # a 6-matrix chain and a 5-way outer product: one Node per pairwise contraction
    shapes = [(2, 3), (3, 4), (4, 5), (5, 3), (3, 2), (2, 3)]
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    out = mg.einsum("ab,bc,cd,de,ef,fg->ag", *ts)
    np.testing.assert_allclose(to_np(out), np.linalg.multi_dot(xs), rtol=1e-10)
    assert ops_of(out).count("einsum") == 5
    assert mg.gradcheck(lambda *a: mg.einsum("ab,bc,cd,de,ef,fg->ag", *a), ts)
    vs = leaves([(2,), (3,), (2,), (1,), (4,)])
    out = mg.einsum("i,j,k,l,m->mlkji", *vs)
    np.testing.assert_allclose(to_np(out), np.einsum("i,j,k,l,m->mlkji", *[to_np(v) for v in vs]))
    check(lambda *a: mg.einsum("i,j,k,l,m->", *a), *vs)


def test_chain_with_a_unary_step_in_the_path():
    xs = [rnd(s, i) for i, s in enumerate([(2, 3), (3, 4), (4, 2)])]
    ts = leaves([(2, 3), (3, 4), (4, 2)])
    out = mg.einsum("ij,jk,kl->il", *ts, optimize=[(1,), (0, 1), (0, 1)])
    np.testing.assert_allclose(to_np(out), np.linalg.multi_dot(xs), rtol=1e-10)
    assert mg.gradcheck(lambda *a: mg.einsum("ij,jk,kl->il", *a, optimize=[(1,), (0, 1), (0, 1)]), ts)


def test_operands_as_one_list_like_torch():
    a, b = leaf((2, 3), 0), leaf((3, 4), 1)
    np.testing.assert_allclose(to_np(mg.einsum("ij,jk->ik", [a, b])), to_np(a) @ to_np(b), rtol=1e-12)
    np.testing.assert_allclose(to_np(mg.einsum((a, b), "i j, j k -> i k")), to_np(a) @ to_np(b), rtol=1e-12)
    # a plain list of numbers is still one operand
    np.testing.assert_allclose(to_np(mg.einsum("i->", [1.0, 2.0, 3.0])), 6.0)


def test_chain_order_is_optimised(path_backend):
    # (A B) v costs n^3, A (B v) costs n^2: the path must contract B with v first
    n = 60
    a, b, v = mg.tensor(rnd((n, n), 0)), mg.tensor(rnd((n, n), 1)), mg.tensor(rnd((n,), 2), requires_grad=True)
    out = mg.einsum("ij,jk,k->i", a, b, v)
    tape = mg.autograd.tape(out)
    assert [n_.op for n_ in tape] == ["einsum", "einsum"]
    assert tape[0].output_shape == (n,)  # B v first: no (n, n) intermediate
    np.testing.assert_allclose(to_np(out), to_np(a) @ (to_np(b) @ to_np(v)), rtol=1e-10)


def test_chain_vs_torch_gradients():
    torch = pytest.importorskip("torch")
    shapes = [(4, 5, 6), (6, 3), (5, 3, 2), (2,)]
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    ts = [mg.tensor(x, requires_grad=True) for x in xs]
    out = mg.einsum("abc,cd,bde,e->ad", *ts)
    g = rnd(out.shape, 9)
    out.backward(mg.tensor(g))
    tts = [torch.tensor(x, requires_grad=True) for x in xs]
    torch.einsum("abc,cd,bde,e->ad", *tts).backward(torch.tensor(g))
    for t, tt in zip(ts, tts, strict=True):
        np.testing.assert_allclose(to_np(t.grad), tt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_random_patterns_against_numpy():
    """Random 1-3 operand patterns with repeats, broadcasting and '...', against np.einsum."""
    rng = np.random.default_rng(7)
    letters = "abcde"
    for trial in range(60):
        sizes = {c: int(rng.integers(1, 4)) for c in letters}
        n = int(rng.integers(1, 4))
        terms, arrays = [], []
        for _ in range(n):
            term = "".join(rng.choice(list(letters), size=int(rng.integers(0, 4))))
            shape = [sizes[c] if rng.random() > 0.15 else 1 for c in term]
            for j, c in enumerate(term):  # a repeated label needs one size within an operand
                if c in term[:j]:
                    shape[j] = shape[term.index(c)]
            terms.append(term)
            arrays.append(rng.standard_normal(shape))
        used = sorted(set("".join(terms)))
        out = "".join(c for c in used if rng.random() < 0.5)
        pattern = ",".join(terms) + "->" + "".join(rng.permutation(list(out)))
        ts = [mg.tensor(a, requires_grad=True) for a in arrays]
        got = mg.einsum(pattern, *ts)
        want = np.einsum(pattern, *arrays)
        np.testing.assert_allclose(to_np(got), want, rtol=1e-9, atol=1e-12, err_msg=pattern)
        if trial % 6 == 0:
            assert mg.gradcheck(lambda *a, p=pattern: mg.einsum(p, *a), ts, fast=True), pattern


# -- errors -------------------------------------------------------------------------------------

def _raises(match, *args, **kw):
    with pytest.raises(ValueError, match=match) as e:
        mg.einsum(*args, **kw)
    return str(e.value)


def test_error_wrong_operand_count():
    a = mg.ones(2, 3)
    msg = _raises("wrong number of operands", "ij,jk->ik", a)
    assert "'ij,jk->ik'" in msg and "(2, 3)" in msg
    msg = _raises("wrong number of operands", a, a, "i j -> i")
    assert "'i j -> i'" in msg and "[(2, 3), (2, 3)]" in msg


def test_error_rank_mismatch():
    msg = _raises("rank mismatch", "ijk->i", mg.ones(2, 3))
    assert "'ijk->i'" in msg and "(2, 3)" in msg
    _raises("rank mismatch", mg.ones(2, 3), "a b c -> a")
    _raises("rank mismatch", "ij...->i", mg.ones(2))


def test_error_inconsistent_sizes():
    msg = _raises("inconsistent sizes for the label 'j': 3 and 4", "ij,jk->ik", mg.ones(2, 3), mg.ones(4, 5))
    assert "[(2, 3), (4, 5)]" in msg
    _raises("inconsistent sizes", mg.ones(2, 3), mg.ones(4, 5), "i d, d k -> i k")
    _raises("inconsistent sizes", "ii->i", mg.ones(2, 3))
    _raises("inconsistent sizes", "...i,...i", mg.ones(2, 3), mg.ones(4, 3))


def test_error_repeated_output_label():
    msg = _raises("repeated output label 'i'", "ij->ii", mg.ones(2, 2))
    assert "(2, 2)" in msg
    _raises("repeated output label 'row'", mg.ones(2, 2), "row col -> row row")
    _raises("repeated output label", "...i->...ii", mg.ones(2, 2))


def test_error_output_label_in_no_input():
    msg = _raises("output label 'z' appears in no input", "ij->iz", mg.ones(2, 3))
    assert "'ij->iz'" in msg and "(2, 3)" in msg
    _raises("output label 'depth' appears in no input", mg.ones(2, 3), "h w -> depth")


def test_error_more_than_52_names():
    names = [f"n{i}" for i in range(53)]
    x = mg.tensor(np.ones((1,) * 53))
    msg = _raises("more than 52 names", x, " ".join(names) + " -> n0")
    assert "(1, 1, 1" in msg
    _raises("more than 52 names", "..." + E._LETTERS, mg.tensor(np.ones((1,) * 53)))
    # 52 is fine
    mg.einsum(mg.tensor(np.ones((1,) * 52)), " ".join(names[:52]) + " -> n0")


@pytest.mark.parametrize("args", [
    ("i1,jk->ik", (2, 3), (3, 4)),
    ("i.j->i", (2, 3)),
    ("i-j->i", (2, 3)),
    ("ij->i->j", (2, 3)),
    ("ij...k...->i", (2, 3, 4)),
    ((2, 3), (3, 4), "a-b b c -> a c"),
    ((2, 3), "(a b) -> a"),
    ((2, 3), "a 1b -> a"),
    ((2, 3), "a b . -> a"),
    ((2, 3), "a ... b ... -> a"),
])
def test_error_bad_characters(args):
    pat = next(a for a in args if isinstance(a, str))
    call = [mg.ones(*a) if isinstance(a, tuple) else a for a in args]
    with pytest.raises(ValueError) as e:
        mg.einsum(*call)
    msg = str(e.value)
    assert repr(pat) in msg and "operand shapes" in msg
    assert any(w in msg for w in ("bad character", "only once", "more than one '...'"))


def test_error_einops_needs_arrow():
    msg = _raises("needs exactly one '->'", mg.ones(2, 3), "a b")
    assert "'a b'" in msg and "(2, 3)" in msg


@pytest.mark.parametrize("optimize, err, match", [
    ([(0, 5)], ValueError, r"bad contraction path \[\(0, 5\)\]: the step \(0, 5\) must name distinct positions in \[0, 2\]"),
    ([(0, 0), (0, 1)], ValueError, "distinct positions"),
    ([(0, 1)], ValueError, "it leaves 2 operands, expected 1"),
    ([(0, 1), (0, 1), (0, 1)], ValueError, r"in \[0, 0\]"),
    ([1, 2], TypeError, "list of tuples of operand positions"),
    ("dp", ValueError, "optimize must be one of 'auto', 'greedy', 'optimal'"),
    (3, TypeError, "optimize must be"),
])
def test_error_bad_optimize(optimize, err, match):
    a, b, c = mg.ones(2, 3), mg.ones(3, 4), mg.ones(4, 2)
    with pytest.raises(err, match=match) as e:
        mg.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)
    if err is ValueError and "path" in match:
        assert "'ij,jk,kl->il'" in str(e.value) and "[(2, 3), (3, 4), (4, 2)]" in str(e.value)


def test_error_operand_not_a_tensor():
    with pytest.raises(TypeError, match=r"einsum: operand 1 \(NoneType\) is not a tensor"):
        mg.einsum("i,i->", mg.ones(2), None)
    with pytest.raises(TypeError, match="operand 0 is a sparse tensor"):
        mg.einsum("ij->", mg.sparse.coo_tensor([[0], [1]], [1.0], (2, 2)))


def test_error_no_pattern():
    with pytest.raises(TypeError, match="pattern string"):
        mg.einsum(mg.ones(2), mg.ones(2))
    with pytest.raises(TypeError, match="more than one pattern"):
        mg.einsum("i,i", "i", mg.ones(2))
