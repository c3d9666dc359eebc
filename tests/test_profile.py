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


# -- the record (what mg.viz.html(profile) draws) ------------------------------------------------

def _reachable(roots, limit=100_000):
    """Every object reachable from ``roots`` through strong references (weak ones are not followed)."""
    import gc

    seen, stack, out = set(), list(roots), []
    while stack and len(out) < limit:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, type(gc))):
            continue
        seen.add(id(o))
        out.append(o)
        stack.extend(gc.get_referents(o))
    return out


def _mlp_train_step(keep=False):
    """One training step of a small MLP (Linear, ReLU, Linear, cross_entropy, backward, SGD step)
    under a profile, inside a function: when it returns, the step's tensors, its Nodes and (unless
    ``keep``) the model are gone. Returns the profile and weak references to what must be gone."""
    import weakref

    rng = np.random.default_rng(0)
    model = mg.nn.Sequential(mg.nn.Linear(4, 16), mg.nn.ReLU(), mg.nn.Linear(16, 3))
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    x = mg.tensor(rng.standard_normal((8, 4)).astype("float32"))
    y = mg.tensor(rng.integers(0, 3, 8))
    with mg.autograd.profile() as prof:
        opt.zero_grad()
        loss = mg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    gone = [weakref.ref(loss), weakref.ref(loss.grad_fn)]
    if not keep:
        gone.append(weakref.ref(model[0].weight))
    return (prof, gone, model) if keep else (prof, gone)


def test_the_record_of_a_training_step_outlives_its_tensors():
    import gc

    prof, gone = _mlp_train_step()
    gc.collect()
    assert all(r() is None for r in gone)           # the profile kept nothing alive
    assert prof.nodes() == []
    recs = prof.records
    assert [r.op for r in recs] == ["linear", "relu", "linear", "cross_entropy"]
    assert [r.seq for r in recs] == sorted(r.seq for r in recs)
    assert [r.out_meta[0] for r in recs] == [(8, 16), (8, 16), (8, 3), ()]
    assert {str(r.out_meta[1]) for r in recs} == {"float32"}
    assert [dict(r.inputs) for r in recs] == [     # input index -> the record or leaf it reads
        {1: ("l", 0), 2: ("l", 1)}, {0: ("n", 0, 0)}, {0: ("n", 1, 0), 1: ("l", 2), 2: ("l", 3)}, {0: ("n", 2, 0)}]
    assert recs[3].meta[1] is None and recs[3].consts[0][1:] == ((8,), np.dtype("int64"))  # the labels: no grad
    assert recs[3].info == {"reduction": "mean"}
    assert [(x.shape, str(x.dtype), x.op) for x in prof.inputs] == [
        ((16, 4), "float32", None), ((16,), "float32", None), ((3, 16), "float32", None), ((3,), "float32", None)]
    assert all(x.ref() is None for x in prof.inputs)
    for r in recs:
        assert r.forward_s > 0 and r.backward_s > 0 and r.node() is None
        assert r.where[0] == __file__ and r.saved_bytes > 0
    # no array, Tensor or Node is reachable from the record: only shapes, dtypes, names, numbers
    from minigrad.engine import Node
    held = _reachable([prof.records, prof.inputs])
    assert not [o for o in held if isinstance(o, (mg.Tensor, Node)) or hasattr(o, "nbytes")]
    table = prof.table()                             # the per-op table is unchanged
    assert any(ln.split()[:2] == ["linear", "2"] for ln in table.splitlines())
    assert {"linear", "relu", "cross_entropy"} <= set(prof.stats)
    assert prof.stats["linear"].backward_calls == 2


def test_the_record_reads_live_tensors_while_they_live():
    prof, _, model = _mlp_train_step(keep=True)
    w = model[0].weight
    assert prof.inputs[0].ref() is w                # a weak reference: the page names it from params=
    (r,) = [r for r in prof.records if r.op == "relu"]
    assert r.node() is None


def test_an_autograd_function_is_one_record_with_its_outputs():
    class Two(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0, x.exp()

        @staticmethod
        def backward(ctx, ga, gb):
            (x,) = ctx.saved_tensors
            return ga * 2.0 + gb * x.exp()

    x = leaf((3, 2))
    with mg.autograd.profile() as p:
        a, b = Two.apply(x)
        (a.sum() + b.sum()).backward()
    ops = [r.op for r in p.records]
    assert ops == ["Two", "sum", "sum", "add"]     # the Function's Node, reported twice, is one record
    two = p.records[0]
    assert two.n_out == 2 and two.saved_bytes == x.data.nbytes == p.stats["Two"].saved_bytes
    assert dict(p.records[1].inputs) == {0: ("n", 0, 0)} and dict(p.records[2].inputs) == {0: ("n", 0, 1)}
    assert two.backward_s > 0


def test_an_op_recorded_before_the_block_is_an_input_of_the_record():
    x = leaf((4,))
    y = x.exp()                                      # recorded outside the profile
    with mg.autograd.profile() as p:
        z = (y * y).sum()
    assert [r.op for r in p.records] == ["mul", "sum"]
    (inp,) = p.inputs
    assert (inp.op, inp.seq, inp.k, inp.shape) == ("exp", y.grad_fn.seq, 0, (4,))
    assert dict(p.records[0].inputs) == {0: ("l", 0), 1: ("l", 0)}
    assert z.grad_fn is p.records[1].node()
