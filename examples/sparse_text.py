"""Logistic regression on a sparse bag of words: the input is never densified.

    python examples/sparse_text.py            # a few seconds
    python examples/sparse_text.py --layout coo --vocab 20000

Generates a small corpus of product reviews (a few sentiment words among many neutral
ones, some of them negated), builds the document-term count matrix as a minigrad
sparse tensor (CSR by default, or COO), and trains ``sigmoid(X @ w + b)`` with
``mg.sparse.matmul``: the forward pass touches only the stored entries, and the
gradient of ``w`` comes from the transposed sparse product. The example measures the
memory a training step allocates (tracemalloc) and compares it with what the dense
matrix alone would take. It prints the test accuracy, the words with the largest
weights, and saves them as a picture to examples/out/sparse_text.png.
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402

F = mg.nn.functional
OUT = Path(__file__).resolve().parent / "out"

POSITIVE = ("great excellent love perfect amazing wonderful sturdy reliable fast comfortable recommend "
            "happy solid beautiful bright smooth").split()
NEGATIVE = ("terrible awful broken refund poor disappointing flimsy slow useless cheap returned "
            "noisy leaking faulty scratched worst").split()
NEUTRAL = ("the a it this i was is and to of for with my on in product box arrived order bought "
           "week day color size battery cable screen phone kitchen price delivery seller package "
           "item use used using after before again").split()


def make_corpus(n_docs: int, vocab: int = 5000, seed: int = 0):
    """(docs as lists of word ids, labels 0/1, the vocabulary). Neutral filler follows a Zipf law
    over ``vocab`` words; each review has a few sentiment words, sometimes negated."""
    rng = np.random.default_rng(seed)
    words = POSITIVE + NEGATIVE + ["not"] + NEUTRAL
    words += [f"w{i}" for i in range(vocab - len(words))]  # the long tail: names, models, typos...
    pos = np.arange(len(POSITIVE))
    neg = np.arange(len(POSITIVE), len(POSITIVE) + len(NEGATIVE))
    not_id = len(POSITIVE) + len(NEGATIVE)
    first_filler = not_id + 1
    n_fill = vocab - first_filler
    zipf = 1.0 / np.arange(1, n_fill + 1) ** 1.1
    zipf /= zipf.sum()
    labels = rng.integers(0, 2, n_docs)
    docs = []
    for y in labels:
        length = int(rng.integers(15, 60))
        doc = list(first_filler + rng.choice(n_fill, size=length, p=zipf))
        for _ in range(int(rng.integers(2, 6))):
            agree = rng.random() < 0.9  # some reviews say a nice thing about a bad product
            bag = pos if (y == 1) == agree else neg
            if rng.random() < 0.1:  # "not great" counts for the other side
                bag = neg if bag is pos else pos
                doc.append(not_id)
            doc.append(int(rng.choice(bag)))
        docs.append(doc)
    return docs, labels.astype(np.float32), words


def bag_of_words(docs, vocab: int, layout: str = "csr"):
    """The (n_docs, vocab) matrix of log(1 + count) as a sparse tensor; never a dense array."""
    rows = np.repeat(np.arange(len(docs)), [len(d) for d in docs])
    cols = np.concatenate([np.asarray(d, dtype=np.int64) for d in docs])
    key = rows * vocab + cols
    uniq, counts = np.unique(key, return_counts=True)  # sorted: row-major order, duplicates merged
    r, c = uniq // vocab, uniq % vocab
    values = np.log1p(counts).astype(np.float32)
    shape = (len(docs), vocab)
    if layout == "coo":
        return mg.sparse.coo_tensor(np.stack([r, c]), values, shape=shape)
    crow = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=len(docs)), out=crow[1:])
    return mg.sparse.csr_tensor(crow, c, values, shape=shape)


def predict(X, w, b):
    with mg.no_grad():
        return (mg.sparse.matmul(X, w) + b).numpy()[:, 0]


def plot_weights(w, words, path: Path, k: int = 12) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the picture (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    order = np.argsort(w)
    idx = np.concatenate([order[:k], order[-k:]])
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.barh(np.arange(len(idx)), w[idx], color=["#c0392b" if v < 0 else "#2e86c1" for v in w[idx]])
    ax.set_yticks(np.arange(len(idx)), [words[i] for i in idx])
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel("weight")
    ax.set_title("logistic regression on a sparse bag of words:\nthe most negative and positive words")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(steps: int = 300, n_docs: int = 4000, vocab: int = 5000, layout: str = "csr", lr: float = 0.1,
         weight_decay: float = 1e-3, seed: int = 0, out_dir: Path | str | None = None, plot: bool = True,
         log_every: int = 50, compile: bool = False) -> dict:  # noqa: A002
    """Train and evaluate; returns {"accuracy", "losses", "step_peak_bytes", "dense_bytes", "figure", "params",
    "optimizer", "compile_stats"}. ``compile``: capture the training step with ``mg.compile``."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    docs, y, words = make_corpus(n_docs, vocab, seed)
    n_train = int(0.8 * n_docs)
    X = bag_of_words(docs[:n_train], vocab, layout)
    Xte = bag_of_words(docs[n_train:], vocab, layout)
    ytr, yte = y[:n_train], y[n_train:]
    dense_bytes = X.shape[0] * X.shape[1] * 4
    stored = X.nnz * (4 + 8) + (X.shape[0] + 1) * 8 if layout == "csr" else X.nnz * (4 + 2 * 8)
    print(f"corpus: {n_docs} reviews, vocabulary {vocab}; training matrix {X.shape} in {X.layout.upper()} "
          f"with {X.nnz} stored entries (density {X.nnz / (X.shape[0] * X.shape[1]):.2%})")
    print(f"  stored: {stored / 2**20:.2f} MiB; as a dense float32 matrix it would be {dense_bytes / 2**20:.1f} MiB")

    mg.manual_seed(seed)
    w = mg.zeros(vocab, 1, requires_grad=True)
    b = mg.zeros(1, requires_grad=True)
    opt = mg.optim.Adam([w, b], lr=lr)
    t = mg.tensor(ytr.reshape(-1, 1))

    def train_step(X, t):  # the data come in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        logits = mg.sparse.matmul(X, w) + b  # (n, 1): O(nnz) work, no dense copy of X
        loss = F.binary_cross_entropy_with_logits(logits, t) + weight_decay * (w * w).sum()
        loss.backward()
        opt.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    # the first step allocates the optimizer state (compiled, the second captures): measure a later one
    losses = [train_step(X, t).item() for _ in range(2 if compile else 1)]
    tracemalloc.start()
    losses.append(train_step(X, t).item())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  memory allocated by one training step (tracemalloc peak): {peak / 2**20:.2f} MiB "
          f"({peak / dense_bytes:.1%} of the dense matrix)")
    t0 = time.perf_counter()
    for i in range(len(losses) + 1, steps + 1):
        losses.append(train_step(X, t).item())  # .item() outside the step: a compiled step cannot read values
        if i % log_every == 0 or i == steps:
            acc = float(((predict(X, w, b) > 0) == (ytr > 0.5)).mean())
            print(f"step {i:4d}  loss {losses[-1]:.4f}  train accuracy {acc:.1%}")
    dt = time.perf_counter() - t0
    assert X.layout == layout and Xte.layout == layout  # still sparse, still the same layout
    acc = float(((predict(Xte, w, b) > 0) == (yte > 0.5)).mean())
    wn = w.detach().numpy()[:, 0]
    order = np.argsort(wn)
    print(f"trained {steps} steps in {dt:.1f}s")
    print("most positive words:", ", ".join(words[i] for i in order[::-1][:8]))
    print("most negative words:", ", ".join(words[i] for i in order[:8]))
    fig = plot_weights(wn, words, out_dir / "sparse_text.png") if plot else None
    if fig:
        print(f"weights: {fig}")
    print(f"test accuracy: {acc:.2%}")
    return {"accuracy": acc, "losses": losses, "step_peak_bytes": peak, "dense_bytes": dense_bytes, "figure": fig,
            "params": {"w": w, "b": b}, "optimizer": opt, "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Sparse bag-of-words logistic regression.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=300, help="training steps")
    ap.add_argument("--docs", type=int, default=4000, help="number of documents")
    ap.add_argument("--vocab", type=int, default=5000, help="vocabulary size")
    ap.add_argument("--layout", choices=("csr", "coo"), default="csr", help="the sparse layout of the bag of words")
    ap.add_argument("--lr", type=float, default=0.1, help="the learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the data and the initialisation")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(steps=a.steps, n_docs=a.docs, vocab=a.vocab, layout=a.layout, lr=a.lr, seed=a.seed, compile=a.compile)
