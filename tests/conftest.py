"""Shared fixtures. One environment variable chooses the device every test runs on:

- ``MINIGRAD_DEVICE=cpu`` (the default): NumPy;
- ``MINIGRAD_DEVICE=cuda`` (or ``cuda:N``): CuPy on the GPU; every test skips cleanly, with the
  reason, where CuPy or a GPU is missing;
- ``MINIGRAD_DEVICE=fakecuda``: the CPU stand-in ``minigrad._fakecupy`` posing as ``cuda:0``.
  It refuses what CuPy refuses (implicit conversion to NumPy, mixing with host arrays,
  NumPy-only functions), so the device code paths run honestly on a machine without a GPU.
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
    what = " (the CPU stand-in minigrad._fakecupy)" if FAKE else ""
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
        return x.numpy()
    return mg.backend.to_numpy(x) if hasattr(x, "shape") else np.asarray(x)
