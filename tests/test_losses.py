"""The losses (issue 33): every function and module against torch in float64, values and input
gradients, over its arguments (weight, ignore_index, label_smoothing, probability targets,
pos_weight, delta / beta, log_target, reductions); gradchecks of the composed ones; the new
activations and F.one_hot."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F
from conftest import check, dev, leaf, to_np

RTOL, ATOL = 1e-12, 1e-13
REDUCTIONS = ("mean", "sum", "none")


def _torch():
    return pytest.importorskip("torch")


def _compare(ours, theirs, x, tx, w=None):
    """Values, then the input gradients of ``sum(loss * w)``, against torch's."""
    torch = _torch()
    np.testing.assert_allclose(to_np(ours), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)
    w = np.random.default_rng(5).standard_normal(tuple(ours.shape)) if w is None else w
    (ours * mg.tensor(w)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def _pair(a):
    torch = _torch()
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _logits(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 2


def _classes(n, c, seed=1, ignore=None):
    t = np.random.default_rng(seed).integers(0, c, size=n)
    if ignore is not None:
        t[::3] = ignore
    return t


CE_CASES = [
    dict(),
    dict(weight=True),
    dict(ignore_index=1),
    dict(ignore=True),
    dict(label_smoothing=0.2),
    dict(weight=True, ignore=True, label_smoothing=0.1),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CE_CASES, ids=lambda c: ",".join(c) or "plain")
def test_cross_entropy_class_targets_match_torch(case, reduction):
    torch = _torch()
    n, c = 7, 4
    a = _logits((n, c))
    t = _classes(n, c, ignore=-100 if case.get("ignore") else None)
    w = np.array([0.5, 2.0, 1.0, 1.5])
    kw = {k: v for k, v in case.items() if k in ("ignore_index", "label_smoothing")}
    x, tx = _pair(a)
    ours = F.cross_entropy(x, mg.tensor(t), weight=mg.tensor(w) if case.get("weight") else None,
                           reduction=reduction, **kw)
    theirs = torch.nn.functional.cross_entropy(tx, torch.tensor(t), weight=torch.tensor(w) if case.get("weight") else None,
                                               reduction=reduction, **kw)
    _compare(ours, theirs, x, tx)
    # the module gives the same number
    mod = mg.nn.CrossEntropyLoss(weight=mg.tensor(w) if case.get("weight") else None, reduction=reduction, **kw)
    np.testing.assert_allclose(to_np(mod(mg.tensor(a), mg.tensor(t))), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets_match_torch(reduction, smoothing, weighted):
    torch = _torch()
    a = _logits((5, 3))
    p = np.random.default_rng(2).dirichlet(np.ones(3), size=5)
    w = np.array([1.0, 0.2, 3.0])
    x, tx = _pair(a)
    ours = F.cross_entropy(x, mg.tensor(p), weight=mg.tensor(w) if weighted else None, reduction=reduction,
                           label_smoothing=smoothing)
    theirs = torch.nn.functional.cross_entropy(tx, torch.tensor(p), weight=torch.tensor(w) if weighted else None,
                                               reduction=reduction, label_smoothing=smoothing)
    _compare(ours, theirs, x, tx)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_single_sample_match_torch(reduction):
    torch = _torch()
    a = _logits((2, 3, 4, 5))
    t = np.random.default_rng(3).integers(0, 3, size=(2, 4, 5))
    t[0, 0, :2] = -100
    x, tx = _pair(a)
    kw = dict(reduction=reduction, label_smoothing=0.1)
    _compare(F.cross_entropy(x, mg.tensor(t), **kw), torch.nn.functional.cross_entropy(tx, torch.tensor(t), **kw), x, tx)
    p = np.random.default_rng(4).dirichlet(np.ones(3), size=(2, 4, 5)).transpose(0, 3, 1, 2).copy()
    x, tx = _pair(a)
    _compare(F.cross_entropy(x, mg.tensor(p), reduction=reduction),
             torch.nn.functional.cross_entropy(tx, torch.tensor(p), reduction=reduction), x, tx)
    x, tx = _pair(a[0, :, 0, 0])
    _compare(F.cross_entropy(x, mg.tensor(np.int64(2)), reduction=reduction, weight=mg.tensor([1.0, 2.0, 3.0])),
             torch.nn.functional.cross_entropy(tx, torch.tensor(2), reduction=reduction,
                                               weight=torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)), x, tx)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_with_weight_and_ignore_index_matches_torch(reduction):
    torch = _torch()
    a = _logits((6, 4))
    t = _classes(6, 4, ignore=2)
    w = np.array([0.5, 2.0, 1.0, 1.5])
    x, tx = _pair(a)
    ours = F.nll_loss(F.log_softmax(x, 1), mg.tensor(t), weight=mg.tensor(w), ignore_index=2, reduction=reduction)
    theirs = torch.nn.functional.nll_loss(torch.log_softmax(tx, 1), torch.tensor(t), weight=torch.tensor(w),
                                          ignore_index=2, reduction=reduction)
    _compare(ours, theirs, x, tx)
    mod = mg.nn.NLLLoss(weight=mg.tensor(w), ignore_index=2, reduction=reduction)
    np.testing.assert_allclose(to_np(mod(F.log_softmax(mg.tensor(a), 1), mg.tensor(t))), theirs.detach().numpy(),
                               rtol=RTOL, atol=ATOL)


def test_composed_cross_entropy_gradchecks_to_second_order():
    t = mg.tensor(_classes(5, 3, ignore=-100))
    check(lambda v: F.cross_entropy(v, t, weight=mg.tensor([1.0, 2.0, 0.5]), label_smoothing=0.2), leaf((5, 3)))
    p = mg.tensor(np.random.default_rng(0).dirichlet(np.ones(3), size=5))
    check(lambda v: F.cross_entropy(v, p, label_smoothing=0.1), leaf((5, 3)))


def test_cross_entropy_errors_name_the_values():
    x = leaf((3, 4))
    with pytest.raises(IndexError, match=r"cross_entropy: target 7 is out of bounds for 4 classes "
                                         r"\(valid \[0, 3\], or ignore_index=-100\)"):
        F.cross_entropy(x, mg.tensor([0, 7, -100]), ignore_index=-100, weight=mg.ones(4, dtype=mg.float64))
    with pytest.raises(ValueError, match=r"cross_entropy: label_smoothing must be in \[0, 1\], got 1.5"):
        F.cross_entropy(x, mg.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"cross_entropy: weight must have shape \(4,\), got \(3,\)"):
        F.cross_entropy(x, mg.tensor([0, 1, 2]), weight=mg.ones(3, dtype=mg.float64))
    with pytest.raises(ValueError, match="CrossEntropyLoss: reduction must be one of 'mean', 'sum', 'none', got 'avg'"):
        mg.nn.CrossEntropyLoss(reduction="avg")


def test_all_ignored_mean_is_nan_as_in_torch():
    x = leaf((2, 3))
    with np.errstate(invalid="ignore"):
        assert np.isnan(F.cross_entropy(x, mg.tensor([-100, -100])).item())


ELEMENTWISE = [
    ("mse_loss", "MSELoss", {}),
    ("l1_loss", "L1Loss", {}),
    ("huber_loss", "HuberLoss", dict(delta=0.7)),
    ("smooth_l1_loss", "SmoothL1Loss", dict(beta=0.6)),
    ("smooth_l1_loss", "SmoothL1Loss", dict(beta=0.0)),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fn,cls,kw", ELEMENTWISE, ids=[f"{e[0]}{e[2]}" for e in ELEMENTWISE])
def test_regression_losses_match_torch(fn, cls, kw, reduction):
    torch = _torch()
    a = _logits((4, 5))
    b = _logits((4, 5), seed=9)
    x, tx = _pair(a)
    ours = getattr(F, fn)(x, mg.tensor(b), reduction=reduction, **kw)
    theirs = getattr(torch.nn.functional, fn)(tx, torch.tensor(b), reduction=reduction, **kw)
    _compare(ours, theirs, x, tx)
    mod = getattr(mg.nn, cls)(reduction=reduction, **kw)
    tmod = getattr(torch.nn, cls)(reduction=reduction, **kw)
    np.testing.assert_allclose(to_np(mod(mg.tensor(a), mg.tensor(b))),
                               tmod(torch.tensor(a), torch.tensor(b)).numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch(reduction, weighted):
    torch = _torch()
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, size=(4, 3))
    y = rng.uniform(0, 1, size=(4, 3))
    w = rng.uniform(0.5, 2, size=(3,))
    x, tx = _pair(p)
    ours = F.binary_cross_entropy(x, mg.tensor(y), weight=mg.tensor(w) if weighted else None, reduction=reduction)
    theirs = torch.nn.functional.binary_cross_entropy(tx, torch.tensor(y), weight=torch.tensor(w) if weighted else None,
                                                      reduction=reduction)
    _compare(ours, theirs, x, tx)
    mod = mg.nn.BCELoss(weight=mg.tensor(w) if weighted else None, reduction=reduction)
    np.testing.assert_allclose(to_np(mod(mg.tensor(p), mg.tensor(y))), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)
    # the logs are clamped at -100, as PyTorch clamps them
    edge = F.binary_cross_entropy(mg.tensor([0.0, 1.0]), mg.tensor([1.0, 0.0]), reduction="none")
    assert to_np(edge).tolist() == [100.0, 100.0]


def test_binary_cross_entropy_refuses_logits():
    with pytest.raises(ValueError, match=r"binary_cross_entropy: input must hold probabilities in \[0, 1\], got "
                                         r"values in \[-1.0, 2.0\]; for logits use binary_cross_entropy_with_logits"):
        F.binary_cross_entropy(mg.tensor([-1.0, 2.0]), mg.tensor([0.0, 1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight,pos_weight", [(False, False), (True, False), (False, True), (True, True)])
def test_bce_with_logits_weight_and_pos_weight_match_torch(reduction, weight, pos_weight):
    torch = _torch()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 3)) * 4
    a[0, 0] = 0.0  # the kink of the stable form: the derivative is still PyTorch's
    a[1, 1] = 60.0
    y = rng.uniform(0, 1, size=(5, 3))
    w = rng.uniform(0.5, 2, size=(5, 1))
    pw = np.array([0.5, 2.0, 3.0])
    x, tx = _pair(a)
    ours = F.binary_cross_entropy_with_logits(x, mg.tensor(y), weight=mg.tensor(w) if weight else None,
                                              reduction=reduction, pos_weight=mg.tensor(pw) if pos_weight else None)
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(
        tx, torch.tensor(y), weight=torch.tensor(w) if weight else None, reduction=reduction,
        pos_weight=torch.tensor(pw) if pos_weight else None)
    _compare(ours, theirs, x, tx)
    mod = mg.nn.BCEWithLogitsLoss(weight=mg.tensor(w) if weight else None, reduction=reduction,
                                  pos_weight=mg.tensor(pw) if pos_weight else None)
    np.testing.assert_allclose(to_np(mod(mg.tensor(a), mg.tensor(y))), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)


def test_bce_with_logits_pos_weight_gradchecks():
    y = mg.tensor(np.random.default_rng(0).uniform(0, 1, size=(4, 3)))
    check(lambda v: F.binary_cross_entropy_with_logits(v, y, pos_weight=mg.tensor([0.5, 2.0, 3.0])), leaf((4, 3)))


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # torch's note on its own default
@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target):
    torch = _torch()
    rng = np.random.default_rng(6)
    logq = np.log(rng.dirichlet(np.ones(4), size=3))
    p = rng.dirichlet(np.ones(4), size=3)
    p[0, 1] = 0.0  # xlogy(0, 0) = 0
    tgt = np.log(p + 1e-3) if log_target else p
    x, tx = _pair(logq)
    ours = F.kl_div(x, mg.tensor(tgt), reduction=reduction, log_target=log_target)
    theirs = torch.nn.functional.kl_div(tx, torch.tensor(tgt), reduction=reduction, log_target=log_target)
    _compare(ours, theirs, x, tx)
    mod = mg.nn.KLDivLoss(reduction=reduction, log_target=log_target)
    np.testing.assert_allclose(to_np(mod(mg.tensor(logq), mg.tensor(tgt))), theirs.detach().numpy(),
                               rtol=RTOL, atol=ATOL)


def test_loss_module_weights_are_buffers_that_move_with_the_module():
    loss_fn = mg.nn.CrossEntropyLoss(weight=mg.tensor([1.0, 2.0]))
    assert list(loss_fn.state_dict()) == ["weight"]
    assert "label_smoothing" not in repr(mg.nn.MSELoss()) and "reduction='sum'" in repr(mg.nn.MSELoss(reduction="sum"))


def test_one_hot_matches_torch():
    torch = _torch()
    t = np.array([[0, 2], [1, 3]])
    ours = F.one_hot(mg.tensor(t), 5)
    assert ours.dtype == np.int64 and ours.shape == (2, 2, 5)
    np.testing.assert_array_equal(to_np(ours), torch.nn.functional.one_hot(torch.tensor(t), 5).numpy())
    np.testing.assert_array_equal(to_np(F.one_hot(mg.tensor(t))), torch.nn.functional.one_hot(torch.tensor(t)).numpy())
    with pytest.raises(IndexError, match=r"one_hot: class 3 is out of range for 3 classes \(valid \[0, 2\]\)"):
        F.one_hot(mg.tensor(t), 3)
    with pytest.raises(TypeError, match="one_hot: expected integer class indices, got dtype float"):
        F.one_hot(mg.tensor([0.0, 1.0]))


ACTIVATIONS = [
    ("leaky_relu", "LeakyReLU", dict(negative_slope=0.2)),
    ("leaky_relu", "LeakyReLU", {}),
    ("elu", "ELU", dict(alpha=1.5)),
    ("softplus", "Softplus", dict(beta=2.0, threshold=5.0)),
    ("softplus", "Softplus", {}),
]


@pytest.mark.parametrize("fn,cls,kw", ACTIVATIONS, ids=[f"{a[0]}{a[2]}" for a in ACTIVATIONS])
def test_activations_match_torch_and_gradcheck(fn, cls, kw):
    torch = _torch()
    a = np.concatenate([_logits((10,)) * 3, [0.0, 30.0, -30.0, 800.0]])
    x, tx = _pair(a)
    ours = getattr(F, fn)(x, **kw)
    theirs = getattr(torch.nn.functional, fn)(tx, **kw)
    _compare(ours, theirs, x, tx)
    np.testing.assert_allclose(to_np(getattr(mg.nn, cls)(**kw)(mg.tensor(a))),
                               getattr(torch.nn, cls)(**kw)(torch.tensor(a)).numpy(), rtol=RTOL, atol=ATOL)
    check(lambda v: getattr(F, fn)(v, **kw), leaf((6,), away=(0.0,)))


def test_losses_run_on_the_default_device():
    x = leaf((4, 3))
    t = mg.tensor(dev(np.array([0, 2, 1, -100])))
    loss = F.cross_entropy(x, t, weight=mg.tensor(dev(np.array([1.0, 2.0, 3.0]))), label_smoothing=0.1)
    loss.backward()
    assert x.grad.device == x.device == loss.device
