"""The set-up: the README's two commands, .ci/run, scripts/setup.sh and install-system-deps.sh.

The torch comparisons (test_torch_oracle.py and the `*_vs_torch` tests) skip where torch is
missing; under CI they must run, so there a missing torch is a failure, not a skip.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The one-line commands in the README's "Two commands" section (demo first, tests second)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_torch_is_installed_under_ci():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but `import torch` fails ({e}): the torch comparisons would be skipped "
                        "silently; `bash scripts/setup.sh dev` should have installed the `torch` extra")
        pytest.skip("torch is not installed (allowed outside CI): the torch comparisons are skipped")


def test_ci_runs_exactly_the_readme_test_command():
    commands = readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands
    ci_lines = [ln for ln in (ROOT / ".ci/run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert ci_lines[-1] == commands[1]


@pytest.mark.parametrize("which, extra", [(0, "examples"), (1, "dev")])
def test_readme_commands_set_up_and_run_inside_the_project_venv(which, extra):
    cmd = readme_commands()[which]
    assert cmd.startswith(f"bash scripts/setup.sh {extra} && ")
    rest = cmd.split(" && ")[1:]
    assert rest and all(".venv/bin/python " in part for part in rest), cmd
    assert "pip install" not in cmd and "python3 " not in cmd  # nothing installed or run outside .venv


def test_venv_is_git_ignored():
    assert "/.venv/" in (ROOT / ".gitignore").read_text().splitlines()


def test_setup_rejects_an_unknown_extra():
    r = subprocess.run(["bash", "scripts/setup.sh", "nonsense"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def in_project_venv() -> bool:
    return Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()


@pytest.mark.skipif(shutil.which("dot") is None, reason="setup.sh would try to install Graphviz first")
def test_setup_twice_is_quick_and_installs_nothing():
    """Run by the test command, .venv is already set up for [dev]: setup.sh only checks the stamp."""
    if not in_project_venv():
        pytest.skip("not running in the project's .venv (made by scripts/setup.sh)")
    check = subprocess.run(["bash", "scripts/setup.sh", "--check", "dev"], cwd=ROOT)
    if check.returncode != 0:
        pytest.skip(".venv is not up to date for [dev] (set up by hand?)")
    stamp = ROOT / ".venv" / ".minigrad-setup-dev"
    before = stamp.stat().st_mtime_ns
    t0 = time.perf_counter()
    r = subprocess.run(["bash", "scripts/setup.sh", "dev"], cwd=ROOT, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    assert "up to date" in r.stdout and "installing" not in r.stdout
    assert stamp.stat().st_mtime_ns == before
    assert elapsed < 15, f"an up-to-date setup took {elapsed:.1f}s"


def test_setup_stamp_follows_pyproject(tmp_path):
    """A copy of the project whose pyproject.toml changes is no longer up to date."""
    if not in_project_venv():
        pytest.skip("not running in the project's .venv (made by scripts/setup.sh)")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")  # the same interpreter and stamp, read only here
    check = ["bash", "scripts/setup.sh", "--check", "dev"]
    if subprocess.run(check, cwd=tmp_path).returncode != 0:
        pytest.skip(".venv is not up to date for [dev] (set up by hand?)")
    with open(tmp_path / "pyproject.toml", "a") as f:
        f.write("\n# changed\n")
    assert subprocess.run(check, cwd=tmp_path).returncode == 1


def test_install_system_deps_says_what_and_why_before_installing(tmp_path):
    """Without `dot`, the script prints one line naming Graphviz and the reason, then runs apt-get."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "id", "env", "dirname"):
        path = shutil.which(tool)
        if path is None:
            pytest.skip(f"no {tool}")
        (bin_ / tool).symlink_to(path)
    log = tmp_path / "calls"
    for fake in ("apt-get", "sudo"):
        body = 'echo "CALLED apt-get $*" >> "$LOG"' if fake == "apt-get" else 'exec "$@"'
        (bin_ / fake).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (bin_ / fake).chmod(0o755)
    r = subprocess.run([str(bin_ / "bash"), str(ROOT / "scripts" / "install-system-deps.sh")],
                       env={"PATH": str(bin_), "LOG": str(log)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and "Graphviz" in lines[0] and "dot" in lines[0], r.stdout
    calls = log.read_text().splitlines()
    assert calls[0] == "CALLED apt-get update -qq" and "install -y -qq graphviz" in calls[1]


def test_matplotlib_cache_stays_in_the_venv():
    """setup.sh's .pth line points MPLCONFIGDIR into .venv/ (where the user has not set it)."""
    if not in_project_venv():
        pytest.skip("not running in the project's .venv (made by scripts/setup.sh)")
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"}
    r = subprocess.run([sys.executable, "-c", "import os; print(os.environ['MPLCONFIGDIR'])"], env=env,
                       capture_output=True, text=True, check=True)
    assert Path(r.stdout.strip()).resolve() == (ROOT / ".venv" / "matplotlib").resolve()


def test_setup_says_why_torch_could_not_be_installed(tmp_path):
    """Where no CPU build of torch can be had, the warning quotes pip's reasons (issue 33)."""
    if shutil.which("bash") is None or shutil.which("sed") is None:
        pytest.skip("needs bash and sed")
    script = (ROOT / "scripts" / "setup.sh").read_text()
    assert 'will be skipped. Why: $index_note, and it said:' in script
    assert 'pip_why "$attempt_log"' in script
    log = tmp_path / "attempt.log"
    log.write_text("WARNING: Location 'file:///x' is ignored\nLooking in indexes: https://pypi.org/simple\n"
                   "ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu (from versions: "
                   "none)\nERROR: No matching distribution found for torch==2.13.0+cpu\n")
    fn = 'source <(sed -n "/^pip_why()/,/^}/p" scripts/setup.sh); pip_why "$1"'
    r = subprocess.run(["bash", "-c", fn, "bash", str(log)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "pip: ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu (from versions: none)",
        "pip: ERROR: No matching distribution found for torch==2.13.0+cpu"]
    log.write_text("WARNING: Location 'file:///x' is ignored\nsomething else went wrong\n")
    r = subprocess.run(["bash", "-c", fn, "bash", str(log)], cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.splitlines() == ["pip: something else went wrong"]
