"""examples/quickstart.py (issue 33): PyTorch's quickstart tutorial on the digits reaches >= 95 %
test accuracy, and exactly the figure the README prints for it."""
import re
from pathlib import Path

import pytest

from conftest import DEVICE, has_module, load_example

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_figure():
    """The quickstart's test accuracy as the README states it (the tour and the examples table)."""
    text = README.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `examples/quickstart.py`"))
    (figure,) = re.findall(r"(\d+\.\d)% test accuracy", row)
    assert f"reaches {figure}% test accuracy" in text  # the tour says the same
    return float(figure)


@pytest.mark.skipif(not has_module("sklearn"), reason="the quickstart trains on scikit-learn's bundled digits")
def test_quickstart_reproduces_the_readme_figure(tmp_path, capsys):
    res = load_example("quickstart").main(out_dir=tmp_path, progress=False, device=DEVICE)
    acc = 100 * res["accuracy"]
    assert acc >= 95.0
    assert round(acc, 1) == _readme_figure(), acc
    out = capsys.readouterr().out
    assert f"Accuracy: {acc:>0.1f}%" in out and "Shape of X [N, C, H, W]: (64, 1, 8, 8)" in out
    assert res["path"] == tmp_path / "model.pth" and [p.name for p in tmp_path.iterdir()] == ["model.pth"]
    assert res["predicted"] == res["actual"]


@pytest.mark.skipif(not has_module("sklearn"), reason="the quickstart trains on scikit-learn's bundled digits")
def test_quickstart_runs_with_a_progress_bar(tmp_path):
    pytest.importorskip("tqdm")
    res = load_example("quickstart").main(epochs=1, out_dir=tmp_path, progress=True, device=DEVICE)
    assert 0.5 <= res["accuracy"] <= 1.0
