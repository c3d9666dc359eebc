"""Complex numbers through the tape (issue 41), in PyTorch's convention, compared with torch: the
convention itself, promotion and real inputs' real gradients, the complex ops' names and NumPy's
dispatch, the ops that refuse complex numbers, abs and angle at 0, gradcheck on complex numbers (and a
planted wrong conjugate it catches), mg.func, and the optimizers on complex parameters. The registry
test runs every op that takes complex numbers on complex samples (tests/test_registry.py)."""
import numpy as np
import pytest

import minigrad as mg
from conftest import raises_naming, to_np

torch = pytest.importorskip("torch")


def crand(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def both(a, requires_grad=True):
    """The same data as a minigrad and a torch leaf."""
    return mg.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


# -- the convention ---------------------------------------------------------------------------


def test_the_gradient_is_dl_dre_plus_i_dl_dim():
    """API.md's example: L = |z|² at 1+2j gives 2+4j, the direction in which gradient descent lowers L."""
    z = mg.tensor(np.array(1 + 2j), requires_grad=True)
    (z.abs() ** 2).backward()
    assert z.grad.item() == 2 + 4j
    z.grad = None
    (z * z.conj()).real.backward()
    assert z.grad.item() == 2 + 4j


@pytest.mark.parametrize("f", [  # lib: minigrad or torch (the same names)
    lambda lib, z, w: (z * w).abs().sum(),
    lambda lib, z, w: (lib.exp(z) / w).real.sum() + (lib.log(w) * z).imag.sum(),
    lambda lib, z, w: ((z @ w.T) ** 2).abs().mean(),
    lambda lib, z, w: lib.angle(lib.sqrt(z) - w.conj()).sum(),
    lambda lib, z, w: (lib.sin(z) * lib.tanh(w)).abs().prod(),
    lambda lib, z, w: lib.einsum("ij,kj->ik", z, w).abs().sum() + z.sum(0).real.sum(),
    lambda lib, z, w: lib.view_as_real(lib.cat([z, w])[1:, ::2]).pow(2).sum(),
    lambda lib, z, w: (z.cumsum(1) * (1 / w) + z.reshape(4, 3).T).abs().sum(),
])
def test_gradients_match_torch(f, device):
    rng = np.random.default_rng(0)
    z0, w0 = crand(rng, 3, 4), crand(rng, 3, 4)
    zm, zt = both(z0)
    wm, wt = both(w0)
    zd, wd = zm.to(device), wm.to(device)
    f(mg, zd, wd).backward()
    f(torch, zt, wt).backward()
    np.testing.assert_allclose(to_np(zm.grad), zt.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(wm.grad), wt.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


def test_a_real_input_of_a_complex_computation_gets_a_real_gradient(device):
    rng = np.random.default_rng(1)
    x0, c0 = rng.standard_normal(4), crand(rng, 4)
    x = mg.tensor(x0, requires_grad=True, device=device)
    (x * mg.tensor(c0, device=device)).abs().sum().backward()
    xt = torch.tensor(x0, requires_grad=True)
    (xt * torch.tensor(c0)).abs().sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(to_np(x.grad), xt.grad.numpy(), rtol=1e-12)


def test_a_real_leaf_times_a_complex_constant_records():
    """It used to give a result that silently did not require grad."""
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * mg.tensor([1 + 1j, 2 - 1j])
    assert y.requires_grad and y.dtype == np.complex64
    y.real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0])
    assert (x * 1j).requires_grad and (x * 1j).dtype == np.complex64  # a Python complex number too


def test_numpys_promotion():
    f32, f64 = mg.zeros(2, dtype=mg.float32), mg.zeros(2, dtype=mg.float64)
    c64, c128 = mg.zeros(2, dtype=mg.complex64), mg.zeros(2, dtype=mg.complex128)
    assert (f32 + c64).dtype == np.complex64 and (f64 + c64).dtype == np.complex128
    assert (f32 * c128).dtype == np.complex128 and (c64 @ mg.ones(2, dtype=mg.float32)).dtype == np.complex64


def test_backward_of_a_complex_output_needs_a_gradient():
    z = mg.tensor(np.array(1 + 2j), requires_grad=True)
    msg = raises_naming(RuntimeError, lambda: (z * z).backward(), "backward")
    assert "complex128" in msg and "real" in msg
    (z * z).backward(mg.tensor(np.array(1 + 0j)))  # PyTorch's: the gradient of Re(z²) = x² - y²
    assert z.grad.item() == 2 - 4j


# -- the complex ops, their names and NumPy's dispatch ----------------------------------------


def test_names_and_numpy_dispatch_give_torchs_values():
    rng = np.random.default_rng(2)
    z0 = crand(rng, 3, 2)
    z, zt = mg.tensor(z0), torch.tensor(z0)
    for got, want in [(mg.real(z), zt.real), (z.real, zt.real), (np.real(z), zt.real), (z.imag, zt.imag),
                      (np.imag(z), zt.imag), (mg.conj(z), zt.conj()), (np.conj(z), zt.conj()), (z.conj(), zt.conj()),
                      (mg.angle(z), zt.angle()), (np.angle(z), zt.angle()), (z.angle(), zt.angle()),
                      (np.abs(z), zt.abs()), (mg.view_as_real(z), torch.view_as_real(zt)),
                      (mg.view_as_complex(mg.view_as_real(z)), zt),
                      (mg.complex(z.real, z.imag), torch.complex(zt.real, zt.imag)),
                      (mg.polar(z.abs(), z.angle()), torch.polar(zt.abs(), zt.angle()))]:
        assert isinstance(got, mg.Tensor)
        np.testing.assert_allclose(got.numpy(), want.resolve_conj().numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(np.angle(z, deg=True).numpy(), np.angle(z0, deg=True))
    assert mg.view_as_complex(mg.zeros(3, 2, dtype=mg.float32)).dtype == np.complex64


def test_real_of_a_real_tensor_is_itself_and_conj_too():
    x = mg.tensor([1.0, -2.0])
    assert mg.real(x) is x and x.real is x and mg.conj(x) is x
    np.testing.assert_array_equal(x.imag.numpy(), [0.0, 0.0])


def test_view_as_complex_is_exact_at_infinities():
    x = mg.tensor(np.array([[np.inf, 1.0], [2.0, -np.inf]]))
    np.testing.assert_array_equal(mg.view_as_complex(x).numpy(), np.array([complex(np.inf, 1), complex(2, -np.inf)]))


@pytest.mark.parametrize("call,name", [
    (lambda z: z.max(), "max"), (lambda z: mg.sort(z), "sort"), (lambda z: z.clamp(0, 1), "clip"),
    (lambda z: z < 1, "lt"), (lambda z: z >= z, "ge"), (lambda z: mg.maximum(z, z), "maximum"),
    (lambda z: z.argmax(), "argmax"), (lambda z: mg.relu(z), "relu"), (lambda z: z.floor(), "floor"),
    (lambda z: mg.topk(z, 1), "topk"), (lambda z: z.std(), "std"), (lambda z: mg.sign(z), "sign"),
    (lambda z: mg.cumsum(z, 0).cummax(0), "cummax"), (lambda z: mg.logsumexp(z), "logsumexp"),
])
def test_ops_that_need_an_ordering_refuse_complex_numbers_naming_themselves(call, name):
    z = mg.tensor(np.array([1 + 2j, 3 - 1j]))
    msg = raises_naming(TypeError, lambda: call(z), name)
    assert "complex" in msg and "complex128" in msg


def test_abs_and_angle_at_zero_give_pytorchs_finite_gradients():
    z0 = np.array([0j, 1 + 2j, -3 + 0j])
    for f in (lambda t: t.abs(), lambda t: t.angle()):
        zm, zt = both(z0)
        f(zm).sum().backward()
        f(zt).sum().backward()
        assert np.isfinite(zm.grad.numpy()).all()
        np.testing.assert_allclose(zm.grad.numpy(), zt.grad.numpy(), rtol=1e-14, atol=0)
    x0 = np.array([0.0, -1.0, 2.0])  # a real input: angle's gradient is 0 (PyTorch's)
    xm, xt = both(x0)
    mg.angle(xm).sum().backward()
    xt.angle().sum().backward()
    np.testing.assert_array_equal(xm.grad.numpy(), xt.grad.numpy())


# -- gradcheck on complex numbers -----------------------------------------------------------


def test_gradcheck_checks_complex_inputs_and_outputs_in_every_composition(device):
    rng = np.random.default_rng(3)
    z = mg.tensor(crand(rng, 3), requires_grad=True, device=device)
    x = mg.tensor(rng.standard_normal(3), requires_grad=True, device=device)
    for f in (lambda a, b: a * b, lambda a, b: mg.exp(a).conj() * b, lambda a, b: (a / (b + 2)).abs(),
              lambda a, b: mg.polar(b * b + 1, a.angle())):
        assert mg.gradcheck(f, (z, x), modes=("rev", "fwd"), order=2)


def _planted_mul():
    """``x * y`` whose gradient rule drops its conjugates (``g y`` where PyTorch's is ``g conj(y)``), and
    claims to be right for complex numbers as written."""
    from minigrad.engine import Op, run_op

    def rule(ctx, g):
        x, y = ctx.saved
        return g * y, g * x

    op = Op("planted_mul", lambda xp, x, y: x * y, rule, save=(0, 1), kind="elementwise", complex=True,
            jvp=lambda ctx, tx, ty: (0 if tx is None else tx * ctx.args[1]) + (0 if ty is None else ctx.args[0] * ty))
    return lambda x, y: run_op(op, x, y)


def test_gradcheck_catches_a_dropped_conjugate():
    rng = np.random.default_rng(4)
    z, w = (mg.tensor(crand(rng, 3), requires_grad=True) for _ in range(2))
    planted = _planted_mul()
    assert mg.gradcheck(planted, (mg.tensor(z.detach().real), mg.tensor(w.detach().real, requires_grad=True)))
    with pytest.raises(mg.GradcheckError, match=r"(?s)op 'planted_mul'.*reverse mode.*real pairs") as info:
        mg.gradcheck(planted, (z, w))  # locate names the op
    assert info.value.mode == "rev"
    with pytest.raises(mg.GradcheckError) as info:  # forward mode is right: it is held to the reverse one
        mg.gradcheck(planted, (z, w), modes=("fwd",))
    assert info.value.suspect == "rev"
    assert not mg.gradcheck(planted, (z, w), modes=("rev",), fast=True, raise_exception=False)
    assert mg.gradcheck(lambda a, b: a * b, (z, w), modes=("rev", "fwd"), order=2)  # the real rule: right


# -- mg.func -------------------------------------------------------------------------------


def test_func_vjp_jvp_and_grad_on_complex_numbers_match_torch_func():
    rng = np.random.default_rng(5)
    z0, u0, v0 = crand(rng, 4), crand(rng, 4), crand(rng, 4)

    def f_mg(z):
        return mg.sin(z) * z.conj() + mg.exp(z.abs())

    def f_th(z):
        return torch.sin(z) * z.conj() + torch.exp(z.abs())

    out, vjp_fn = mg.func.vjp(f_mg, mg.tensor(z0))
    tout, tvjp = torch.func.vjp(f_th, torch.tensor(z0))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-13)
    np.testing.assert_allclose(vjp_fn(mg.tensor(v0))[0].numpy(), tvjp(torch.tensor(v0))[0].numpy(), rtol=1e-12)
    _, t = mg.func.jvp(f_mg, (mg.tensor(z0),), (mg.tensor(u0),))
    _, tt = torch.func.jvp(f_th, (torch.tensor(z0),), (torch.tensor(u0),))
    np.testing.assert_allclose(t.numpy(), tt.numpy(), rtol=1e-12)
    g = mg.func.grad(lambda z: f_mg(z).abs().sum())(mg.tensor(z0))
    gt = torch.func.grad(lambda z: f_th(z).abs().sum())(torch.tensor(z0))
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-12)
    x0 = rng.standard_normal(4)  # a real primal of a complex function: a real gradient, as torch.func's
    _, vjp_x = mg.func.vjp(lambda x: x * (1 + 2j), mg.tensor(x0))
    _, tvjp_x = torch.func.vjp(lambda x: x * (1 + 2j), torch.tensor(x0))
    gx = vjp_x(mg.tensor(v0))[0]
    assert gx.dtype == np.float64
    np.testing.assert_allclose(gx.numpy(), tvjp_x(torch.tensor(v0))[0].numpy(), rtol=1e-13)


def test_func_grad_of_a_complex_function_and_complex_jacobians_raise_as_torch_funcs():
    z = mg.tensor(np.array([1 + 1j, 2 - 1j]))
    raises_naming(RuntimeError, lambda: mg.func.grad(lambda z: (z * z).sum())(z), "func.grad")
    for jac in (mg.func.jacrev, mg.func.jacfwd):  # torch.func's refuse complex inputs and outputs too
        raises_naming(RuntimeError, lambda jac=jac: jac(lambda z: z * z)(z), jac.__name__)
        raises_naming(RuntimeError, lambda jac=jac: jac(lambda x: x * 1j)(mg.tensor([1.0, 2.0])), jac.__name__)
    # the real pairs are how a complex Jacobian is taken
    j = mg.func.jacrev(lambda p: mg.view_as_real(mg.view_as_complex(p) ** 2))(mg.view_as_real(z))
    assert j.shape == (2, 2, 2, 2)


def test_forward_mode_of_a_complex_dual():
    from minigrad.autograd import forward_ad as fwAD

    z0, u0 = np.array([1 + 1j, -2 + 0.5j]), np.array([0.5 - 1j, 1j])
    with fwAD.dual_level():
        y = mg.angle(fwAD.make_dual(mg.tensor(z0), mg.tensor(u0)) * 2)
        t = fwAD.unpack_dual(y).tangent
    _, want = torch.func.jvp(lambda z: torch.angle(z * 2), (torch.tensor(z0),), (torch.tensor(u0),))
    assert t.dtype == np.float64
    np.testing.assert_allclose(t.numpy(), want.numpy(), rtol=1e-13)


# -- optimizers: PyTorch 2's real pairs -----------------------------------------------------


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.1)), ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.1)), ("AdamW", dict(lr=0.05, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1)),
])
def test_optimizers_update_complex_parameters_as_pytorch(name, kw, device):
    rng = np.random.default_rng(6)
    z0 = crand(rng, 3, 2)
    zm = mg.tensor(z0.copy(), requires_grad=True, device=device)
    zt = torch.tensor(z0.copy(), requires_grad=True)
    om, ot = getattr(mg.optim, name)([zm], **kw), getattr(torch.optim, name)([zt], **kw)
    for _ in range(5):
        for z, o in ((zm, om), (zt, ot)):
            o.zero_grad()
            ((z * z).real.sum() + (z.abs() ** 3).sum()).backward()
            o.step()
    np.testing.assert_allclose(to_np(zm.detach()), zt.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_adams_second_moment_is_per_part_not_the_modulus():
    """PyTorch #59998: |g|² for both parts would move a parameter whose gradient is all real differently."""
    z = mg.tensor(np.array([1 + 1j]), requires_grad=True)
    opt = mg.optim.Adam([z], lr=0.1)
    (z.real * 3 + z.imag * 1e-3).sum().backward()
    opt.step()
    np.testing.assert_allclose(z.detach().numpy(), [0.9 + 0.9j], rtol=1e-6)  # each part steps by lr
