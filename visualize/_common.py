"""What the visualize/ scripts share: where pictures go, and drawing with or without `dot`."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"  # git-ignored
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import minigrad as mg  # noqa: E402


def outdir_of(outdir) -> Path:
    """The output folder (visualize/out by default), created."""
    d = OUT if outdir is None else Path(outdir)
    d.mkdir(parents=True, exist_ok=True)
    return d


def command_line(description: str, options=None):
    """The parsed command line of a script run by hand: ``--help`` prints ``description`` and
    every option with its default; ``--out-dir`` (visualize/out) is every script's, ``options``
    (a function of the parser) adds the script's own."""
    import argparse

    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out-dir", default=str(OUT), help="where the files go")
    if options is not None:
        options(ap)
    return ap.parse_args()


def draw(t, outdir: Path, stem: str, **kwargs) -> list[Path]:
    """Write ``stem.dot`` always, and ``stem.svg`` where Graphviz's ``dot`` is installed."""
    paths = [mg.viz.save(t, outdir / f"{stem}.dot", **kwargs)]
    if shutil.which("dot"):
        paths.append(mg.viz.save(t, outdir / f"{stem}.svg", **kwargs))
    else:
        print(f"  {stem}: Graphviz 'dot' not found, wrote {stem}.dot only (install Graphviz for SVG: "
              "apt-get install graphviz / brew install graphviz)")
    return paths


def write_text(outdir: Path, name: str, text: str) -> Path:
    p = outdir / name
    p.write_text(text + "\n", encoding="utf-8")
    return p


def available(module: str) -> bool:
    """Whether ``minigrad.<module>`` can be imported (some land in other issues)."""
    import importlib

    try:
        importlib.import_module(f"minigrad.{module}")
        return True
    except ImportError:
        return False
