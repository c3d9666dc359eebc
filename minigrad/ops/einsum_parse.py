"""einsum's patterns: both grammars parsed and resolved into the internal form.

The internal form is, per operand, a tuple of integer labels (``...`` expanded
into one label per broadcast dim), the output's labels, each label's size and
each label's display name. ``einsum.py`` builds its plan from it.
"""
from __future__ import annotations

import string

_ELL = "..."
_LETTERS = string.ascii_letters  # the 52 labels np.einsum_path and opt_einsum read
_MAX_LABELS = len(_LETTERS)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

def _fmt_shapes(shapes):
    return "[" + ", ".join(str(tuple(s)) for s in shapes) + "]"


def _err(msg, pattern, shapes):
    return ValueError(f"einsum: {msg}; pattern {pattern!r}, operand shapes {_fmt_shapes(shapes)}")


# ---------------------------------------------------------------------------
# parsing: both grammars -> (terms, output) with names as strings, "..." as _ELL
# ---------------------------------------------------------------------------

def _parse_numpy(pattern, shapes):
    """NumPy grammar: one letter per label, ',' between operands, optional '->'; spaces ignored."""
    s = "".join(pattern.split())
    if s.count("->") > 1:
        raise _err("'->' may appear only once", pattern, shapes)
    lhs, arrow, rhs = s.partition("->")
    terms = [_numpy_term(t, pattern, shapes) for t in lhs.split(",")]
    out = _numpy_term(rhs, pattern, shapes) if arrow else None
    return terms, out


def _numpy_term(t, pattern, shapes):
    toks = []
    i = 0
    while i < len(t):
        ch = t[i]
        if t.startswith(_ELL, i):
            if _ELL in toks:
                raise _err(f"more than one '...' in the term {t!r}", pattern, shapes)
            toks.append(_ELL)
            i += 3
            continue
        if ch not in _LETTERS:
            what = "a '.' outside an ellipsis '...'" if ch == "." else f"the character {ch!r}"
            raise _err(f"bad character: {what} (NumPy-grammar labels must be letters a-z, A-Z)",
                       pattern, shapes)
        toks.append(ch)
        i += 1
    return toks


def _parse_einops(pattern, shapes):
    """einops grammar: space-separated names, ',' between operands, '->' required."""
    n_arrow = pattern.count("->")
    if n_arrow != 1:
        raise _err("the einops grammar needs exactly one '->' (the output is never implicit)"
                   if n_arrow == 0 else "'->' may appear only once", pattern, shapes)
    lhs, _, rhs = pattern.partition("->")
    terms = [_einops_term(t, pattern, shapes) for t in lhs.split(",")]
    return terms, _einops_term(rhs, pattern, shapes)


def _einops_term(t, pattern, shapes):
    toks = []
    for tok in t.replace(_ELL, f" {_ELL} ").split():
        if tok == _ELL:
            if _ELL in toks:
                raise _err(f"more than one '...' in the term {t.strip()!r}", pattern, shapes)
        elif not (tok.isidentifier() and tok.isascii()):
            raise _err(f"bad characters in the name {tok!r} (einops-grammar names are identifiers: "
                       "letters, digits and '_', separated by spaces)", pattern, shapes)
        toks.append(tok)
    return toks


# ---------------------------------------------------------------------------
# the internal form: integer labels, '...' expanded, sizes checked
# ---------------------------------------------------------------------------

def _resolve(grammar, pattern, shapes):
    """-> (labels per operand, output labels, size per label, display name per label)."""
    terms, out = (_parse_numpy if grammar == "numpy" else _parse_einops)(pattern, shapes)
    n_ell = _ellipsis_dims(grammar, terms, pattern, shapes)
    nell = max(n_ell, default=0)
    in_labels, ids, names, count = _label(terms, n_ell, nell)
    if len(names) > _MAX_LABELS:
        raise _err(f"more than {_MAX_LABELS} names: {len(names) - nell} name(s) and {nell} '...' dim(s) "
                   f"make {len(names)} labels", pattern, shapes)
    size = _sizes(in_labels, names, pattern, shapes)
    out_labels = _out_labels(out, ids, list(range(nell)), count, pattern, shapes)  # '...' dims: ids 0..nell-1
    return in_labels, out_labels, size, names


def _ellipsis_dims(grammar, terms, pattern, shapes):
    """How many dims each operand's '...' stands for (0 without one); checks the operand count
    and every operand's rank against its term."""
    n = len(shapes)
    if len(terms) != n:
        raise _err(f"wrong number of operands: the pattern has {len(terms)} input term(s) but "
                   f"{n} operand(s) were given", pattern, shapes)
    n_ell = []
    for k, (t, shp) in enumerate(zip(terms, shapes, strict=True)):
        named = sum(tok != _ELL for tok in t)
        if _ELL in t:
            if len(shp) < named:
                raise _err(f"rank mismatch: operand {k} has {len(shp)} dim(s) but its term "
                           f"{_show(t, grammar)!r} names {named} besides '...'", pattern, shapes)
            n_ell.append(len(shp) - named)
        else:
            if len(shp) != named:
                raise _err(f"rank mismatch: operand {k} has {len(shp)} dim(s) but its term "
                           f"{_show(t, grammar)!r} names {named}", pattern, shapes)
            n_ell.append(0)
    return n_ell


def _label(terms, n_ell, nell):
    """-> (integer labels per operand, id per name, name per id, how many times each name
    occurs). The ``nell`` broadcast dims get ids 0..nell-1 (named "...0", ...), right-aligned."""
    ids = {}
    names = []

    def label(name):
        if name not in ids:
            ids[name] = len(names)
            names.append(name)
        return ids[name]

    ell_ids = [label(f"...{i}") for i in range(nell)]  # the broadcast dims, right-aligned
    in_labels = []
    count = {}
    for t, m in zip(terms, n_ell, strict=True):
        labs = []
        for tok in t:
            if tok == _ELL:
                labs.extend(ell_ids[nell - m:])
            else:
                labs.append(label(tok))
                count[tok] = count.get(tok, 0) + 1
        in_labels.append(tuple(labs))
    return in_labels, ids, names, count


def _sizes(in_labels, names, pattern, shapes):
    """The size of each label: equal within an operand, equal or 1 (broadcast) across them."""
    size = {}
    for k, (labs, shp) in enumerate(zip(in_labels, shapes, strict=True)):
        own = {}
        for lab, s in zip(labs, shp, strict=True):
            if own.setdefault(lab, s) != s:
                raise _err(f"inconsistent sizes: the repeated label {_name(names[lab])!r} has sizes "
                           f"{own[lab]} and {s} within operand {k}", pattern, shapes)
            cur = size.get(lab, 1)
            if s != 1 and cur != 1 and s != cur:
                raise _err(f"inconsistent sizes for the label {_name(names[lab])!r}: {cur} and {s} "
                           "(sizes must match, or be 1 to broadcast)", pattern, shapes)
            if s != 1 or lab not in size:
                size[lab] = s
    return size


def _out_labels(out, ids, ell_ids, count, pattern, shapes):
    """The output's labels: the given output term's, or NumPy's implicit output."""
    if out is None:  # NumPy's implicit output: the '...' dims, then labels seen once, sorted
        return tuple(ell_ids) + tuple(ids[c] for c in sorted(c for c, v in count.items() if v == 1))
    seen = set()
    out_labels = []
    for tok in out:
        if tok in seen:
            raise _err(f"repeated output label {tok!r}", pattern, shapes)
        seen.add(tok)
        if tok == _ELL:
            out_labels.extend(ell_ids)
        elif tok not in count:
            raise _err(f"output label {tok!r} appears in no input", pattern, shapes)
        else:
            out_labels.append(ids[tok])
    return tuple(out_labels)


def _show(t, grammar):
    return ("" if grammar == "numpy" else " ").join(t)


def _name(n):
    return "..." if n.startswith("...") else n
