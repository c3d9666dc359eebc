"""Issue 42: the PyTorch models of examples/ (nanoGPT's GPT, the character LSTM) and
``F.scaled_dot_product_attention``, side by side in one run with PyTorch eager and the hand-written
NumPy floor. Run:

    python benchmarks/bench_pytorch_models.py     # BENCH_THREADS=1 pins torch and NumPy's BLAS to one thread

Workloads and targets (reported here, never asserted in tests):

- one training step of examples/char_transformer.py's model at the example's size (2 layers, 4 heads,
  n_embd 64, context 64, batches of 16 windows, dropout 0.2, AdamW in two groups, clip_grad_norm_, the
  cosine schedule), attention by the example's default ``masked_fill`` of its ``tril`` buffer:
  minigrad eager <= 1.5x torch eager, under ``mg.compile`` <= 1.0x torch eager; the same step with
  ``F.scaled_dot_product_attention`` (``--flash``) beside it, for information;
- one training step of examples/char_rnn.py's model (embedding 32, a 2-layer LSTM of hidden 128,
  dropout 0.2, linear read-out, Adam, clip_grad_norm_) on batches of 16 sequences of 32: eager
  <= 3x torch eager (whose LSTM is one fused kernel), compiled <= 1.5x;
- ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` forward and backward at the example's
  attention size ((16, 4, 64, 16) float32): <= 1.2x the same forward and backward written in NumPy as
  one writes it (bench_mlp.py's kind of floor), with the same tuned by hand (in place) beside it.

Both steps also have a hand-written NumPy floor (forward, manual backward and update, tuned by hand: in
place where NumPy allows), which says how far NumPy itself is from torch. benchmarks/README.md ("PyTorch's
models") has the figures and what is out of reach.

The models are the examples' own code, imported: minigrad's from examples/char_transformer.py and
examples/char_rnn.py, and torch's from the same files loaded a second time with ``minigrad`` bound to
``torch`` (the examples are written in PyTorch's names, so the same lines build and train both). torch
gets minigrad's initial weights by ``load_state_dict``, and a few steps without dropout are checked
to give the same losses before anything is timed.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "examples")
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, EXAMPLES)

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads, torch_or_none  # noqa: E402
from minigrad.nn.activations import _normal_cdf32  # noqa: E402 - the floor's GELU: the same NumPy calls

import char_rnn  # noqa: E402 - the examples (char_rnn imports char_transformer)
import char_transformer  # noqa: E402

BATCH, CONTEXT, RNN_SEQ, RNN_HIDDEN, DROPOUT = 16, 64, 32, 128, 0.2
GPT_LR, RNN_LR, WEIGHT_DECAY, BETAS = 3e-3, 3e-3, 0.1, (0.9, 0.98)



def _xent_floor(z, rows, yf):
    """The floors' mean cross-entropy of logits ``z`` (changed in place) at targets ``yf``, and its
    gradient with respect to ``z`` (in place too): softmax less the one-hot, over the rows."""
    z -= z.max(1, keepdims=True)
    e = np.exp(z)
    s = e.sum(1, keepdims=True)
    loss = (np.log(s[:, 0]) - z[rows, yf]).mean()
    e /= s
    e[rows, yf] -= 1
    e *= np.float32(1 / len(rows))
    return loss, e

def torch_example(name, torch):
    """examples/<name>.py loaded again with ``minigrad`` bound to ``torch``: the example's model in torch."""
    spec = importlib.util.spec_from_file_location(f"{name}_torch", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    saved = sys.modules["minigrad"]
    sys.modules["minigrad"] = torch
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules["minigrad"] = saved
    return mod


def _batch(seq):
    vocab, train_ids, _ = char_transformer.load_text()
    x, y = char_transformer.batches(train_ids, seq, BATCH, np.random.default_rng(0))
    return len(vocab), x, y


def _copy_into_torch(torch, tmodel, model):
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})


# -- the nanoGPT step -------------------------------------------------------------------------------------


def gpt_step(lib, ex, model, compile=False):  # noqa: A002
    """examples/char_transformer.py's training step (its ``main``'s ``train_step``) for ``lib`` (mg or torch)."""
    opt = model.configure_optimizers(weight_decay=WEIGHT_DECAY, learning_rate=GPT_LR, betas=BETAS)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1_000_000)

    def step(x, y):
        opt.zero_grad()
        loss = ex.loss_of(model, x, y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

    return mg.compile(step) if compile else step


def gpt_models(torch, tex, vocab, flash, dropout=DROPOUT):
    mg.manual_seed(0)
    m = char_transformer.CharTransformer(vocab, context=CONTEXT, dropout=dropout, flash=flash)
    tm = tex.CharTransformer(vocab, context=CONTEXT, dropout=dropout, flash=flash)
    _copy_into_torch(torch, tm, m)
    return m, tm


def _ln(x, w, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    r = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + np.float32(1e-5))
    xh = xc * r
    return xh * w + b, (xh, r)


def _ln_back(g, cache, w):
    xh, r = cache
    gw, gb = (g * xh).sum((0, 1)), g.sum((0, 1))
    gx = g * w
    gx -= gx.mean(-1, keepdims=True) + xh * (gx * xh).mean(-1, keepdims=True)
    gx *= r
    return gx, gw, gb


class _Floor:
    """What the NumPy floors share: dropout masks from a generator, clip_grad_norm_ and Adam(W)."""

    def __init__(self, params, lr, betas, decay, p):
        self.P, self.lr, self.betas, self.decay, self.p = params, lr, betas, decay, p
        self.M = [np.zeros_like(a) for a in params]
        self.V = [np.zeros_like(a) for a in params]
        self.rng = np.random.default_rng(0)
        self.t = 0

    def mask(self, shape):
        if not self.p:
            return np.float32(1)
        m = (self.rng.random(shape, dtype=np.float32) >= self.p).astype(np.float32)
        m *= np.float32(1 / (1 - self.p))
        return m

    def update(self, G, lr):
        total = math.sqrt(sum(float((g * g).sum()) for g in G))
        coef = np.float32(min(1.0 / (total + 1e-6), 1.0))
        self.t += 1
        b1, b2 = self.betas
        bc1, bc2 = 1 - b1 ** self.t, math.sqrt(1 - b2 ** self.t)
        for w, g, m, v, wd in zip(self.P, G, self.M, self.V, self.decay, strict=True):
            g *= coef
            if wd:
                w *= np.float32(1 - lr * wd)
            m += np.float32(1 - b1) * (g - m)
            v *= np.float32(b2)
            g *= g
            g *= np.float32(1 - b2)
            v += g
            d = np.sqrt(v)
            d *= np.float32(1 / bc2)
            d += np.float32(1e-8)
            np.divide(m, d, out=d)
            d *= np.float32(lr / bc1)
            w -= d


def gpt_floor(model, x, y, p=DROPOUT):
    """The nanoGPT step in NumPy: the forward, its backward by hand (LayerNorm, attention with the causal
    mask, GELU by the same float32 normal CDF, the tied read-out), clip_grad_norm_ and AdamW in two groups
    with the cosine schedule's rate. Returns (step, parameters)."""
    names = [n for n, _ in model.named_parameters()]
    params = [t.detach().numpy().copy() for _, t in model.named_parameters()]
    at = {n: i for i, n in enumerate(names)}
    layers = sum(1 for n in names if n.endswith("ln_1.weight"))
    fl = _Floor(params, GPT_LR, BETAS, [WEIGHT_DECAY if a.ndim >= 2 else 0.0 for a in params], p)
    B, T = x.shape
    C = params[at["transformer.wpe.weight"]].shape[1]
    nh = 4
    hs = C // nh
    scale = np.float32(1 / math.sqrt(hs))
    causal = np.where(np.tril(np.ones((T, T), dtype=bool)), 0, -np.inf).astype(np.float32)  # added: NumPy's fastest mask
    rows, yf = np.arange(B * T), y.reshape(-1)
    inv_sqrt_2pi = np.float32(1 / math.sqrt(2 * math.pi))

    def P(name):
        return params[at[name]]

    def heads(a):  # (B, T, C) -> (B, nh, T, hs)
        return a.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)

    def step():
        fl_lr = GPT_LR * (1 + math.cos(math.pi * fl.t / 1_000_000)) / 2  # the cosine schedule at this step
        wte, wpe = P("transformer.wte.weight"), P("transformer.wpe.weight")
        m0 = fl.mask((B, T, C))
        h = (wte[x] + wpe[:T]) * m0
        caches = []
        for k in range(layers):
            pre = f"transformer.h.{k}."
            a1, c1 = _ln(h, P(pre + "ln_1.weight"), P(pre + "ln_1.bias"))
            qkv = a1 @ P(pre + "attn.c_attn.weight").T + P(pre + "attn.c_attn.bias")
            q, kk, v = (heads(qkv[..., i * C:(i + 1) * C]) for i in range(3))
            att = q @ kk.transpose(0, 1, 3, 2)
            att *= scale
            att += causal
            att -= att.max(-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(-1, keepdims=True)
            ma = fl.mask(att.shape)
            attd = att * ma
            yh = (attd @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            mr = fl.mask((B, T, C))
            h2 = h + (yh @ P(pre + "attn.c_proj.weight").T + P(pre + "attn.c_proj.bias")) * mr
            a2, c2 = _ln(h2, P(pre + "ln_2.weight"), P(pre + "ln_2.bias"))
            f = a2 @ P(pre + "mlp.c_fc.weight").T + P(pre + "mlp.c_fc.bias")
            phi = _normal_cdf32(np, f)
            g = f * phi
            mm = fl.mask((B, T, C))
            h = h2 + (g @ P(pre + "mlp.c_proj.weight").T + P(pre + "mlp.c_proj.bias")) * mm
            caches.append((a1, c1, q, kk, v, att, ma, attd, yh, mr, a2, c2, f, phi, g, mm))
        af, cf = _ln(h, P("transformer.ln_f.weight"), P("transformer.ln_f.bias"))
        af2 = af.reshape(B * T, C)
        loss, e = _xent_floor(af2 @ wte.T, rows, yf)
        G = [None] * len(params)
        G[at["transformer.wte.weight"]] = e.T @ af2
        gh, G[at["transformer.ln_f.weight"]], G[at["transformer.ln_f.bias"]] = _ln_back(
            (e @ wte).reshape(B, T, C), cf, P("transformer.ln_f.weight"))
        for k in reversed(range(layers)):
            pre = f"transformer.h.{k}."
            a1, c1, q, kk, v, att, ma, attd, yh, mr, a2, c2, f, phi, g, mm = caches[k]
            go = (gh * mm).reshape(B * T, C)
            G[at[pre + "mlp.c_proj.weight"]], G[at[pre + "mlp.c_proj.bias"]] = go.T @ g.reshape(B * T, -1), go.sum(0)
            gf = (go @ P(pre + "mlp.c_proj.weight")).reshape(f.shape)
            dphi = f * f
            dphi *= np.float32(-0.5)
            np.exp(dphi, out=dphi)
            dphi *= inv_sqrt_2pi
            dphi *= f
            dphi += phi
            gf *= dphi
            gf2 = gf.reshape(B * T, -1)
            G[at[pre + "mlp.c_fc.weight"]], G[at[pre + "mlp.c_fc.bias"]] = gf2.T @ a2.reshape(B * T, C), gf2.sum(0)
            ga2, G[at[pre + "ln_2.weight"]], G[at[pre + "ln_2.bias"]] = _ln_back(
                (gf2 @ P(pre + "mlp.c_fc.weight")).reshape(B, T, C), c2, P(pre + "ln_2.weight"))
            gh2 = gh + ga2
            go = (gh2 * mr).reshape(B * T, C)
            G[at[pre + "attn.c_proj.weight"]], G[at[pre + "attn.c_proj.bias"]] = go.T @ yh.reshape(B * T, C), go.sum(0)
            gy = heads((go @ P(pre + "attn.c_proj.weight")).reshape(B, T, C))
            gv = attd.transpose(0, 1, 3, 2) @ gy
            gatt = gy @ v.transpose(0, 1, 3, 2)
            gatt *= ma
            gatt -= (gatt * att).sum(-1, keepdims=True)
            gatt *= att
            gatt *= scale
            gq, gk = gatt @ kk, gatt.transpose(0, 1, 3, 2) @ q
            gqkv = np.concatenate([a.transpose(0, 2, 1, 3).reshape(B * T, C) for a in (gq, gk, gv)], axis=1)
            G[at[pre + "attn.c_attn.weight"]] = gqkv.T @ a1.reshape(B * T, C)
            G[at[pre + "attn.c_attn.bias"]] = gqkv.sum(0)
            ga1, G[at[pre + "ln_1.weight"]], G[at[pre + "ln_1.bias"]] = _ln_back(
                (gqkv @ P(pre + "attn.c_attn.weight")).reshape(B, T, C), c1, P(pre + "ln_1.weight"))
            gh = gh2 + ga1
        gh *= m0
        np.add.at(G[at["transformer.wte.weight"]], x, gh)
        G[at["transformer.wpe.weight"]] = np.zeros_like(wpe)
        G[at["transformer.wpe.weight"]][:T] = gh.sum(0)
        fl.update(G, fl_lr)
        return loss

    return step, params


# -- the LSTM step ----------------------------------------------------------------------------------------


def rnn_step(lib, ex, model, compile=False):  # noqa: A002
    """examples/char_rnn.py's training step (its ``main``'s loop body) for ``lib`` (mg or torch)."""
    opt = lib.optim.Adam(model.parameters(), lr=RNN_LR)

    def step(x, y):
        opt.zero_grad()
        loss = ex.loss_of(model, x, y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return mg.compile(step) if compile else step


def rnn_models(torch, tex, vocab, dropout=DROPOUT):
    mg.manual_seed(0)
    m = char_rnn.CharRNN(vocab, hidden=RNN_HIDDEN, dropout=dropout)
    tm = tex.CharRNN(vocab, hidden=RNN_HIDDEN, dropout=dropout)
    _copy_into_torch(torch, tm, m)
    return m, tm


def rnn_floor(model, x, y, p=DROPOUT):
    """The LSTM step in NumPy: the recurrence with its gates in place (one tanh call for the four, the
    sigmoids as tanh(a / 2) / 2 + 1 / 2), backpropagation through time with the weights' gradients one
    product each, clip_grad_norm_ and Adam. Returns (step, parameters)."""
    params = [t.detach().numpy().copy() for _, t in model.named_parameters()]
    layers = model.lstm.num_layers
    fl = _Floor(params, RNN_LR, (0.9, 0.999), [0.0] * len(params), p)
    B, T = x.shape
    H = model.lstm.hidden_size
    half = np.concatenate([np.full(2 * H, 0.5), np.ones(H), np.full(H, 0.5)]).astype(np.float32)
    rows, yf = np.arange(B * T), y.reshape(-1)

    def step():
        E, Wo, bo = params[0], params[-2], params[-1]
        inp = E[x].transpose(1, 0, 2)  # (T, B, embed)
        saved = []
        for k in range(layers):
            w_ih, w_hh, b_ih, b_hh = params[1 + 4 * k: 5 + 4 * k]
            gates = (inp.reshape(T * B, -1) @ w_ih.T).reshape(T, B, 4 * H)
            gates += b_ih + b_hh
            hs = np.zeros((T + 1, B, H), np.float32)
            cs = np.zeros((T + 1, B, H), np.float32)
            tcs = np.empty((T, B, H), np.float32)
            for t in range(T):
                a = gates[t]
                a += hs[t] @ w_hh.T
                a *= half
                np.tanh(a, out=a)
                a[:, :2 * H] *= 0.5
                a[:, :2 * H] += 0.5
                a[:, 3 * H:] *= 0.5
                a[:, 3 * H:] += 0.5
                np.multiply(a[:, H:2 * H], cs[t], out=cs[t + 1])
                cs[t + 1] += a[:, :H] * a[:, 2 * H:3 * H]
                np.tanh(cs[t + 1], out=tcs[t])
                np.multiply(a[:, 3 * H:], tcs[t], out=hs[t + 1])
            mask = fl.mask((T, B, H))
            saved.append((inp, gates, hs, cs, tcs, mask))
            inp = hs[1:] * mask
        hflat = inp.transpose(1, 0, 2).reshape(B * T, H)
        loss, e = _xent_floor(hflat @ Wo.T + bo, rows, yf)
        G = [None] * len(params)
        G[-2], G[-1] = e.T @ hflat, e.sum(0)
        dinp = (e @ Wo).reshape(B, T, H).transpose(1, 0, 2)
        for k in reversed(range(layers)):
            w_ih, w_hh = params[1 + 4 * k: 3 + 4 * k]
            inp, gates, hs, cs, tcs, mask = saved[k]
            dhs = dinp * mask
            # each step's pre-activation gradient is [dc, dc, dc, dh] * m_t (the gates' slopes folded in)
            i, f, g, o = (gates[..., j * H:(j + 1) * H] for j in range(4))
            m = np.concatenate([g * i * (1 - i), cs[:-1] * f * (1 - f), i * (1 - g * g), tcs * o * (1 - o)], axis=-1)
            kc = o * (1 - tcs * tcs)
            da = np.empty_like(gates)
            dh = np.zeros((B, H), np.float32)
            dc = np.zeros((B, H), np.float32)
            for t in reversed(range(T)):
                dh += dhs[t]
                dc += dh * kc[t]
                d = da[t]
                d[:, :H] = dc
                d[:, H:2 * H] = dc
                d[:, 2 * H:3 * H] = dc
                d[:, 3 * H:] = dh
                d *= m[t]
                dc *= f[t]
                dh = d @ w_hh
            da2 = da.reshape(T * B, 4 * H)
            G[1 + 4 * k] = da2.T @ inp.reshape(T * B, -1)
            G[2 + 4 * k] = da2.T @ hs[:-1].reshape(T * B, H)
            G[3 + 4 * k] = da2.sum(0)
            G[4 + 4 * k] = G[3 + 4 * k].copy()
            dinp = (da2 @ w_ih).reshape(T, B, -1)
        G[0] = np.zeros_like(E)
        np.add.at(G[0], x.T, dinp)
        fl.update(G, RNN_LR)
        return loss

    return step, params


# -- scaled_dot_product_attention ---------------------------------------------------------------------------


def sdpa(torch, shape=(BATCH, 4, CONTEXT, 16)):
    """``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` and the gradients of q, k and v for
    an upstream gradient: minigrad, the NumPy floor (the same forward and its backward by hand), torch."""
    rng = np.random.default_rng(0)
    q0, k0, v0, g0 = (rng.standard_normal(shape).astype(np.float32) for _ in range(4))
    n = shape[-2]
    causal = np.where(np.tril(np.ones((n, n), dtype=bool)), 0, -np.inf).astype(np.float32)  # added, as PyTorch's
    scale = np.float32(1 / math.sqrt(shape[-1]))
    q, k, v = (mg.tensor(a, requires_grad=True) for a in (q0, k0, v0))
    gy = mg.tensor(g0)

    def minigrad():
        y = mg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return mg.grad(y, (q, k, v), grad_outputs=gy)

    def floor():  # as one writes it (bench_mlp.py's floor): the target's reference
        s = q0 @ k0.swapaxes(-1, -2) * scale + causal
        s -= s.max(-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(-1, keepdims=True)
        _y = p @ v0
        gv = p.swapaxes(-1, -2) @ g0
        gp = g0 @ v0.swapaxes(-1, -2)
        gs = p * (gp - (gp * p).sum(-1, keepdims=True)) * scale
        return gs @ k0, gs.swapaxes(-1, -2) @ q0, gv

    def tuned():  # every pass in place: what NumPy itself can reach, for scale
        s = q0 @ k0.swapaxes(-1, -2)
        s *= scale
        s += causal
        s -= s.max(-1, keepdims=True)
        p = np.exp(s, out=s)
        p /= p.sum(-1, keepdims=True)
        _y = p @ v0
        gv = p.swapaxes(-1, -2) @ g0
        gp = g0 @ v0.swapaxes(-1, -2)
        gp -= (gp * p).sum(-1, keepdims=True)
        gp *= p
        gp *= scale
        return gp @ k0, gp.swapaxes(-1, -2) @ q0, gv

    fns = {"minigrad": minigrad, "numpy": floor, "numpy, tuned": tuned}
    if torch is not None:
        qt, kt, vt = (torch.from_numpy(a).requires_grad_() for a in (q0, k0, v0))
        gt = torch.from_numpy(g0)

        def th():
            y = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
            return torch.autograd.grad(y, (qt, kt, vt), gt)

        fns["torch"] = th
        for a, b in zip(minigrad(), th(), strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    for a, b, c in zip(minigrad(), floor(), tuned(), strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(c, b, rtol=1e-4, atol=1e-5)
    return fns


# -- checks: what is timed computes the same thing --------------------------------------------------------


def check_agreement(torch, tgpt, trnn):
    """Without dropout, three steps of each implementation give the same losses (float32 tolerance)."""
    for what, (vocab, x, y) in (("gpt", _batch(CONTEXT)), ("rnn", _batch(RNN_SEQ))):
        for flash in ((False, True) if what == "gpt" else (False,)):
            if what == "gpt":
                m, tm = gpt_models(torch, tgpt, vocab, flash, dropout=0.0)
                m2, _ = gpt_models(torch, tgpt, vocab, flash, dropout=0.0)
                runs = {"minigrad": gpt_step(mg, char_transformer, m), "compiled": gpt_step(mg, char_transformer, m2,
                                                                                          compile=True),
                        "numpy": gpt_floor(m, x, y, p=0.0)[0]}
                if torch is not None:
                    runs["torch"] = gpt_step(torch, tgpt, tm)
            else:
                m, tm = rnn_models(torch, trnn, vocab, dropout=0.0)
                m2, _ = rnn_models(torch, trnn, vocab, dropout=0.0)
                runs = {"minigrad": rnn_step(mg, char_rnn, m), "compiled": rnn_step(mg, char_rnn, m2, compile=True),
                        "numpy": rnn_floor(m, x, y, p=0.0)[0]}
                if torch is not None:
                    runs["torch"] = rnn_step(torch, trnn, tm)
            losses = {k: [] for k in runs}
            for _ in range(3):
                for k, step in runs.items():
                    if k == "numpy":
                        losses[k].append(float(step()))
                    elif k == "torch":
                        losses[k].append(step(torch.from_numpy(x), torch.from_numpy(y)).item())
                    else:
                        losses[k].append(step(mg.tensor(x), mg.tensor(y)).item())
            for k, v in losses.items():
                np.testing.assert_allclose(v, losses["minigrad"], rtol=2e-5, err_msg=f"{what}: {k}")


# -- the run ----------------------------------------------------------------------------------------------


def _timed(fns, rounds):
    for fn in fns.values():  # a compiled step runs eagerly, then captures: replays from the third call
        for _ in range(3):
            fn()
    return bench_side_by_side(fns, rounds=rounds, repeat=3, min_time=0.3)


def gpt_row(torch, tgpt, flash, rounds):
    vocab, x, y = _batch(CONTEXT)
    m, tm = gpt_models(torch, tgpt, vocab, flash)
    m2, _ = gpt_models(torch, tgpt, vocab, flash)
    xb, yb = mg.tensor(x), mg.tensor(y)
    eager, compiled = gpt_step(mg, char_transformer, m), gpt_step(mg, char_transformer, m2, compile=True)
    fns = {"minigrad": lambda: eager(xb, yb), "compiled": lambda: compiled(xb, yb)}
    if not flash:
        fns["numpy"] = gpt_floor(m, x, y)[0]
    if torch is not None:
        ts, xt, yt = gpt_step(torch, tgpt, tm), torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: ts(xt, yt)
    name = "nanoGPT step, " + ("F.scaled_dot_product_attention" if flash else "masked_fill (the example's)")
    return name, _timed(fns, rounds), None if flash else ("<= 1.5x", "<= 1.0x")


def rnn_row(torch, trnn, rounds):
    vocab, x, y = _batch(RNN_SEQ)
    m, tm = rnn_models(torch, trnn, vocab)
    m2, _ = rnn_models(torch, trnn, vocab)
    xb, yb = mg.tensor(x), mg.tensor(y)
    eager, compiled = rnn_step(mg, char_rnn, m), rnn_step(mg, char_rnn, m2, compile=True)
    fns = {"minigrad": lambda: eager(xb, yb), "compiled": lambda: compiled(xb, yb), "numpy": rnn_floor(m, x, y)[0]}
    if torch is not None:
        ts, xt, yt = rnn_step(torch, trnn, tm), torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: ts(xt, yt)
    return "LSTM step (seq 32, hidden 128)", _timed(fns, rounds), ("<= 3x", "<= 1.5x")


def _ms(t):
    return f"{t * 1e3:9.2f}ms" if t is not None else f"{'-':>11s}"


def _verdict(r, target):
    return "met" if r <= float(target.split()[-1].rstrip("x")) else "MISSED"


def main(argv=None):
    ap = argparse.ArgumentParser(description="issue 42's PyTorch models and scaled_dot_product_attention beside "
                                             "PyTorch eager and the NumPy floor, in the same run.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per workload (best time kept)")
    args = ap.parse_args(argv)
    torch = torch_or_none()
    tgpt = torch_example("char_transformer", torch) if torch is not None else None
    trnn = torch_example("char_rnn", torch) if torch is not None else None
    check_agreement(torch, tgpt, trnn)
    print(f"threads: torch {torch.get_num_threads() if torch else '-'}, NumPy's BLAS {blas_threads()} "
          "(BENCH_THREADS=N pins both)")
    rows = []
    for row in (lambda: gpt_row(torch, tgpt, False, args.rounds), lambda: gpt_row(torch, tgpt, True, args.rounds),
                lambda: rnn_row(torch, trnn, args.rounds)):
        gc.collect()  # the previous workload's models and programs are gone before the next is timed
        rows.append(row())
    gc.collect()
    att = bench_side_by_side(sdpa(torch), rounds=max(args.rounds, 5))

    print("\n== issue 42: training steps of the examples' models, time per step; ratios to torch eager")
    print(f"{'workload':48s} {'eager':>11s} {'compiled':>11s} {'numpy':>11s} {'torch':>11s} "
          f"{'eager/th':>9s} {'comp/th':>8s} {'numpy/th':>9s}")
    verdicts = []
    for name, t, targets in rows:
        th = t.get("torch")

        def r(k, t=t, th=th):
            return f"{t[k] / th:8.2f}x" if th and k in t else f"{'-':>9s}"

        print(f"{name:48s} {_ms(t['minigrad'])} {_ms(t['compiled'])} {_ms(t.get('numpy'))} {_ms(th)} "
              f"{r('minigrad')} {r('compiled')} {r('numpy')}")
        if targets and th:
            for k, label, target in (("minigrad", "eager", targets[0]), ("compiled", "mg.compile", targets[1])):
                ratio = t[k] / th
                floor = f"; the NumPy floor {t['numpy'] / th:.2f}x" if "numpy" in t else ""
                verdicts.append(f"{name}, {label}: {ratio:.2f}x torch (target {target}) -> "
                                f"{_verdict(ratio, target)}{floor}")
    print(f"\n== F.scaled_dot_product_attention, (16, 4, 64, 16) float32, causal: forward and backward\n"
          f"minigrad {att['minigrad'] * 1e6:.0f}us, NumPy floor {att['numpy'] * 1e6:.0f}us (tuned by hand, in place: "
          f"{att['numpy, tuned'] * 1e6:.0f}us)" + (f", torch {att['torch'] * 1e6:.0f}us" if "torch" in att else ""))
    ratio = att["minigrad"] / att["numpy"]
    verdicts.append(f"scaled_dot_product_attention: {ratio:.2f}x the NumPy floor (target <= 1.2x) -> "
                    f"{_verdict(ratio, '<= 1.2x')}; {att['minigrad'] / att['numpy, tuned']:.2f}x the tuned floor"
                    + (f"; torch {att['torch'] / att['numpy']:.2f}x the floor" if "torch" in att else ""))
    print()
    for v in verdicts:
        print(v)


if __name__ == "__main__":
    main()
