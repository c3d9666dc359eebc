"""Shared fixtures and helpers. One environment variable chooses the device every test runs on:

- ``MINIGRAD_DEVICE=cpu`` (the default): NumPy;
- ``MINIGRAD_DEVICE=cuda`` (or ``cuda:N``): CuPy on the GPU; every test skips cleanly, with the
  reason, where CuPy or a GPU is missing;
- ``MINIGRAD_DEVICE=fakecuda``: the CPU stand-in ``minigrad.testing.fakecupy`` posing as ``cuda:0``.
  It refuses what CuPy refuses (implicit conversion to NumPy, mixing with host arrays,
  NumPy-only functions), so the device code paths run honestly on a machine without a GPU.

The helpers at the bottom (``rnd``, ``leaf``, ``leaf_of``, ``leaves``, ``check``, ``dev``, ``to_np``,
``exact``, ``raises_naming``)
are imported by the test files (``from conftest import leaf, check``); they use only minigrad's
public API, and build tensors on the default device the autouse fixture below sets.
"""
import os

import numpy as np
import pytest

import minigrad as mg

_SPEC = os.environ.get("MINIGRAD_DEVICE", "cpu").strip().lower() or "cpu"
FAKE = _SPEC == "fakecuda"
if FAKE:
    mg.backend.use_fake_cupy()
    DEVICE = "cuda:0"
else:
    try:
        DEVICE = mg.backend.parse_device(_SPEC)
    except ValueError:
        raise pytest.UsageError(
            f"MINIGRAD_DEVICE={_SPEC!r}: expected 'cpu', 'cuda', 'cuda:N' or 'fakecuda'"
        ) from None


def _cuda_problem():
    """Why the requested CUDA device cannot be used (None when it can)."""
    try:
        mg.backend.xp_for(DEVICE)
    except (RuntimeError, ValueError) as e:
        return str(e)
    return None


def pytest_report_header(config):
    what = " (the CPU stand-in minigrad.testing.fakecupy)" if FAKE else ""
    return f"minigrad device: {DEVICE}{what}"


@pytest.fixture(scope="session")
def device():
    """The device every test builds its tensors on ('cpu' or 'cuda:N')."""
    if DEVICE != "cpu":
        problem = _cuda_problem()
        if problem:
            pytest.skip(f"MINIGRAD_DEVICE={_SPEC}: {problem}")
    return DEVICE


@pytest.fixture(autouse=True)
def _default_device(device):
    prev = mg.get_default_device()
    mg.set_default_device(device)
    yield
    mg.set_default_device(prev)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def dev(a):
    """A host array moved to the device the tests run on: constants that sit beside device tensors
    (a host array mixed with a CUDA tensor is an error, as it should be)."""
    return mg.backend.to_device(np.asarray(a), mg.get_default_device())


def to_np(x):
    """Host NumPy array of a Tensor / array."""
    if isinstance(x, mg.Tensor):
        return x.detach().numpy()
    return mg.backend.to_numpy(x) if hasattr(x, "shape") else np.asarray(x)


# -- data and leaves ------------------------------------------------------------------------------

def rnd(shape, seed=0, low=None, away=None):
    """float64 standard-normal host data from ``default_rng(seed)``; ``low`` shifts it positive
    (``abs(a) + low``), ``away`` keeps it off the kinks at those points (at least 0.1 away)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    if low is not None:
        a = np.abs(a) + low
    if away is not None:
        for p in away:
            close = np.abs(a - p) < 0.1
            a = np.where(close, p + 0.3 * np.sign(a - p + 1e-12), a)
    return a


def leaf(shape, seed=0, dtype=np.float64, scale=1.0, low=None, away=None):
    """A leaf requiring grad on the default device over ``rnd(shape, seed, low, away)``,
    multiplied by ``scale`` (in float64), then cast to ``dtype``."""
    a = rnd(shape, seed, low=low, away=away)
    if scale != 1.0:
        a = a * scale
    return mg.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def leaves(shapes, seed=0):
    """One ``leaf`` per shape, seeded ``seed``, ``seed + 1``, ..."""
    return [leaf(s, seed + i) for i, s in enumerate(shapes)]


def leaf_of(values, dtype=np.float64):
    """A leaf requiring grad on the default device holding the given values (not random data)."""
    return mg.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# -- gradient checks ------------------------------------------------------------------------------

def check(fn, *inputs, gg=True):
    """Assert that ``fn``'s gradients at ``inputs`` match finite differences (``mg.gradcheck``)
    and, unless ``gg=False``, so do its second derivatives (``mg.gradgradcheck``)."""
    assert mg.gradcheck(fn, inputs)
    if gg:
        assert mg.gradgradcheck(fn, inputs)


# -- helpers several test files share ---------------------------------------------------------------

def exact(t, want):
    """Assert that the Tensor (or array) ``t`` holds exactly ``want`` (compared in float64)."""
    np.testing.assert_allclose(to_np(t), np.asarray(want, dtype=np.float64), rtol=0, atol=0)


def raises_naming(exc, fn, *names):
    """Assert that ``fn()`` raises ``exc`` and its message names one of ``names`` (the function or
    its op); returns the message."""
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert any(n in msg for n in names), f"message does not name {names}: {msg!r}"
    return msg


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def load_example(name):
    """Import ``examples/<name>.py`` as a module (examples import each other: demo.py imports digits.py)."""
    import importlib.util
    import sys

    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def has_module(name) -> bool:
    """Whether an optional dependency is installed."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


def line_of(marker, path):
    """The line of ``path`` that ends with ``# <marker>`` (exactly one)."""
    with open(path, encoding="utf-8") as f:
        hits = [i for i, s in enumerate(f, 1) if s.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def run_in_threads(*fns):
    """Run each function in its own thread; re-raise (as an assertion) whatever any of them raised."""
    import threading

    errors = []

    def run(f):
        try:
            f()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(f,)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
