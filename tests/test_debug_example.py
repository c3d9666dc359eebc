"""Smoke test of examples/debug_gradients.py: the located wrong rule, the anomaly with its
highlighted graph, and the gradient-flow picture, written into a temporary folder."""
import importlib.util
import shutil
import warnings
from pathlib import Path

import minigrad as mg

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "debug_gradients.py"


def load():
    spec = importlib.util.spec_from_file_location("example_debug_gradients", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def line_of(text):
    return next(i for i, s in enumerate(EXAMPLE.read_text().splitlines(), 1) if text in s)


def test_debug_gradients_example(tmp_path):
    ex = load()
    lines = []
    has_mpl = importlib.util.find_spec("matplotlib") is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = ex.main(out_dir=tmp_path, depth=6, plot=has_mpl, log=lines.append)
    # 1. the wrong Swish backward, located
    assert res["message"].startswith("op 'Swish' (position 2 on the tape) at ")
    assert f"debug_gradients.py:{line_of('h = Swish.apply(')}" in res["message"].splitlines()[0]
    assert [r.op for r in res["report"].failures] == ["Swish"]
    assert any("FAIL" in s for s in lines)
    # 2. the NaN: sqrt of a zero variance, named with its line; the graph saved highlighted
    err = res["error"]
    assert isinstance(err, mg.AnomalyError) and err.op == "sqrt"
    assert err.line == line_of("BUG: sqrt'(0) is inf")
    assert res["forward_error"].op == "div" and res["forward_error"].phase == "forward"
    graph = Path(res["graph"])
    assert graph.parent == tmp_path and graph.stat().st_size > 0
    assert graph.suffix == (".svg" if shutil.which("dot") else ".dot")
    if graph.suffix == ".dot":
        assert "#cc0000" in graph.read_text()
    # 3. vanishing gradients: the first layer gets far less than the last
    assert res["norms"][0] < 1e-2 * res["norms"][-1]
    if has_mpl:
        assert (tmp_path / "grad_flow.png").stat().st_size > 0


def test_without_dot_the_highlighted_graph_is_saved_as_dot_text(tmp_path, monkeypatch):
    ex = load()
    monkeypatch.setattr(ex.shutil, "which", lambda name: None)
    lines = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        err, path, _ = ex.nan_model(tmp_path, lines.append)
    assert Path(path).suffix == ".dot" and "#cc0000" in Path(path).read_text()
    assert any("not installed" in s for s in lines) and err.op == "sqrt"
