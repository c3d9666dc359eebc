"""The MinigradError family, beside the standard types users catch."""


class MinigradError(Exception):
    """Base class of minigrad's own errors."""


class AxisError(MinigradError, IndexError, ValueError):
    """An axis out of range for a tensor's ndim (an IndexError and a ValueError, like NumPy's)."""


class GradcheckError(MinigradError, RuntimeError):
    """Analytic and numeric gradients disagree (raised by gradcheck / gradgradcheck)."""
