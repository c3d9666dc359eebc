"""A character-level LSTM learns the same short story as char_transformer.py, and beats a bigram model.

    python examples/char_rnn.py                         # 200 steps, about 15 s on one core
    python examples/char_rnn.py --layers 1 --hidden 256 --sample 400

The text is examples/data/tiny.txt, loaded by char_transformer.py's ``load_text`` (its last tenth
held out). The model: ``nn.Embedding`` (d=32) -> ``nn.LSTM`` (hidden 128, 2 layers, batch_first)
-> dropout 0.2 (also between the LSTM's layers) -> ``nn.Linear`` read-out, with PyTorch's parameter
names and ``state_dict`` keys throughout (``lstm.weight_ih_l0``...), so a torch model of the same
shape loads into it
(tests/test_char_rnn.py trains both and compares their losses step by step).

Training: random fixed-length windows of 64 characters (batches of 16), each started from a zero
state: no truncated back-propagation through time carried across windows. Adam and
``clip_grad_norm_`` in float32. Prints the training and held-out loss as it goes, then a sample:
the LSTM's state is carried from character to character (one step of the recurrence each, no
window re-read), each next character drawn with ``mg.multinomial`` from the softmax of the logits
over a temperature. Ends with the held-out loss beside a bigram model's (add-one smoothing).
Seed 0: held-out 1.93 nats/char after 200 steps, bigram 2.37 (the text is short: trained longer,
the model memorises it and the held-out loss climbs again, 2.02 at 300 steps).
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
from char_transformer import Chars, batches, bigram_loss, load_text  # noqa: E402,F401 - the same text
from digits import blas_threads  # noqa: E402

nn = mg.nn
F = mg.nn.functional
STEPS = 200


class CharRNN(nn.Module):
    """embedding -> LSTM -> dropout -> linear; ``forward(idx, state=None)`` -> ((B, T, vocab) logits,
    (h, c)). ``dropout`` also goes between the LSTM's layers (the text is short: without it the model
    memorises it and the held-out loss climbs after about 200 steps)."""

    def __init__(self, vocab_size: int, embed: int = 32, hidden: int = 128, num_layers: int = 2,
                 dropout: float = 0.2, dtype=None):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed, dtype=dtype)
        self.lstm = nn.LSTM(embed, hidden, num_layers=num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0, dtype=dtype)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab_size, dtype=dtype)

    def forward(self, idx, state=None):                       # idx: (B, T) integers
        out, state = self.lstm(self.embed(idx), state)        # out: (B, T, hidden)
        return self.head(self.drop(out)), state


def loss_of(model, x, y):
    logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def eval_loss(model, ids, context: int, batch: int = 32, windows: int = 64) -> float:
    """Mean loss over fixed windows of ``ids`` (the same every call)."""
    rng = np.random.default_rng(1234)
    model.eval()
    total, n = 0.0, 0
    with mg.no_grad():
        for _ in range(max(1, windows // batch)):
            x, y = batches(ids, context, batch, rng)
            total += loss_of(model, mg.tensor(x), mg.tensor(y)).item()
            n += 1
    model.train()
    return total / n


def sample(model, vocab: Chars, prompt: str, length: int, temperature: float = 0.8, seed: int = 0) -> str:
    """``prompt`` and ``length`` characters drawn one at a time, the LSTM's state carried along."""
    mg.manual_seed(seed)
    ids = list(vocab.encode(prompt))
    model.eval()
    with mg.no_grad():
        logits, state = model(mg.tensor(np.array([ids], dtype=np.int64)))   # read the prompt once
        for _ in range(length):
            p = F.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = int(mg.multinomial(p, 1).item())
            ids.append(nxt)
            logits, state = model(mg.tensor(np.array([[nxt]], dtype=np.int64)), state)
    model.train()
    return vocab.decode(ids)


def main(steps: int = STEPS, batch: int = 16, context: int = 64, embed: int = 32, hidden: int = 128,
         layers: int = 2, dropout: float = 0.2, lr: float = 3e-3, seed: int = 0, eval_every: int = 50,
         sample_len: int = 300, threads: int | None = 1, compile: bool = False, log=print) -> dict:  # noqa: A002
    """Train and report; returns {"held_out_loss", "bigram_loss", "losses", "held_out", "sample",
    "seconds", "model", "optimizer", "compile_stats"}. ``compile``: capture the training step with
    ``mg.compile``."""
    vocab, train_ids, held_ids = load_text()
    context = min(context, len(held_ids) - 2)
    bigram = bigram_loss(train_ids, held_ids, len(vocab))
    log(f"text: {len(train_ids)} training and {len(held_ids)} held-out characters, vocabulary of {len(vocab)}")
    log(f"bigram baseline (held-out): {bigram:.4f} nats/char; uniform: {math.log(len(vocab)):.4f}")
    mg.manual_seed(seed)
    model = CharRNN(len(vocab), embed=embed, hidden=hidden, num_layers=layers, dropout=dropout)
    log(f"model: embedding {embed} -> LSTM {layers} x {hidden} -> linear, windows of {context}: "
        f"{model.num_parameters()} parameters")
    opt = mg.optim.Adam(model.parameters(), lr=lr)

    def train_step(x, y):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    rng = np.random.default_rng(seed)
    losses, held = [], []
    t0 = time.perf_counter()
    with blas_threads(threads):
        for step in range(1, steps + 1):
            x, y = batches(train_ids, context, batch, rng)
            loss = train_step(mg.tensor(x), mg.tensor(y))
            losses.append(loss.item())  # outside the step: a compiled step cannot read values
            if step % eval_every == 0 or step == steps:
                held.append(eval_loss(model, held_ids, context))
                log(f"step {step:5d}  train {np.mean(losses[-eval_every:]):.4f}  held-out {held[-1]:.4f}  "
                    f"(bigram {bigram:.4f})  {time.perf_counter() - t0:.1f}s")
    dt = time.perf_counter() - t0
    text = sample(model, vocab, "The miller ", sample_len, seed=seed) if sample_len else ""
    if text:
        log("sample:\n" + text)
    verdict = "beats" if held[-1] < bigram else "does NOT beat"
    log(f"trained {steps} steps in {dt:.1f}s ({dt / max(steps, 1) * 1e3:.1f} ms/step)")
    log(f"final held-out loss {held[-1]:.4f} {verdict} the bigram baseline {bigram:.4f}")
    return {"held_out_loss": held[-1], "bigram_loss": bigram, "losses": losses, "held_out": held,
            "sample": text, "seconds": dt, "model": model, "optimizer": opt,
            "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train a tiny character-level LSTM.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=STEPS, help="training steps")
    ap.add_argument("--batch-size", type=int, default=16, help="sequences per batch")
    ap.add_argument("--context", type=int, default=64, help="characters per training window")
    ap.add_argument("--embed", type=int, default=32, help="embedding size")
    ap.add_argument("--hidden", type=int, default=128, help="LSTM hidden size")
    ap.add_argument("--layers", type=int, default=2, help="LSTM layers")
    ap.add_argument("--dropout", type=float, default=0.2, help="dropout between the layers and before the read-out")
    ap.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the batches, the initialisation and the sample")
    ap.add_argument("--sample", type=int, default=300, help="characters to generate at the end")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads while training (0: the library's default)")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(steps=a.steps, batch=a.batch_size, context=a.context, embed=a.embed, hidden=a.hidden, layers=a.layers,
         dropout=a.dropout, lr=a.lr, seed=a.seed, sample_len=a.sample, threads=a.threads or None, compile=a.compile)
