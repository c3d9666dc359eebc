"""minigrad is a guest in its user's process: importing it or running ops changes nothing
(allocator, BLAS threads, garbage collector); thread control is explicit and opt-in."""
import gc
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_no_code_reaches_into_the_host_process():
    hits = []
    for path in (ROOT / "minigrad").rglob("*.py"):
        if path.name == "threads.py":  # the one opt-in place: threadpoolctl, on the user's call
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"mallopt|openblas|ctypes|gc\.disable|gc\.enable|set_num_threads\(", line):
                hits.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not hits, "\n".join(hits)


def _rss_after_freeing(import_minigrad):
    code = (
        ("import minigrad\n" if import_minigrad else "")
        + "import numpy as np\n"
        "arrays = [np.ones(2 ** 21) for _ in range(40)]\n"   # 40 arrays of 16 MiB
        "del arrays[1:]\n"
        "for line in open('/proc/self/status'):\n"
        "    if line.startswith('VmRSS'):\n"
        "        print(int(line.split()[1]) // 1024)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True,
                         env=env, cwd=ROOT).stdout
    return int(out.split()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")
def test_import_leaves_the_allocator_alone():
    """Freed arrays go back to the OS after ``import minigrad`` exactly as without it."""
    with_mg, without = _rss_after_freeing(True), _rss_after_freeing(False)
    assert with_mg < without + 64, (with_mg, without)  # MiB; it was +624 MiB with mallopt at import


def test_ops_leave_blas_threads_and_the_collector_alone(device):
    tpc = pytest.importorskip("threadpoolctl")
    before = [i["num_threads"] for i in tpc.threadpool_info()]
    gc_before = gc.isenabled()
    a = mg.randn(64, 64, requires_grad=True)
    b = mg.randn(64, 128, requires_grad=True)
    (a @ b).tanh().sum().backward()
    mg.einsum("bij,bjk->bik", mg.randn(8, 32, 32), mg.randn(8, 32, 32))
    assert [i["num_threads"] for i in tpc.threadpool_info()] == before
    assert gc.isenabled() == gc_before


def test_set_and_get_num_threads_are_explicit():
    tpc = pytest.importorskip("threadpoolctl")
    start = mg.get_num_threads()
    try:
        mg.set_num_threads(1)
        assert mg.get_num_threads() == 1
        x = np.ones((200, 200))
        np.testing.assert_allclose(x @ x, 200.0)
    finally:
        tpc.threadpool_limits(limits=start, user_api="blas")
    assert mg.get_num_threads() == start
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="set_num_threads: n must be a positive int"):
            mg.set_num_threads(bad)


def test_num_threads_without_threadpoolctl_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    with pytest.raises(ImportError, match="pip install threadpoolctl"):
        mg.get_num_threads()
    with pytest.raises(ImportError, match="pip install threadpoolctl"):
        mg.set_num_threads(1)
