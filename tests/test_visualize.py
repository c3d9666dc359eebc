"""The visualize/ scripts run and write their pictures (rendering skipped where `dot` is missing)."""
import importlib.util
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

VIS = Path(__file__).resolve().parent.parent / "visualize"
HAS_DOT = shutil.which("dot") is not None


def load(name):
    spec = importlib.util.spec_from_file_location(f"visualize_{name}", VIS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_svgs(paths):
    for p in paths:
        if p.suffix == ".svg":
            assert ET.parse(p).getroot().tag.endswith("svg"), p


def test_mlp_graph(tmp_path):
    paths = load("mlp_graph").main(outdir=tmp_path)
    names = {p.name for p in paths}
    assert {"mlp_before.dot", "mlp_after.dot", "mlp_modules.dot", "mlp_tape.txt", "mlp_profile.txt"} <= names
    if HAS_DOT:
        assert {"mlp_before.svg", "mlp_after.svg", "mlp_modules.svg"} <= names
        check_svgs(paths)
    before = (tmp_path / "mlp_before.dot").read_text(encoding="utf-8")
    after = (tmp_path / "mlp_after.dot").read_text(encoding="utf-8")
    assert "relu" in before and "weight" in before and "‖g‖" not in before
    assert "‖g‖" in after
    assert "broadcast (8,) → (16, 8)" in after           # the first bias, summed back over the batch
    assert "relu" in (tmp_path / "mlp_profile.txt").read_text(encoding="utf-8")


def test_sparse_einsum_graph(tmp_path, capsys):
    mod = load("sparse_einsum_graph")
    paths = mod.main(outdir=tmp_path)
    said = capsys.readouterr().out
    if mod._feature("sparse", "coo_tensor") is None:
        assert "skipping the sparse sum graph" in said
    else:
        assert "sparse_sum.dot" in {p.name for p in paths}
    try:
        import minigrad as mg

        mg.einsum  # noqa: B018
        assert "einsum.dot" in {p.name for p in paths}
        assert "Σ over" in (tmp_path / "einsum.dot").read_text(encoding="utf-8")
    except ImportError:
        assert "skipping the einsum graph" in said
    check_svgs(paths)


def test_training_curve(tmp_path):
    paths = load("training_curve").main(outdir=tmp_path, steps=40)
    rows = (tmp_path / "training_curve.csv").read_text().splitlines()
    assert rows[0] == "step,loss" and len(rows) == 41
    first, last = float(rows[1].split(",")[1]), float(rows[-1].split(",")[1])
    assert last < first
    try:
        import matplotlib  # noqa: F401

        assert (tmp_path / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    except ImportError:
        assert len(paths) == 1


def test_gallery_runs_every_script(tmp_path):
    gallery = load("gallery")
    expected = {p.stem for p in VIS.glob("*.py") if not p.name.startswith("_") and p.name != "gallery.py"}
    assert {"mlp_graph", "sparse_einsum_graph", "training_curve"} <= expected
    done = gallery.main(outdir=tmp_path)
    assert set(done) == expected
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    for name in expected:
        assert f"<h2>{name}</h2>" in index


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_scripts_run_from_the_command_line(tmp_path):
    r = subprocess.run([sys.executable, str(VIS / "mlp_graph.py")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mlp_graph: loss" in r.stdout
    assert (VIS / "out" / "mlp_after.dot").exists()


def test_without_dot_the_gallery_still_runs_and_writes_dot_text(tmp_path, monkeypatch):
    """Rendering is skipped, and only that, where Graphviz's `dot` is missing."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-dot-here"))
    assert shutil.which("dot") is None
    gallery = load("gallery")
    done = gallery.main(outdir=tmp_path)
    names = {p.name for paths in done.values() for p in paths}
    assert {"mlp_before.dot", "mlp_after.dot", "mlp_modules.dot", "mlp_tape.txt", "mlp_profile.txt"} <= names
    assert not any(n.endswith(".svg") for n in names)
    assert "training_curve.csv" in names and any(n.startswith("strided_walk_") for n in names)


def test_readme_pictures_are_committed_and_valid():
    """visualize/img/ holds the copies the README shows and links (gallery.py --readme-pictures)."""
    gallery = load("gallery")
    assert gallery.README_PICTURE == VIS / "img" / "mlp_graph.svg"
    for dest in gallery.README_PICTURES.values():
        p = VIS / "img" / dest
        assert p.exists(), f"{p} missing: run python3 visualize/gallery.py --readme-pictures"
        if p.suffix == ".svg":
            assert ET.parse(p).getroot().tag.endswith("svg"), p
        else:
            assert p.read_bytes()[:4] == b"\x89PNG", p
    assert "linear" in (VIS / "img" / "mlp_graph.svg").read_text(encoding="utf-8")


def test_readme_links_to_visualize_resolve():
    readme = (VIS.parent / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((visualize/[^)\s#]+)", readme)
    images = re.findall(r"!\[[^\]]*\]\((visualize/[^)\s]+\.(?:svg|png))\)", readme)
    assert images, "the README shows no picture from visualize/"
    for link in links:
        assert (VIS.parent / link).exists(), f"README links {link}, which is not in the repository"
        assert not link.startswith("visualize/out/"), f"README links {link}: visualize/out/ is git-ignored"


def test_refresh_readme_pictures(tmp_path):
    gallery = load("gallery")
    out, img = tmp_path / "out", tmp_path / "img"
    out.mkdir()
    with pytest.raises(RuntimeError, match="not refreshed"):
        gallery.refresh_readme_pictures(out, img)
    for name in gallery.README_PICTURES:
        (out / name).write_bytes(b"x")
    copied = gallery.refresh_readme_pictures(out, img)
    assert sorted(p.name for p in copied) == sorted(gallery.README_PICTURES.values())
