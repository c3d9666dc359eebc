"""Run every visualize/ script and index the pictures: visualize/out/index.html.

    python visualize/gallery.py                    # all of them, into visualize/out/
    python visualize/gallery.py --readme-pictures  # also refresh the README's copies in visualize/img/

Each script is a module with ``main(outdir=None)`` returning the paths it wrote
(a script whose ``main`` parses command-line arguments gets those of ``ARGV``);
new scripts in this folder join the gallery by themselves. Without Graphviz's
``dot`` the graphs are written as .dot text only; without matplotlib the
training curve is a CSV.
"""
from __future__ import annotations

import html
import importlib.util
import inspect
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, command_line, outdir_of  # noqa: E402

IMG = HERE / "img"  # committed copies of a few pictures, which the README shows and links
# picture in the output folder -> its committed copy in visualize/img/
README_PICTURES = {
    "mlp_after.svg": "mlp_graph.svg",          # shown in the README: an MLP's loss after backward
    "mlp_before.svg": "mlp_before.svg",
    "mlp_modules.svg": "mlp_modules.svg",
    "sparse_sum.svg": "sparse_sum.svg",
    "einsum.svg": "einsum.svg",
    "strided_walk_2x3x2x4_dim1.png": "strided_walk.png",
    "training_curve.png": "training_curve.png",
}
README_PICTURE = IMG / README_PICTURES["mlp_after.svg"]


def scripts() -> list[Path]:
    """The gallery's scripts: every public .py file here but this one."""
    return sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "gallery.py")


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"visualize_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# scripts whose main() takes command-line arguments instead of outdir=: what the gallery passes
ARGV = {"strided_walk": ["--png", "--out", "{out}"]}


def run(mod, name: str, out: Path) -> list[Path]:
    """Call a script's ``main(outdir=out)`` (or ``main(argv)``); the files it wrote."""
    before = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    if "outdir" in inspect.signature(mod.main).parameters:
        res = mod.main(outdir=out)
    else:
        res = mod.main([a.format(out=out) for a in ARGV.get(name, [])])
        if res not in (None, 0):
            raise RuntimeError(f"{name}.main returned {res}")
    if isinstance(res, (list, tuple)):
        return [Path(p) for p in res]
    return sorted(p for p in out.iterdir() if before.get(p) != p.stat().st_mtime_ns and p.name != "index.html")


def main(outdir=None, readme_picture: bool = False) -> dict[str, list[Path]]:
    """Run each script's ``main(outdir)``; write index.html; raise if any script failed."""
    out = outdir_of(outdir)
    done, failed = {}, {}
    for path in scripts():
        t0 = time.perf_counter()
        try:
            mod = load(path)
            if not hasattr(mod, "main"):
                print(f"gallery: {path.name} has no main(); skipped")
                continue
            done[path.stem] = run(mod, path.stem, out)
        except Exception as e:  # keep going: one broken script should not hide the others
            failed[path.stem] = f"{type(e).__name__}: {e}"
            print(f"gallery: {path.name} failed: {failed[path.stem]}")
            continue
        print(f"gallery: {path.name} done in {time.perf_counter() - t0:.1f} s")
    index = write_index(out, done, failed)
    print(f"gallery: index at {index}")
    if readme_picture:
        refresh_readme_pictures(out)
    if failed:
        raise RuntimeError("gallery: scripts failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    return done


def refresh_readme_pictures(out: Path, img: Path = IMG) -> list[Path]:
    """Copy the pictures the README shows from ``out`` into ``img`` (visualize/img/, committed)."""
    missing = [name for name in README_PICTURES if not (out / name).exists()]
    if missing:
        raise RuntimeError(f"gallery: {', '.join(missing)} not in {out} (are Graphviz's dot and matplotlib "
                           "installed?); the README's pictures were not refreshed")
    img.mkdir(parents=True, exist_ok=True)
    copied = []
    for name, dest in README_PICTURES.items():
        shutil.copyfile(out / name, img / dest)
        copied.append(img / dest)
    print(f"gallery: refreshed {len(copied)} pictures in {img}")
    return copied


def write_index(out: Path, done: dict, failed: dict) -> Path:
    parts = ["<!doctype html><meta charset='utf-8'><title>minigrad gallery</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}img{max-width:100%;"
             "border:1px solid #ddd}</style><h1>minigrad: visualize/ gallery</h1>"]
    for name, paths in done.items():
        parts.append(f"<h2>{html.escape(name)}</h2>")
        for p in paths:
            rel = html.escape(p.name)
            if p.suffix in (".svg", ".png"):
                parts.append(f"<p><a href='{rel}'><img src='{rel}' alt='{rel}'></a></p>")
            else:
                parts.append(f"<p><a href='{rel}'>{rel}</a></p>")
    for name, err in failed.items():
        parts.append(f"<h2>{html.escape(name)}</h2><p style='color:#b00'>failed: {html.escape(err)}</p>")
    index = out / "index.html"
    index.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return index


if __name__ == "__main__":
    a = command_line("Run every visualize/ script and index the pictures in OUT_DIR/index.html.",
                     lambda ap: ap.add_argument("--readme-pictures", "--readme-picture", action="store_true",
                                                help="also copy the README's pictures into visualize/img/"))
    main(outdir=a.out_dir, readme_picture=a.readme_pictures)
