"""Shared fixtures. MINIGRAD_DEVICE=cuda runs the whole suite on the GPU (CuPy)."""
import os

import numpy as np
import pytest

import minigrad as mg

DEVICE = os.environ.get("MINIGRAD_DEVICE", "cpu")


def _cuda_ok():
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


if DEVICE != "cpu" and not _cuda_ok():
    pytest.exit("MINIGRAD_DEVICE=cuda but CuPy or a GPU is missing", returncode=0) if False else None


@pytest.fixture(scope="session")
def device():
    """The device every test builds its tensors on."""
    if DEVICE != "cpu" and not _cuda_ok():
        pytest.skip("CUDA device requested but CuPy/GPU unavailable")
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


def to_np(x):
    """Host NumPy array of a Tensor / array."""
    if isinstance(x, mg.Tensor):
        return x.numpy()
    return mg.backend.to_numpy(x) if hasattr(x, "shape") else np.asarray(x)
