"""``mg.autograd``: the public face of the tape.

The engine itself (Node, run_op, backward, grad, grad mode) lives in ``minigrad/engine.py``;
user-defined ops in ``function.py``; the printable tape in ``tape.py``; the profile in
``profile.py``; anomaly mode in ``anomaly.py``; the per-op gradient check in ``check.py``.
This module only gathers their public names.
"""
from __future__ import annotations

import sys

from . import forward_ad
from .anomaly import detect_anomaly
from .backward import grad
from .check import CheckReport, OpCheck, check_ops
from .engine import Node
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .tape import Tape, tape

__all__ = ["CheckReport", "Function", "FunctionCtx", "Node", "OpCheck", "Tape", "check_ops", "detect_anomaly",
           "enable_grad", "forward_ad", "grad", "is_grad_enabled", "no_grad", "profile", "set_grad_enabled", "tape"]


def profile():
    """Context manager collecting, per op, calls, forward time, backward time and bytes saved.

    >>> with mg.autograd.profile() as p:
    ...     (x * x).sum().backward()
    >>> print(p.table())
    """
    from .profile import Profile  # noqa: PLC0415 - the profile module loads on first use

    return Profile()


# ``import minigrad.autograd.forward_ad as fwAD``, as PyTorch users write it: the module is
# ``minigrad/forward_ad.py`` (beside the engine), reachable under this name too
sys.modules[__name__ + ".forward_ad"] = forward_ad
