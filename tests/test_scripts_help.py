"""Every script in examples/ and visualize/ answers ``--help`` (issue 33): a usage line, a
description, and each option with its default, without running or writing anything."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for d in ("examples", "visualize") for p in (ROOT / d).glob("*.py") if not p.name.startswith("_"))

# one interpreter runs every script's --help (runpy, as "__main__"): quick, and each SystemExit caught
DRIVER = r"""
import contextlib, io, json, runpy, sys
out = {}
for path in sys.argv[1:]:
    buf = io.StringIO()
    sys.argv = [path, "--help"]
    code = "no exit"
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code
    except BaseException as e:
        code = f"{type(e).__name__}: {e}"
    out[path] = [code, buf.getvalue()]
print(json.dumps(out))
"""


def _snapshot():
    return {p: p.stat().st_mtime_ns for d in ("examples/out", "visualize/out", "visualize/img")
            for p in (ROOT / d).rglob("*") if (ROOT / d).exists()}


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    before = _snapshot()
    r = subprocess.run([sys.executable, "-c", DRIVER, *map(str, SCRIPTS)], capture_output=True, text=True,
                       cwd=tmp_path_factory.mktemp("cwd"), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert _snapshot() == before, "a script wrote files when asked for --help"
    return res


def test_there_are_scripts():
    names = {p.name for p in SCRIPTS}
    assert {"quickstart.py", "puzzles.py", "debug_gradients.py", "gallery.py", "mlp_graph.py",
            "training_curve.py"} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_help_has_a_description_and_every_default(helps, path):
    code, text = helps[str(path)]
    assert code in (0, None), f"{path.name} --help: exit {code!r}\n{text[-2000:]}"
    assert text.startswith("usage: "), text[:500]
    blocks = text.split("\n\n")
    assert len(blocks) >= 3 and len(blocks[1].strip()) > 20, f"{path.name}: no description\n{text}"
    # every option and positional but -h carries its default (an entry starts two spaces in)
    for entry in re.split(r"\n  (?=\S)", text.split("\n\n", 2)[2]):
        entry = entry.strip()
        if entry and not entry.startswith(("-h, --help", "options:", "positional arguments:")):
            assert "(default:" in entry, f"{path.name}: option without its default: {entry!r}"
