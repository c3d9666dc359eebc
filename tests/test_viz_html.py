"""mg.viz.html: the graph page. The page's data and file in Python, then the page itself in a
real browser (headless Chromium driven by Playwright): it renders without script errors,
clicking a box shows its details, the search finds an op, modules open, the wheel zooms,
dragging pans, and the 10,000-op page loads. The browser tests take the screenshots docs/viz.md
shows; they write them into docs/img/ only when MINIGRAD_WRITE_SCREENSHOTS=1 (a test run leaves
the clone as it found it), elsewhere into the test's temporary folder.

Without Chromium or Playwright the browser tests skip, saying why; under CI (CI set) they
must run, so there a missing browser is a failure (scripts/install-system-deps.sh installs
Chromium with the dev extra, and the dev extra has Playwright).
"""
from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"


def _shots(tmp_path):
    """Where the browser tests save their screenshots: docs/img/ when asked to refresh them."""
    return IMG if os.environ.get("MINIGRAD_WRITE_SCREENSHOTS") == "1" else tmp_path
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def page_json(page) -> dict:
    """The graph data a page carries."""
    m = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page.source, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def mlp_step(profiled=True):
    """One training step of a small MLP (forward, loss, backward), under a profile."""
    rng = np.random.default_rng(0)
    model = mg.nn.Sequential(mg.nn.Linear(4, 16), mg.nn.ReLU(), mg.nn.Linear(16, 3))
    x = mg.tensor(rng.standard_normal((8, 4)).astype("float32"))
    y = mg.tensor(rng.integers(0, 3, 8))
    with mg.autograd.profile() as prof:
        loss = mg.nn.functional.cross_entropy(model(x), y)  # the line the page names
        loss.backward()
    return model, loss, prof


def train_step_profile(keep_model=False):
    """One whole training step of a small MLP (zero_grad, forward, cross_entropy, backward, an SGD
    step) profiled inside a function, as a training loop runs it: when it returns, the step's
    tensors and Nodes (and, unless ``keep_model``, the model) are gone. Returns the profile, weak
    references to what must be gone, and the model when kept."""
    rng = np.random.default_rng(0)
    model = mg.nn.Sequential(mg.nn.Linear(4, 16), mg.nn.ReLU(), mg.nn.Linear(16, 3))
    opt = mg.optim.SGD(model.parameters(), lr=0.1)
    x = mg.tensor(rng.standard_normal((8, 4)).astype("float32"))
    y = mg.tensor(rng.integers(0, 3, 8))
    with mg.autograd.profile() as prof:
        opt.zero_grad()
        loss = mg.nn.functional.cross_entropy(model(x), y)  # the line the page names
        loss.backward()
        opt.step()
    gone = [weakref.ref(loss), weakref.ref(loss.grad_fn), weakref.ref(x)]
    if not keep_model:
        gone.append(weakref.ref(model[0].weight))
    gc.collect()
    return prof, gone, (model if keep_model else None)


class Cell(mg.nn.Module):
    """An RNN cell: h' = tanh(W h + U x)."""

    def __init__(self):
        super().__init__()
        self.W = mg.nn.Linear(8, 8)
        self.U = mg.nn.Linear(4, 8, bias=False)

    def forward(self, h, x):
        return (self.W(h) + self.U(x)).tanh()


def rnn_loss(steps):
    """A recurrent graph of 4 ops a step (two linears, add, tanh), shared weights, and a loss."""
    cell = Cell()
    h = mg.zeros((2, 8))
    xs = np.random.default_rng(0).standard_normal((steps, 2, 4)).astype("float32")
    for k in range(steps):
        h = cell(h, mg.tensor(xs[k]))
    loss = (h * h).sum()
    loss.backward()
    return cell, loss


# -- the page's data and file (no browser) -------------------------------------------------------

def test_page_is_one_file_with_no_network_and_a_repr_html(tmp_path):
    model, loss, _ = mlp_step()
    path = tmp_path / "step.html"
    page = mg.viz.html(loss, path, params=model)
    assert isinstance(page, mg.viz.GraphPage) and path.read_text(encoding="utf-8") == page.source
    src = page.source
    assert "<script src" not in src and "<link" not in src and "@import" not in src
    assert "default-src 'none'" in src            # the page may not fetch anything
    assert "dagre" in src and "sourceMappingURL" not in src
    assert 'srcdoc="' in page._repr_html_() and "&lt;script" in page._repr_html_()
    assert "ops" in repr(page) and page.build_s >= 0


def test_page_data_details_of_an_op():
    model, loss, _ = mlp_step()
    d = page_json(mg.viz.html(loss, params=model))
    ops = {n["name"]: n for n in d["nodes"] if n["k"] == "op"}
    ce = dict(ops["cross_entropy"]["rows"])
    assert ce["output"] == "() float32" and ce["input 0"].startswith("(8, 3) float32")
    assert "saved for backward" in ce
    leaves = {n["name"]: n for n in d["nodes"] if n["k"] == "leaf"}
    g = leaves["0.weight"]["grad"]
    assert set(g) >= {"min", "mean", "max", "norm", "nan", "inf"}
    assert g["norm"] == pytest.approx(float(np.linalg.norm(np.asarray(model[0].weight.grad.numpy()))), rel=1e-5)
    assert [f["name"] for f in d["folds"] if f["kind"] == "module"] == ["0 · Linear", "2 · Linear"]


def test_page_from_a_profile_has_times_and_file_line():
    model, loss, prof = mlp_step()
    d = page_json(mg.viz.html(prof, params=model))
    rows = [dict(n["rows"]) for n in d["nodes"] if n["k"] == "op"]
    assert rows and all("forward" in r and "backward" in r for r in rows)
    here = f"{Path(__file__).name}:"
    assert all(here in r["created at"] for r in rows), [r["created at"] for r in rows]


def test_page_from_a_profile_after_the_step_is_gone(tmp_path):
    """The usual case: profile a training step, draw it afterwards. The page comes from what the
    profile recorded (ops, shapes, edges, times, file:line), not from the Nodes, which are gone."""
    prof, gone, _ = train_step_profile()
    assert all(r() is None for r in gone) and prof.nodes() == []
    path = tmp_path / "step.html"
    page = mg.viz.html(prof, path)
    assert path.read_text(encoding="utf-8") == page.source and page.n_ops == 4
    d = page_json(page)
    assert d["source"] == "profile" and d["title"] == "profiled graph of 4 ops"
    ops = [n for n in d["nodes"] if n["k"] == "op"]
    assert [n["name"] for n in ops] == ["linear", "relu", "linear", "cross_entropy"]
    assert [n["sub"] for n in ops] == ["(8, 16) float32", "(8, 16) float32", "(8, 3) float32", "() float32"]
    num = {id(n): i for i, n in enumerate(d["nodes"])}
    leaves = {n["sub"]: num[id(n)] for n in d["nodes"] if n["k"] == "leaf"}
    assert set(leaves) == {"(16, 4) float32", "(16,) float32", "(3, 16) float32", "(3,) float32"}
    (out,) = [num[id(n)] for n in d["nodes"] if n["k"] == "out"]
    edges = {(a, b): mark for a, b, mark in d["edges"]}
    assert set(edges) == {(0, 1), (1, 2), (2, 3), (3, out), (leaves["(16, 4) float32"], 0),
                          (leaves["(16,) float32"], 0), (leaves["(3, 16) float32"], 2), (leaves["(3,) float32"], 2)}
    assert edges[(leaves["(16,) float32"], 0)].startswith("broadcast (16,) → (8, 16)")  # the bias: grad summed
    ce = dict(ops[3]["rows"])
    assert ce["input 0"] == "(8, 3) float32 ← #2 linear" and ce["input 1"] == "(8,) int64 (needs no grad)"
    assert ce["attributes"] == "reduction=mean" and ce["output"] == "() float32"
    assert "gone with the graph" in ce["saved for backward"]
    here = f"{Path(__file__).name}:"
    for n in ops:
        rows = dict(n["rows"])
        assert here in rows["created at"] and rows["forward"].endswith("s") and rows["backward"] != "not run"
        assert n["val"] is None                      # values are not recorded: they are gone
    leaf = dict(d["nodes"][leaves["(16, 4) float32"]]["rows"])
    assert leaf["value, gradient"].startswith("gone")
    table = prof.table()                             # and the profile's own table still reads
    assert any(ln.split()[:2] == ["linear", "2"] for ln in table.splitlines()) and "cross_entropy" in table


def test_page_from_a_profile_names_the_parameters_of_a_model_still_alive():
    """The step's tensors are gone, the model is not: params= names its parameters and folds its
    modules, and the leaves show their values and gradients."""
    prof, gone, model = train_step_profile(keep_model=True)
    assert all(r() is None for r in gone)
    d = page_json(mg.viz.html(prof, params=model))
    leaves = {n["name"]: n for n in d["nodes"] if n["k"] == "leaf"}
    assert set(leaves) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    g = leaves["0.weight"]["grad"]
    assert g["norm"] == pytest.approx(float(np.linalg.norm(np.asarray(model[0].weight.grad.numpy()))), rel=1e-5)
    assert leaves["0.weight"]["val"]["n"] == 64
    assert [f["name"] for f in d["folds"] if f["kind"] == "module"] == ["0 · Linear", "2 · Linear"]
    ops = {n["name"]: dict(n["rows"]) for n in d["nodes"] if n["k"] == "op"}
    assert ops["relu"]["input 0"] == "(8, 16) float32 ← #0 linear"
    assert ops["linear"]["input 1"] == "(3, 16) float32 ← 2.weight"   # the second linear (the last of the name)


def test_page_from_a_profile_draws_an_op_recorded_before_it_as_an_input():
    x = mg.tensor(np.ones((3, 2)), requires_grad=True)
    h = x.exp()                                      # before the block
    with mg.autograd.profile() as prof:
        loss = (h * 2.0).sum()
    del loss
    d = page_json(mg.viz.html(prof))
    assert [n["name"] for n in d["nodes"] if n["k"] == "op"] == ["mul", "sum"]
    (inp,) = [n for n in d["nodes"] if n["k"] == "leaf"]
    assert inp["name"] == f"exp #{h.grad_fn.seq}" and inp["sub"] == "(3, 2) float64"
    assert "outside the profile" in dict(inp["rows"])["recorded"]


def test_page_from_a_list_of_outputs_and_from_a_compiled_step():
    x = mg.tensor(np.ones((3, 2)), requires_grad=True)
    a, b = (x * 2).sum(), (x.exp()).mean()
    d = page_json(mg.viz.html([a, b]))
    assert sum(n["k"] == "out" for n in d["nodes"]) == 2

    w = mg.tensor(np.ones((2, 2)), requires_grad=True)

    @mg.compile
    def step(x):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    for _ in range(3):
        step(mg.tensor(np.ones((3, 2))))
    page = mg.viz.html(step.tape())
    d = page_json(page)
    assert d["source"] == "compiled" and any(n["name"] == "matmul" for n in d["nodes"])
    assert d["edges"]


def test_nan_gradients_and_anomaly_failures_are_marked():
    x = mg.tensor(np.array([0.0, 1.0]), requires_grad=True)
    with pytest.raises(mg.AnomalyError) as e, mg.autograd.detect_anomaly(), np.errstate(divide="ignore"):
        loss = x.sqrt().sum()
        loss.backward()
    d = page_json(mg.viz.html(loss, highlight=e.value))
    bad = [n for n in d["nodes"] if n.get("anom")]
    assert [n["name"] for n in bad] == ["sqrt"] and d["select"] == d["nodes"].index(bad[0])
    assert "test_viz_html.py:" in dict(bad[0]["rows"])["created at"]

    y = mg.tensor(np.array([0.0, 1.0]), requires_grad=True)
    with np.errstate(divide="ignore"):
        (y.sqrt().sum()).backward()  # the gradient at 0 is inf
    d = page_json(mg.viz.html(y.sqrt().sum(), params={"y": y}))
    (leaf,) = [n for n in d["nodes"] if n["k"] == "leaf"]
    assert leaf["bad"] == 1 and leaf["grad"]["inf"] == 1


def test_big_graphs_fold_and_no_recursion():
    _, loss = rnn_loss(2500)
    t = time.perf_counter()
    d = page_json(mg.viz.html(loss))
    assert d["stats"]["ops"] == 10002 and time.perf_counter() - t < 60
    top = [n for n in d["nodes"] if n["f"] == -1] + [f for f in d["folds"] if f["p"] == -1]
    assert len(top) <= 80  # what the page lays out first
    assert any(f["kind"] == "block" for f in d["folds"])
    x = mg.tensor(np.ones(3), requires_grad=True)
    y = x
    for _ in range(100_000):  # a chain far deeper than Python's recursion limit
        y = y * 1.0
    d = page_json(mg.viz.html(y.sum()))
    assert d["stats"]["ops"] == 100_001 and any(f["kind"] == "chain" for f in d["folds"])


def test_errors_name_the_function():
    with pytest.raises(TypeError, match="viz.html: expected a Tensor"):
        mg.viz.html("loss")
    with pytest.raises(TypeError, match="viz.html: path must be"):
        mg.viz.html(mg.tensor([1.0], requires_grad=True).sum(), path=3)
    with pytest.raises(ValueError, match="viz.html: the profile recorded no op"):
        mg.viz.html(mg.autograd.profile())


def test_notebook_reprs():
    model, loss, prof = mlp_step()
    assert "<table>" in mg.autograd.tape(loss)._repr_html_() and "cross_entropy" in mg.autograd.tape(loss)._repr_html_()
    table = prof.table()
    assert isinstance(table, str) and "<th>forward</th>" in table._repr_html_() and "<table>" in prof._repr_html_()


def test_graph_shows_the_page_inline_without_dot(monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setattr(mg.viz.shutil, "which", lambda name: None)
    monkeypatch.setenv("PATH", "")
    model, loss, _ = mlp_step()
    bundle = mg.viz.graph(loss, params=model)._repr_mimebundle_()
    assert "srcdoc=" in bundle["text/html"] and "dot" in bundle["text/plain"]


def test_grad_flow_figure_shows_itself_in_a_notebook():
    pytest.importorskip("matplotlib")
    model, loss, _ = mlp_step()
    fig = mg.viz.grad_flow(model)
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_install_system_deps_installs_chromium_for_dev_only(tmp_path):
    """scripts/install-system-deps.sh dev (what setup.sh runs for the dev extra) says it installs
    Chromium and why, then runs apt-get; for another extra it leaves the browser alone."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "id", "env", "dirname"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool}")
        (bin_ / tool).symlink_to(shutil.which(tool))
    (bin_ / "apt-get").write_text(f'#!{shutil.which("bash")}\necho "apt-get $*" >> "$LOG"\n')
    (bin_ / "sudo").write_text(f'#!{shutil.which("bash")}\nexec "$@"\n')
    (bin_ / "dot").write_text(f"#!{shutil.which('bash')}\n")
    for f in ("apt-get", "sudo", "dot"):
        (bin_ / f).chmod(0o755)
    log = tmp_path / "calls"
    script = str(ROOT / "scripts" / "install-system-deps.sh")
    r = subprocess.run([str(bin_ / "bash"), script, "dev"], env={"PATH": str(bin_), "LOG": str(log)},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Chromium" in r.stdout and "test_viz_html" in r.stdout
    assert log.read_text().splitlines()[-1].endswith("install -y -qq chromium")
    log.unlink()
    r = subprocess.run([str(bin_ / "bash"), script, "examples"], env={"PATH": str(bin_), "LOG": str(log)},
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "" and not log.exists()
    assert 'install-system-deps.sh "$extra"' in (ROOT / "scripts" / "setup.sh").read_text()


# -- in a real browser ------------------------------------------------------------------------------

def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install playwright, or minigrad's dev extra)"
    if _chromium() is None:
        return "Chromium is not installed (apt-get install chromium, or bash scripts/install-system-deps.sh dev)"
    return None


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


@pytest.fixture(scope="module")
def browser():
    why = _browser_missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the graph page's browser tests cannot run: {why}; "
                        "`bash scripts/setup.sh dev` should have installed both")
        pytest.skip(f"the graph page's browser tests are skipped: {why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        yield b
        b.close()


def _open(browser, path):
    """A new page showing ``path``; returns (page, errors, foreign requests, seconds to ready)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    t = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=120_000)
    return page, errors, requests, time.perf_counter() - t


def _wait_for(cond, seconds=10.0):
    """Poll ``cond`` from Python (the page's CSP forbids the eval Playwright's wait_for_function uses)."""
    end = time.perf_counter() + seconds
    while not cond():
        assert time.perf_counter() < end, "timed out"
        time.sleep(0.05)


def _transform(page):
    return page.get_attribute("#scene", "transform")


def test_mlp_step_page_in_a_browser(browser, tmp_path):
    model, loss, prof = mlp_step()
    t = time.perf_counter()
    html = mg.viz.html(prof, tmp_path / "step.html", params=model, title="one training step of an MLP")
    build = time.perf_counter() - t
    page, errors, requests, load = _open(browser, tmp_path / "step.html")
    print(f"\nMLP step page: {len(html.source) // 1024} KiB, built in {build:.3f} s, "
          f"opened in {load:.3f} s (script {page.evaluate('window.minigradPage.loadMs'):.0f} ms)")
    assert not errors and not requests
    assert page.locator("g.node").count() >= 4

    page.locator("g.node", has_text="cross_entropy").click()    # details of an op
    assert page.text_content("#detail-name") == "cross_entropy"
    rows = page.text_content("#detail-rows")
    assert "(8, 3) float32" in rows and "() float32" in rows and "test_viz_html.py:" in rows
    assert "forward" in rows and "saved for backward" in rows
    assert "min" in page.text_content("#detail-summary")
    assert page.locator("g.node.sel").count() == 1 and page.locator("path.edge.hot").count() >= 1

    n = page.locator("g.node").count()
    page.locator("g.node", has_text="0 · Linear").click()       # a module opens
    assert page.locator("g.node").count() > n and page.locator("g.cluster").count() == 1
    page.locator("g.cluster text").first.click()                 # and folds again
    assert page.locator("g.cluster").count() == 0

    page.fill("#search", "relu")                                  # the search finds an op
    page.wait_for_selector("g.node.match")
    assert page.text_content("#count") == "1 match" and page.locator("g.node.match").count() == 1
    page.locator("#results li").first.click()
    assert page.text_content("#detail-name") == "relu"

    before = _transform(page)                                     # wheel zooms, dragging pans
    page.mouse.move(400, 400)
    page.mouse.wheel(0, -300)
    _wait_for(lambda: _transform(page) != before)
    zoomed = _transform(page)
    page.mouse.move(200, 700)
    page.mouse.down()
    page.mouse.move(260, 650, steps=5)
    page.mouse.up()
    assert _transform(page) != zoomed
    page.fill("#search", "")
    page.locator("g.node", has_text="cross_entropy").click()
    page.click("#fit")
    _shots(tmp_path).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(_shots(tmp_path) / "graph-page-mlp.png"))
    assert not errors
    page.close()


def test_page_of_a_gone_training_step_in_a_browser(browser, tmp_path):
    """The page of a profile whose tensors are gone opens and shows what the profile recorded."""
    prof, gone, _ = train_step_profile()
    assert all(r() is None for r in gone)
    mg.viz.html(prof, tmp_path / "gone.html")
    page, errors, requests, _ = _open(browser, tmp_path / "gone.html")
    assert not errors and not requests
    assert page.locator("g.node").count() == 9      # 4 ops, 4 parameters, the output
    page.locator("g.node", has_text="cross_entropy").click()
    assert page.text_content("#detail-name") == "cross_entropy"
    rows = page.text_content("#detail-rows")
    assert "(8, 3) float32 ← #2 linear" in rows and "test_viz_html.py:" in rows and "forward" in rows
    assert page.locator("path.edge.hot").count() >= 1
    assert not errors
    page.close()


def test_10000_op_page_loads_in_a_browser(browser, tmp_path):
    cell, loss = rnn_loss(2500)
    t = time.perf_counter()
    html = mg.viz.html(loss, tmp_path / "rnn.html", params=cell, title="an RNN unrolled 2500 steps: 10,002 ops")
    build = time.perf_counter() - t
    page, errors, requests, load = _open(browser, tmp_path / "rnn.html")
    script_ms = page.evaluate("window.minigradPage.loadMs")
    print(f"\n10,000-op page: {len(html.source) // 1024} KiB, built in {build:.3f} s, opened in {load:.3f} s "
          f"(script {script_ms:.0f} ms, {page.evaluate('window.minigradPage.boxes()')} boxes)")
    assert not errors and not requests
    assert build < 60 and load < 60
    page.locator("g.node", has_text="W · Linear").click()         # open the module: its repeated blocks
    assert page.locator("g.node", has_text="× a block of").count() >= 2
    page.locator("g.node", has_text="× a block of").first.click()
    t = time.perf_counter()
    page.fill("#search", "tanh")
    page.press("#search", "Enter")                                # finds the first tanh, opening its folds
    assert page.text_content("#detail-name") == "tanh" and time.perf_counter() - t < 10
    assert int(page.text_content("#count").split()[0]) == 2500
    page.fill("#search", "")
    page.screenshot(path=str(_shots(tmp_path) / "graph-page-10k.png"))
    assert not errors
    page.close()
