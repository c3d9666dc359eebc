"""Write docs/pytorch.md's table of PyTorch names and their minigrad spelling, read from the op registry.

The table is generated, never edited by hand: its rows are the registry's entries that are compared with
PyTorch (those with a ``torch`` oracle, which tests/test_registry.py runs beside each op) and that users
can call. For each:

- **minigrad**: every public spelling of the entry's function, found where the registry put it: the
  names under ``mg`` (``.export`` and its aliases, ``mg.cat``), Tensor's methods (``.method``), the
  in-place methods that write its result (``t.exp_``), and the names under ``mg.nn.functional``;
- **PyTorch**: those spellings that PyTorch has in the same place (``torch.X``, ``Tensor.X``, ``F.X``),
  and the function the entry's torch oracle calls when the oracle is that one call (``th.clamp(x, lo,
  hi)`` for ``clip``, ``th.cat`` for ``concatenate``). An entry with neither is left out (no PyTorch
  spelling to look up).

Needs torch (it asks torch which names it has). tests/test_docs.py fails when the table is stale.

    python scripts/pytorch_table.py           # rewrite the table between the markers in docs/pytorch.md
    python scripts/pytorch_table.py --check   # exit 1 when docs/pytorch.md's table is stale
"""
from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import minigrad as mg  # noqa: E402
import minigrad.nn  # noqa: E402,F401 - modules that register ops of their own
import minigrad.nn.functional as F  # noqa: E402

DOC = REPO / "docs" / "pytorch.md"
BEGIN = "<!-- BEGIN the table scripts/pytorch_table.py writes from the op registry: do not edit by hand -->"
END = "<!-- END of the generated table -->"
PATHS = ("nn.functional", "linalg", "special")  # torch.<path>.<name> as an oracle calls it


# the instructions of an oracle that is one call, ``th.<name>(args)`` or ``x.<name>(args)``: loads of its
# arguments and constants, the attribute chain, the call (any other instruction: the oracle computes more)
_ONE_CALL = {"RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "PUSH_NULL", "LOAD_FAST", "LOAD_FAST_LOAD_FAST",
             "LOAD_DEREF", "LOAD_CONST", "LOAD_ATTR", "LOAD_METHOD", "KW_NAMES", "PRECALL", "CALL", "CALL_KW",
             "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_METHOD", "RETURN_VALUE"}


def oracle_call(oracle):
    """The torch function an oracle is, when it is one call: ``("torch", "clamp")`` for
    ``lambda th, x, lo=None, hi=None: th.clamp(x, lo, hi)``, ``("F", "linear")`` for
    ``th.nn.functional.linear(...)``, ``("Tensor", "permute")`` for ``x.permute(dims)``; an oracle
    made for a name (``getattr(th, name)``, the registry's families) gives that name. None for an
    oracle that computes more than one call (its torch functions are not the op's name)."""
    import dis  # noqa: PLC0415

    code = oracle.__code__
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in oracle.__closure__ or ()), strict=True))
    if code.co_names[:1] == ("getattr",) and isinstance(cells.get("name"), str):
        return "torch", cells["name"]
    ins = list(dis.get_instructions(oracle))
    if any(i.opname not in _ONE_CALL for i in ins) or sum(i.opname.startswith("CALL") for i in ins) != 1:
        return None
    names = list(code.co_names)
    first = next(i.argval for i in ins if i.opname.startswith("LOAD_FAST"))
    if isinstance(first, tuple):  # LOAD_FAST_LOAD_FAST
        first = first[0]
    if first != code.co_varnames[0]:  # a method of an argument
        return ("Tensor", names[-1]) if len(names) == 1 else None
    for path in PATHS:
        if names[:-1] == path.split("."):
            return ("F" if path == "nn.functional" else f"torch.{path}"), names[-1]
    return ("torch", names[0]) if len(names) == 1 else None


def _public(mod) -> dict:
    """id(object) -> the public names ``mod`` gives it."""
    out: dict = {}
    for n in getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]:
        v = getattr(mod, n, None)
        if callable(v):
            out.setdefault(id(v), []).append(n)
    return out


def _torch_has(torch, where, name) -> bool:
    owner = {"torch": torch, "Tensor": torch.Tensor, "F": torch.nn.functional,
             "torch.linalg": torch.linalg, "torch.special": torch.special}[where]
    return callable(getattr(owner, name, None))


def rows(torch) -> list:
    """(PyTorch spellings, minigrad spellings) of every registry entry compared with PyTorch, sorted."""
    reg = mg.ops.registry()
    in_mg, in_f = _public(mg), _public(F)
    in_place = {}  # an in-place op's own entry (exp_) -> the entry whose result it writes (exp)
    for e in reg.values():
        if e.kind == "inplace" and e.inplace:
            for other in reg.values():
                if other is not e and other.kind != "inplace" and other.forward is e.forward and other.frontend:
                    in_place.setdefault(other.name, []).extend(e.inplace)
                    break
    out = []
    for name, e in reg.items():
        if e.torch is None or e.frontend is None or e.kind == "inplace":
            continue
        ours = [("mg", n) for n in sorted(in_mg.get(id(e.frontend), []))]
        ours += [("Tensor", n) for n in e.method]
        ours += [("Tensor", n) for n in list(e.inplace) + in_place.get(name, []) if not n.startswith("__")]
        ours += [("F", n) for n in sorted(in_f.get(id(e.frontend), []))]
        if not ours:
            continue
        theirs = []
        for where, n in ours:
            place = "torch" if where == "mg" else where
            if _torch_has(torch, place, n) and (place, n) not in theirs:
                theirs.append((place, n))
        call = oracle_call(e.torch)
        if call is not None and call not in theirs and _torch_has(torch, *call):
            theirs.append(call)
        if theirs:
            out.append((theirs, ours))
    return sorted(out, key=lambda r: (r[0][0][1], r[0][0][0]))


def _spell(where, name) -> str:
    return f"`{'t' if where == 'Tensor' else where}.{name}`"


def table(torch) -> str:
    lines = [BEGIN, "", "| PyTorch | minigrad |", "|---|---|"]
    for theirs, ours in rows(torch):
        lines.append(f"| {', '.join(_spell(w, n) for w, n in theirs)} | {', '.join(_spell(w, n) for w, n in ours)} |")
    return "\n".join(lines + ["", END])


def rewritten(text: str, torch) -> str:
    """``text`` (docs/pytorch.md) with the table between the markers written anew."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC.relative_to(REPO)} has no markers for the table ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    return head + table(torch) + rest.split(END, 1)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the table in docs/pytorch.md "
                                                         "differs from what the registry gives")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        print("torch is not installed: the table says which names PyTorch has, so it needs torch "
              "(scripts/setup.sh dev installs it)", file=sys.stderr)
        return 2
    text = DOC.read_text(encoding="utf-8")
    new = rewritten(text, torch)
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(REPO)}'s table of PyTorch names is stale: run `python scripts/pytorch_table.py`",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote the table in {DOC.relative_to(REPO)} ({len(rows(torch))} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
