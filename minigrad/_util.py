"""Small shared helpers."""

NOARG = type("NoArg", (), {"__repr__": lambda self: "<not given>"})()  # "argument not given"


def pick(name_a, a, name_b, b, default, op):
    """Resolve a NumPy/PyTorch keyword alias pair (axis/dim, keepdims/keepdim)."""
    if a is not NOARG and b is not NOARG:
        raise TypeError(f"{op}: got both {name_a}= and its alias {name_b}=; give one")
    if a is not NOARG:
        return a
    if b is not NOARG:
        return b
    return default
