"""A 2-layer, 4-head character-level transformer learns a short story, and beats a bigram model.

    python examples/char_transformer.py                 # 400 steps, about 15-30 s on one core
    python examples/char_transformer.py --steps 1500 --sample 400 --top-k 10
    python examples/char_transformer.py --flash         # attention by F.scaled_dot_product_attention

The text is examples/data/tiny.txt (a short story written for this repository, about 5 000
characters); its last tenth is held out. The model is nanoGPT's GPT (github.com/karpathy/nanoGPT,
model.py) in minigrad's PyTorch names, with its module names and state_dict keys: token and
position embeddings (n_embd=64), two pre-LayerNorm blocks of causal multi-head self-attention
(``c_attn(x).split(n_embd, dim=2)``, 4 heads of 16, masked by a registered ``mg.tril`` buffer
with ``masked_fill``, or ``F.scaled_dot_product_attention(is_causal=True)`` with ``--flash``) and
a GELU MLP (4x), a final LayerNorm and a bias-free read-out whose weight is the token
embedding's (weight tying); GPT-2's initialisation; dropout 0.2 (the text is short: without it
the model memorises it and the held-out loss climbs). Trained with AdamW in two parameter groups
(weight decay for the 2-D parameters, none for the biases and LayerNorms), a cosine schedule and
``clip_grad_norm_``, in float32, on batches of 16 windows of 64 characters; ``generate()`` samples
with ``mg.multinomial``, optionally from the ``top_k`` likeliest. Seed 0: held-out 2.27 nats/char
after 400 steps, bigram 2.37. tests/test_char_models.py trains it beside the same model in torch.

Prints the training and held-out loss as it goes, a sample of generated text, and the final
held-out loss beside a bigram model's (counts with add-one smoothing, fitted on the
training part): the transformer must beat it. Saves the loss curves to
examples/out/char_transformer_loss.png.
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
from digits import blas_threads  # noqa: E402

nn = mg.nn
F = mg.nn.functional
HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
TEXT = HERE / "data" / "tiny.txt"
STEPS = 400


# -- data ---------------------------------------------------------------------------------------------


class Chars:
    """The character vocabulary of a text: encode / decode."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, s: str) -> np.ndarray:
        return np.array([self.index[c] for c in s], dtype=np.int64)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def load_text(path: Path = TEXT, held_out: float = 0.1):
    text = Path(path).read_text(encoding="utf-8")
    vocab = Chars(text)
    ids = vocab.encode(text)
    cut = int(len(ids) * (1 - held_out))
    return vocab, ids[:cut], ids[cut:]


def batches(ids, context: int, batch: int, rng):
    """(inputs, targets): ``batch`` random windows of ``context`` characters and the next ones."""
    starts = rng.integers(0, len(ids) - context - 1, batch)
    x = np.stack([ids[s:s + context] for s in starts])
    y = np.stack([ids[s + 1:s + context + 1] for s in starts])
    return x, y


def bigram_loss(train_ids, eval_ids, vocab_size: int) -> float:
    """Mean negative log-likelihood of ``eval_ids`` under add-one-smoothed bigram counts of ``train_ids``."""
    counts = np.ones((vocab_size, vocab_size))
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1)
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    return float(-logp[eval_ids[:-1], eval_ids[1:]].mean())


# -- model ----------------------------------------------------------------------------------------------
# nanoGPT's model (Karpathy, github.com/karpathy/nanoGPT, model.py), written with minigrad's PyTorch
# names: the same modules, the same state_dict keys, the same initialisation, so a torch copy of
# it loads into this one with ``load_state_dict`` (tests/test_char_models.py trains both side by side).


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float, flash: bool = False):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # key, query, value projections for all heads, in a batch
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout
        self.flash = flash  # F.scaled_dot_product_attention(is_causal=True) instead of the explicit mask
        if not flash:       # the causal mask: position i sees j <= i
            T = block_size
            self.register_buffer("bias", mg.tril(mg.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v                                           # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)          # the heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-LayerNorm: x + attention(LN(x)), then x + MLP(LN(x)) with a GELU MLP."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float, flash: bool = False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout, flash)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CharTransformer(nn.Module):
    """nanoGPT's GPT: ``context`` is its block_size, ``d_model`` n_embd, ``n_heads`` n_head,
    ``n_layers`` n_layer; ``flash`` picks ``F.scaled_dot_product_attention``."""

    def __init__(self, vocab_size: int, context: int = 64, d_model: int = 64, n_heads: int = 4, n_layers: int = 2,
                 dropout: float = 0.2, flash: bool = False):
        super().__init__()
        self.context = self.block_size = context
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, d_model),
            wpe=nn.Embedding(context, d_model),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(d_model, n_heads, context, dropout, flash) for _ in range(n_layers)]),
            ln_f=nn.LayerNorm(d_model),
        ))
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying: one matrix reads in and out
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():  # GPT-2's scaled initialisation of the residual projections
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):                     # idx: (B, T) integers
        if not isinstance(idx, mg.Tensor):
            idx = mg.tensor(idx)
        b, t = idx.size()
        assert t <= self.block_size, f"a sequence of {t} is longer than the block size {self.block_size}"
        pos = mg.arange(0, t, dtype=mg.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))       # (B, T, vocab) logits
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas):
        """AdamW with two groups: weight decay for the 2-D parameters (the matrices and the
        embeddings), none for the biases and the LayerNorms."""
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        nodecay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": nodecay, "weight_decay": 0.0}]
        return mg.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @mg.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None):
        """Extend ``idx`` (B, T) by ``max_new_tokens`` sampled tokens, feeding each back in."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits = self(idx_cond)[:, -1, :] / temperature
            if top_k is not None:
                v, _ = mg.topk(logits, min(top_k, logits.size(-1)))
                logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
            probs = F.softmax(logits, dim=-1)
            idx_next = mg.multinomial(probs, num_samples=1)
            idx = mg.cat((idx, idx_next), dim=1)
        return idx


def loss_of(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))


def eval_loss(model, ids, context: int, batch: int = 32, windows: int = 64) -> float:
    """Mean loss over fixed windows of ``ids`` (the same every call)."""
    rng = np.random.default_rng(1234)
    model.eval()
    total = 0.0
    n = 0
    with mg.no_grad():
        for _ in range(max(1, windows // batch)):
            x, y = batches(ids, context, batch, rng)
            total += loss_of(model, mg.tensor(x), mg.tensor(y)).item()
            n += 1
    model.train()
    return total / n


def sample(model, vocab: Chars, prompt: str, length: int, temperature: float = 0.8, top_k: int | None = None,
           seed: int = 0) -> str:
    model.eval()
    mg.manual_seed(seed)  # mg.multinomial draws from the global generator
    idx = mg.tensor(vocab.encode(prompt)[None, :])
    out = model.generate(idx, length, temperature=temperature, top_k=top_k)
    model.train()
    return vocab.decode(out[0].tolist())


# -- training --------------------------------------------------------------------------------------------


def plot_curves(steps, train, held, bigram, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the loss curves (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(train) + 1), train, lw=0.6, alpha=0.5, label="training batch")
    ax.plot(steps, held, "o-", lw=1.5, ms=3, label="held-out")
    ax.axhline(bigram, color="k", ls="--", lw=1, label=f"bigram (held-out) {bigram:.3f}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / char)")
    ax.set_title("char transformer on tiny.txt")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(steps: int = STEPS, batch: int = 16, context: int = 64, lr: float = 3e-3, seed: int = 0,
         eval_every: int = 100, sample_len: int = 300, out_dir: Path | str | None = None, plot: bool = True,
         threads: int | None = 1, compile: bool = False, flash: bool = False, top_k: int | None = None,
         log=print) -> dict:  # noqa: A002
    """Train and report; returns {"held_out_loss", "bigram_loss", "losses", "sample", "seconds", "model",
    "optimizer", "compile_stats", ...}. ``compile``: capture the training step with ``mg.compile``."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    vocab, train_ids, held_ids = load_text()
    context = min(context, len(held_ids) - 2)
    bigram = bigram_loss(train_ids, held_ids, len(vocab))
    log(f"text: {len(train_ids)} training and {len(held_ids)} held-out characters, vocabulary of {len(vocab)}")
    log(f"bigram baseline (held-out): {bigram:.4f} nats/char; uniform: {math.log(len(vocab)):.4f}")
    mg.manual_seed(seed)
    model = CharTransformer(len(vocab), context=context, flash=flash)
    log(f"model: 2 layers, 4 heads, d=64, context {context}{', flash attention' if flash else ''}: "
        f"{model.num_parameters()} parameters")
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=lr, betas=(0.9, 0.98))
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))

    def train_step(x, y):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    rng = np.random.default_rng(seed)
    losses, eval_steps, held = [], [], []
    t0 = time.perf_counter()
    with blas_threads(threads):
        for step in range(1, steps + 1):
            x, y = batches(train_ids, context, batch, rng)
            loss = train_step(mg.tensor(x), mg.tensor(y))
            losses.append(loss.item())  # outside the step: a compiled step cannot read values
            if step % eval_every == 0 or step == steps:
                eval_steps.append(step)
                held.append(eval_loss(model, held_ids, context))
                log(f"step {step:5d}  train {np.mean(losses[-eval_every:]):.4f}  held-out {held[-1]:.4f}  "
                    f"(bigram {bigram:.4f})  {time.perf_counter() - t0:.1f}s")
    dt = time.perf_counter() - t0
    text = sample(model, vocab, "The miller ", sample_len, top_k=top_k, seed=seed) if sample_len else ""
    if text:
        log("sample:\n" + text)
    fig = plot_curves(eval_steps, losses, held, bigram, out_dir / "char_transformer_loss.png") if plot else None
    if fig:
        log(f"loss curves: {fig}")
    verdict = "beats" if held[-1] < bigram else "does NOT beat"
    log(f"trained {steps} steps in {dt:.1f}s ({dt / max(steps, 1) * 1e3:.1f} ms/step)")
    log(f"final held-out loss {held[-1]:.4f} {verdict} the bigram baseline {bigram:.4f}")
    return {"held_out_loss": held[-1], "bigram_loss": bigram, "losses": losses, "held_out": held,
            "sample": text, "seconds": dt, "figure": fig, "model": model, "optimizer": opt,
            "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train a tiny character-level transformer.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=STEPS, help="training steps")
    ap.add_argument("--batch-size", type=int, default=16, help="sequences per batch")
    ap.add_argument("--context", type=int, default=64, help="characters of context")
    ap.add_argument("--lr", type=float, default=3e-3, help="AdamW's learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the batches and the initialisation")
    ap.add_argument("--sample", type=int, default=300, help="characters to generate at the end")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads while training (0: the library's default)")
    ap.add_argument("--no-plot", action="store_true", help="skip the loss curve (matplotlib)")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    ap.add_argument("--flash", action="store_true", help="attention by F.scaled_dot_product_attention(is_causal=True)")
    ap.add_argument("--top-k", type=int, default=None, help="sample from the k likeliest characters only")
    a = ap.parse_args()
    main(steps=a.steps, batch=a.batch_size, context=a.context, lr=a.lr, seed=a.seed, sample_len=a.sample,
         threads=a.threads or None, plot=not a.no_plot, compile=a.compile,
         flash=a.flash, top_k=a.top_k)
