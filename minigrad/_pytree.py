"""Pytrees, as ``torch.func`` takes them: nested tuples, lists, named tuples and dicts, whose other
values (Tensors, numbers, None) are the leaves. ``flatten`` gives the leaves in order and the
structure; ``unflatten`` puts leaves back into it; ``leaves_like`` matches a prefix (``in_dims``)."""
from __future__ import annotations


def flatten(tree):
    """``(leaves, spec)``: the leaves of ``tree`` in order, and its structure for ``unflatten``."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, (tuple, list)):
        return (type(tree), tuple(_flatten(v, leaves) for v in tree))
    if isinstance(tree, dict):
        return (dict, tuple(tree), tuple(_flatten(v, leaves) for v in tree.values()))
    leaves.append(tree)
    return None


def unflatten(leaves, spec):
    """The structure ``spec`` (from ``flatten``) holding ``leaves`` in order."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec is None:
        return next(it)
    kind = spec[0]
    if kind is dict:
        return {k: _unflatten(it, s) for k, s in zip(spec[1], spec[2], strict=True)}
    parts = [_unflatten(it, s) for s in spec[1]]
    return kind(*parts) if hasattr(kind, "_fields") else kind(parts)


def num_leaves(spec) -> int:
    if spec is None:
        return 1
    return sum(num_leaves(s) for s in spec[-1])


def leaves_like(prefix, tree, name, what):
    """One value per leaf of ``tree``: ``prefix`` is ``tree``'s structure down to some depth, each of its
    leaves standing for the whole subtree below it (``in_dims=(0, None)`` for two arguments)."""
    out = []
    _match(prefix, tree, out, name, what, what)
    return out


def _match(prefix, tree, out, name, what, path):
    if isinstance(prefix, (tuple, list)) and not hasattr(prefix, "_fields") or isinstance(prefix, dict):
        if isinstance(prefix, dict):
            if not isinstance(tree, dict) or set(prefix) != set(tree):
                raise ValueError(f"{name}: {path} is a dict with keys {sorted(map(str, prefix))}, but the matching "
                                 f"input is {_describe(tree)}; it must have the same structure")
            for k in tree:
                _match(prefix[k], tree[k], out, name, what, f"{path}[{k!r}]")
            return
        if not isinstance(tree, (tuple, list)) or len(prefix) != len(tree):
            raise ValueError(f"{name}: {path} has {len(prefix)} entries, but the matching input is "
                             f"{_describe(tree)}; it must have the same structure")
        for i, (p, t) in enumerate(zip(prefix, tree, strict=True)):
            _match(p, t, out, name, what, f"{path}[{i}]")
        return
    leaves, _ = flatten(tree)
    out.extend([prefix] * len(leaves))


def _describe(tree):
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(map(str, tree))}"
    if isinstance(tree, (tuple, list)):
        return f"a {type(tree).__name__} of {len(tree)}"
    return f"a {type(tree).__name__}"
