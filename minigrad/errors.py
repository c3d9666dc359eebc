"""The MinigradError family, beside the standard types users catch."""


class MinigradError(Exception):
    """Base class of minigrad's own errors."""


class AxisError(MinigradError, IndexError, ValueError):
    """An axis out of range for a tensor's ndim (an IndexError and a ValueError, like NumPy's)."""


class GradcheckError(MinigradError, RuntimeError):
    """Analytic and numeric gradients disagree (raised by gradcheck / gradgradcheck)."""


class AnomalyError(MinigradError, RuntimeError):
    """Anomaly mode (``mg.autograd.detect_anomaly``) saw an op turn finite values into NaN/inf.

    Attributes: ``node`` (the op's Node, or None for a forward op that was not recorded),
    ``op`` (its name), ``position`` (its ``seq``), ``input`` (the input whose gradient went
    bad; None in forward), ``count`` (bad elements), ``file``, ``line`` (the user's code that
    created the op), ``phase`` ("backward" or "forward").
    """

    def __init__(self, message, node=None, op=None, position=None, input=None, count=0,  # noqa: A002
                 file=None, line=None, phase="backward"):
        super().__init__(message)
        self.node = node
        self.op = op
        self.position = position
        self.input = input
        self.count = count
        self.file = file
        self.line = line
        self.phase = phase


class CompileError(MinigradError, RuntimeError):
    """``mg.compile`` met Python that a replay cannot repeat (``.item()``, ``bool(t)``, a new
    parameter, an in-place write into an input...). Attributes: ``what`` (the construct),
    ``file`` and ``line`` (the user's code that did it)."""

    def __init__(self, message, what=None, file=None, line=None):
        super().__init__(message)
        self.what = what
        self.file = file
        self.line = line
