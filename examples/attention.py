"""A tiny self-attention layer, written with einsum, learns to reverse (or sort) sequences.

    python examples/attention.py                          # reverse: a few seconds
    python examples/attention.py --task sort --steps 2000  # sort: ten seconds or so

Each input is a random sequence of digits (0-9); the target is the same sequence reversed
(or sorted). For reversing, one attention head does all the work: position i must find
the token at position L-1-i, so its query (from the positional embedding) learns to
match that key, and the value carries the token across. Sorting needs the small MLP
after the attention too: the head gathers the whole sequence, the MLP picks the i-th
smallest. Prints token and whole-sequence accuracy on fresh sequences and saves the
learned attention pattern (an anti-diagonal when reversing) to examples/out/attention.png
(examples/out/attention_sort.png when sorting, so the two runs keep their own pictures).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import minigrad as mg  # noqa: E402
from digits import blas_threads  # noqa: E402  (one BLAS thread: the same reason as there)

nn = mg.nn
F = mg.nn.functional
OUT = Path(__file__).resolve().parent / "out"


class SelfAttention(nn.Module):
    """One head of scaled dot-product self-attention, every contraction an einsum."""

    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        self.scale = 1.0 / math.sqrt(d_head)
        init = nn.init
        self.Wq = nn.Parameter(mg.empty(d_model, d_head))
        self.Wk = nn.Parameter(mg.empty(d_model, d_head))
        self.Wv = nn.Parameter(mg.empty(d_model, d_head))
        self.Wo = nn.Parameter(mg.empty(d_head, d_model))
        for w in (self.Wq, self.Wk, self.Wv, self.Wo):
            init.xavier_uniform_(w)

    def forward(self, h):
        q = mg.einsum(h, self.Wq, "batch seq model, model head -> batch seq head")
        k = mg.einsum(h, self.Wk, "batch seq model, model head -> batch seq head")
        v = mg.einsum(h, self.Wv, "batch seq model, model head -> batch seq head")
        scores = mg.einsum(q, k, "batch seq head, batch key head -> batch seq key") * self.scale
        attn = F.softmax(scores, dim=-1)
        self.last_attention = attn.detach()  # kept for the picture
        out = mg.einsum(attn, v, "batch seq key, batch key head -> batch seq head")
        return mg.einsum(out, self.Wo, "batch seq head, head model -> batch seq model")

    def extra_repr(self):
        return f"d_model={self.Wq.shape[0]}, d_head={self.Wq.shape[1]}"


class SequenceModel(nn.Module):
    """Embed tokens and positions, attend once, then a small MLP; classify each position."""

    def __init__(self, vocab: int = 10, length: int = 8, d_model: int = 32, d_head: int = 32, d_mlp: int = 64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(length, d_model)
        self.attn = SelfAttention(d_model, d_head)
        self.norm1 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d_model))
        self.norm2 = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, x):
        p = self.pos(np.arange(x.shape[1]))
        h = self.tok(x) + p                 # (batch, seq, model)
        h = self.norm1(self.attn(h) + p)    # the position again: which output slot this is
        h = self.norm2(h + self.mlp(h))
        return self.out(h)                  # (batch, seq, vocab)


def batch(rng, n: int, length: int, vocab: int, task: str = "reverse"):
    x = rng.integers(0, vocab, size=(n, length))
    y = x[:, ::-1].copy() if task == "reverse" else np.sort(x, axis=1)
    return x, y


def evaluate(model, rng, length, vocab, task, n=1000):
    x, y = batch(rng, n, length, vocab, task)
    with mg.no_grad():
        pred = model(x).argmax(axis=-1).numpy()
    return float((pred == y).mean()), float((pred == y).all(axis=1).mean())


def plot_attention(model, x, path: Path, title: str) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the picture (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    with mg.no_grad():
        pred = model(x[None]).argmax(axis=-1).numpy()[0]
    a = model.attn.last_attention.numpy()[0]
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    im = ax.imshow(a, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(x)), [str(t) for t in x])
    ax.set_yticks(range(len(x)), [str(t) for t in pred])
    ax.set_xlabel("input (keys)")
    ax.set_ylabel("output (queries), predicted token")
    ax.set_title(f"attention weights: {title}")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(steps: int = 600, task: str = "reverse", length: int = 8, vocab: int = 10, batch_size: int = 64,
         lr: float = 1e-2, seed: int = 0, out_dir: Path | str | None = None, plot: bool = True,
         log_every: int = 100, threads: int | None = 1, compile: bool = False) -> dict:  # noqa: A002
    """Train and evaluate; returns {"token_accuracy", "sequence_accuracy", "losses", "figure", "model",
    "optimizer", "compile_stats"}. ``threads``: BLAS threads while training (see ``blas_threads``);
    ``compile``: capture the training step with ``mg.compile``."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    if task not in ("reverse", "sort"):
        raise ValueError(f"task must be 'reverse' or 'sort', got {task!r}")
    model = SequenceModel(vocab, length)
    print(f"task: {task} sequences of {length} digits; {model.num_parameters()} parameters")
    print(model)
    opt = mg.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr / 20)

    def train_step(x, y):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        sched.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    losses = []
    t0 = time.perf_counter()
    with blas_threads(threads):
        for step in range(1, steps + 1):
            x, y = batch(rng, batch_size, length, vocab, task)
            loss = train_step(mg.tensor(x), mg.tensor(y))
            losses.append(loss.item())  # outside the step: a compiled step cannot read values
            if step % log_every == 0 or step == steps:
                print(f"step {step:5d}  loss {np.mean(losses[-log_every:]):.4f}")
    dt = time.perf_counter() - t0
    tok_acc, seq_acc = evaluate(model, np.random.default_rng(seed + 1), length, vocab, task)
    x0 = batch(np.random.default_rng(seed + 2), 1, length, vocab, task)[0][0]
    title = "reversing a sequence" if task == "reverse" else "sorting a sequence"
    name = "attention.png" if task == "reverse" else f"attention_{task}.png"  # each task keeps its picture
    fig = plot_attention(model, x0, out_dir / name, title) if plot else None
    print(f"trained {steps} steps in {dt:.1f}s")
    if fig:
        print(f"attention pattern: {fig}")
    print(f"token accuracy {tok_acc:.2%}, whole-sequence accuracy: {seq_acc:.2%}")
    return {"token_accuracy": tok_acc, "sequence_accuracy": seq_acc, "losses": losses, "figure": fig,
            "model": model, "optimizer": opt, "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train a tiny self-attention layer to reverse sequences.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=600, help="training steps")
    ap.add_argument("--task", choices=("reverse", "sort"), default="reverse", help="what the layer learns to do to a sequence")
    ap.add_argument("--length", type=int, default=8, help="sequence length")
    ap.add_argument("--vocab", type=int, default=10, help="number of distinct tokens")
    ap.add_argument("--lr", type=float, default=1e-2, help="Adam's learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the data and the initialisation")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads while training (0: the library's default)")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(steps=a.steps, task=a.task, length=a.length, vocab=a.vocab, lr=a.lr, seed=a.seed, threads=a.threads or None,
         compile=a.compile)
