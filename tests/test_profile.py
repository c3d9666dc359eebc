"""mg.autograd.profile(): per-op calls, forward/backward time, bytes saved."""
import numpy as np
import pytest

import minigrad as mg
from conftest import leaf


def test_counts_times_and_saved_bytes():
    x, w = leaf((8, 4)), leaf((4, 3), seed=1)
    with mg.autograd.profile() as p:
        h = (x @ w).tanh()                 # matmul, tanh
        y = (h * h + h * 2.0).sum()        # mul x2, add, sum
        y.backward()
    (x @ w).sum().backward()               # after the block: not counted (the counts below are exact)
    s = p.stats
    assert set(s) == {"matmul", "tanh", "mul", "add", "sum"}
    assert (s["matmul"].calls, s["tanh"].calls, s["mul"].calls, s["add"].calls, s["sum"].calls) == (1, 1, 2, 1, 1)
    for st in s.values():                  # every recorded op ran its gradient rule once per call
        assert st.backward_calls == st.calls
        assert st.forward_s > 0 and st.backward_s > 0
    assert s["matmul"].saved_bytes == x.data.nbytes + w.data.nbytes
    assert s["tanh"].saved_bytes == 8 * 3 * 8                      # its output
    assert s["mul"].saved_bytes == 2 * 8 * 3 * 8                   # h * h saves both, h * 2.0 none
    assert s["sum"].saved_bytes == 0
    assert p.wall_s >= p.total_forward_s + p.total_backward_s > 0


def test_table_lists_ops_sorted_by_total_time():
    x = leaf((64, 64))
    with mg.autograd.profile() as p:
        y = x
        for _ in range(5):
            y = (y @ x).tanh()
        y.sum().backward()
    table = p.table()
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["op", "calls", "forward"]
    assert "backward" in lines[0] and "saved" in lines[0]
    body = [ln.split()[0] for ln in lines[2:] if ln and not ln.startswith("-")][: len(p.stats)]
    assert sorted(body) == sorted(p.stats)
    totals = [p.stats[op].total_s for op in body]
    assert totals == sorted(totals, reverse=True)
    assert any(ln.split()[:2] == ["matmul", "5"] for ln in lines)
    assert any(ln.startswith("total") for ln in lines)
    assert "wall time in the block" in lines[-1]
    assert str(p) == p.table()
    assert [r.op for r in p.rows("calls")][0] in ("matmul", "tanh")
    assert [r.op for r in p.rows("op")] == sorted(p.stats)
    limited = p.table(limit=1)
    assert f"... {len(p.stats) - 1} more ops" in limited
    with pytest.raises(ValueError, match="sort_by"):
        p.rows("speed")


def test_inactive_outside_the_block_and_restored_after_an_error():
    x = leaf((3,))
    (x * 1.0).sum()                        # before the block: not counted
    with pytest.raises(ZeroDivisionError):
        with mg.autograd.profile() as p:
            (x * 2.0).sum()
            assert p.stats["mul"].calls == 1 and p.stats["sum"].calls == 1
            raise ZeroDivisionError("inside the block")
    before = dict(p.stats)
    (x * 3.0).sum().backward()             # nothing recorded once the block is over
    assert p.stats.keys() == before.keys() and p.stats["mul"].calls == 1


def test_nested_profiles_report_to_the_outer_one():
    x = leaf((3,))
    with mg.autograd.profile() as outer:
        (x * 2.0).sum()
        with mg.autograd.profile() as inner:
            (x + 1.0).exp().sum().backward()
        x.neg()                            # after the inner block: the outer one's alone
    (x * 3.0).sum()                        # after both: nobody's
    assert set(inner.stats) == {"add", "exp", "sum"}
    assert outer.stats["sum"].calls == 2 and outer.stats["exp"].backward_calls == 1
    assert outer.stats["mul"].calls == 1 and outer.stats["neg"].calls == 1


def test_ops_a_rule_runs_count_as_its_backward_not_as_forward_calls():
    x = leaf((3,))
    with mg.autograd.profile() as p:
        y = (x.exp() * x).sum()
        (g,) = mg.grad(y, x, create_graph=True)   # the rules run recorded ops
    assert g.requires_grad
    assert {op: (st.calls, st.backward_calls) for op, st in p.stats.items()} == {
        "exp": (1, 1), "mul": (1, 1), "sum": (1, 1)}


def test_a_profile_is_reusable_but_not_reentrant():
    x = leaf((3,))
    p = mg.autograd.profile()
    with p:
        y = (x * 2.0).sum()
    with p:
        y.backward()
    assert p.stats["mul"].calls == 1 and p.stats["mul"].backward_calls == 1
    with p:
        with pytest.raises(RuntimeError, match="already active"):
            with p:
                pass


def test_no_grad_ops_are_counted_without_saved_bytes():
    x = leaf((4,))
    with mg.autograd.profile() as p:
        with mg.no_grad():
            (x * x).sum()
    assert p.stats["mul"].calls == 1 and p.stats["mul"].saved_bytes == 0
    assert p.stats["mul"].backward_calls == 0


def test_a_long_chain_gives_exact_counts():
    x, a = leaf((16,)), leaf((16,), seed=1)
    with mg.autograd.profile() as p:
        y = x
        for _ in range(200):
            y = (y * a + 1.0).tanh()
        y.sum().backward()
    s = p.stats
    assert {op: (st.calls, st.backward_calls) for op, st in s.items()} == {
        "mul": (200, 200), "add": (200, 200), "tanh": (200, 200), "sum": (1, 1)}
    assert s["tanh"].saved_bytes == 200 * 16 * 8      # each tanh saves its output
    assert s["mul"].saved_bytes == 2 * 200 * 16 * 8   # y * a saves both (both need a gradient)
    table = p.table()
    for op in ("mul", "add", "tanh", "sum"):
        assert any(ln.split()[:2] == [op, str(s[op].calls)] for ln in table.splitlines())


def test_no_profile_no_reports(monkeypatch):
    """Outside a profile nothing reports to one: the only cost is reading the empty observer tuple."""
    from minigrad.profile import Profile

    def boom(*a):
        raise AssertionError("reported to a profile that is not active")

    for name in ("forward", "backward", "recorded"):
        monkeypatch.setattr(Profile, name, boom)
    x = leaf((3, 4))
    y = (x @ x.T).tanh().sum(axis=0)
    h = y * 1
    h[0] += 1.0
    h.reshape(3, 1).expand(3, 2).sum().backward()
    assert x.grad is not None


def test_in_place_and_indexing_ops_are_profiled():
    x = leaf((4, 3))
    with mg.autograd.profile() as p:
        y = x * 1
        y **= 2
        z = mg.index_add((5, 3), mg.tensor([0, 4, 0, 1]), y)
        z.sum().backward()
    s = p.stats
    assert (s["pow_"].calls, s["pow_"].backward_calls) == (1, 1)
    assert (s["index_add"].calls, s["index_add"].backward_calls) == (1, 1)
    assert s["index_add"].saved_bytes == 4 * 8       # the index, kept for backward
    assert s["pow_"].saved_bytes == 4 * 3 * 8        # the old value: a clone taken before the write
    assert s["clone"].calls == 1 and s["clone"].saved_bytes == 0


def test_an_autograd_function_is_one_op_in_the_profile():
    class Square(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x            # minigrad ops inside: not counted a second time

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf((5, 3))
    with mg.autograd.profile() as p:
        y = Square.apply(x)
    s = p.stats
    assert set(s) == {"Square"}
    assert s["Square"].calls == 1 and s["Square"].forward_s > 0
    assert s["Square"].saved_bytes == x.data.nbytes
    with mg.autograd.profile() as p:
        y.sum().backward()
    assert p.stats["Square"].backward_calls == 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
