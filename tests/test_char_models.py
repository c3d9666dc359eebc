"""Issue 42, point 5: examples/char_transformer.py is nanoGPT's GPT written with minigrad's PyTorch names.
The same model written with torch (nanoGPT's model.py, trimmed to what the example uses) hands its
initial weights to minigrad's by load_state_dict (the state_dict keys are torch's, the tied
embedding/read-out matrix and the causal-mask buffer included); both are then trained for five steps on
the same batches with AdamW in two parameter groups, clip_grad_norm_ and a cosine schedule, in float64
with dropout 0, and their losses must agree step by step to 1e-10 (both attention paths: the explicit
masked_fill of the registered tril buffer and F.scaled_dot_product_attention(is_causal=True))."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import load_example

torch = pytest.importorskip("torch")
tnn = torch.nn
TF = torch.nn.functional

VOCAB, CONTEXT, D, HEADS, LAYERS, BATCH, STEPS = 13, 8, 16, 2, 2, 4, 5


# -- nanoGPT's model in torch --------------------------------------------------------------------------


class TorchAttention(tnn.Module):
    def __init__(self, n_embd, n_head, block_size, flash):
        super().__init__()
        self.c_attn = tnn.Linear(n_embd, 3 * n_embd)
        self.c_proj = tnn.Linear(n_embd, n_embd)
        self.attn_dropout = tnn.Dropout(0.0)
        self.resid_dropout = tnn.Dropout(0.0)
        self.n_head, self.n_embd, self.flash = n_head, n_embd, flash
        if not flash:
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = TF.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(TF.softmax(att, dim=-1))
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class TorchMLP(tnn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = tnn.Linear(n_embd, 4 * n_embd)
        self.gelu = tnn.GELU()
        self.c_proj = tnn.Linear(4 * n_embd, n_embd)
        self.dropout = tnn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class TorchBlock(tnn.Module):
    def __init__(self, n_embd, n_head, block_size, flash):
        super().__init__()
        self.ln_1 = tnn.LayerNorm(n_embd)
        self.attn = TorchAttention(n_embd, n_head, block_size, flash)
        self.ln_2 = tnn.LayerNorm(n_embd)
        self.mlp = TorchMLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(tnn.Module):
    def __init__(self, vocab_size, block_size, n_embd, n_head, n_layer, flash):
        super().__init__()
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(vocab_size, n_embd),
            wpe=tnn.Embedding(block_size, n_embd),
            drop=tnn.Dropout(0.0),
            h=tnn.ModuleList([TorchBlock(n_embd, n_head, block_size, flash) for _ in range(n_layer)]),
            ln_f=tnn.LayerNorm(n_embd),
        ))
        self.lm_head = tnn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                tnn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
        # nanoGPT's initialisation leaves the LayerNorms at 1 and 0: perturb them (and the biases) so
        # that a wrong parameter, wrong group or wrong gradient anywhere shows in the losses
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() < 2:
                    p.add_(0.1 * torch.randn_like(p))

    def _init_weights(self, module):
        if isinstance(module, tnn.Linear):
            tnn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                tnn.init.zeros_(module.bias)
        elif isinstance(module, tnn.Embedding):
            tnn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def _torch_optimizer(model, lr=3e-3):
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98))


# -- the comparison ----------------------------------------------------------------------------------------


def _pair(flash):
    ex = load_example("char_transformer")
    torch.manual_seed(0)
    tm = TorchGPT(VOCAB, CONTEXT, D, HEADS, LAYERS, flash).double()
    mg.manual_seed(0)
    m = ex.CharTransformer(VOCAB, context=CONTEXT, d_model=D, n_heads=HEADS, n_layers=LAYERS, dropout=0.0,
                           flash=flash).double()
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return ex, m, tm


@pytest.mark.parametrize("flash", [False, True], ids=["masked_fill", "sdpa"])
def test_minigrad_trains_like_torch(flash):
    ex, m, tm = _pair(flash)
    assert m.transformer.wte.weight is m.lm_head.weight  # tied, and still tied after loading
    assert len(list(m.parameters())) == len(list(tm.parameters()))
    opt = m.configure_optimizers(weight_decay=0.1, learning_rate=3e-3, betas=(0.9, 0.98))
    topt = _torch_optimizer(tm)
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=STEPS)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, 200)
    losses, tlosses = [], []
    for _ in range(STEPS):
        x, y = ex.batches(ids, CONTEXT, BATCH, rng)
        opt.zero_grad()
        loss = ex.loss_of(m, mg.tensor(x), mg.tensor(y))
        loss.backward()
        mg.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())

        topt.zero_grad()
        logits = tm(torch.from_numpy(x))
        tloss = TF.cross_entropy(logits.view(-1, logits.size(-1)), torch.from_numpy(y).view(-1))
        tloss.backward()
        tnn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        topt.step()
        tsched.step()
        tlosses.append(tloss.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]  # it learns
    for k, v in tm.state_dict().items():  # and ends with torch's weights
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-8, atol=1e-12, err_msg=k)


def test_both_attention_paths_agree_and_generate_samples_with_top_k():
    ex = load_example("char_transformer")
    mg.manual_seed(0)
    slow = ex.CharTransformer(VOCAB, context=CONTEXT, d_model=D, n_heads=HEADS, n_layers=1, dropout=0.0).double()
    fast = ex.CharTransformer(VOCAB, context=CONTEXT, d_model=D, n_heads=HEADS, n_layers=1, dropout=0.0,
                              flash=True).double()
    fast.load_state_dict(slow.state_dict(), strict=False)  # the flash model has no mask buffer
    x = mg.tensor(np.random.default_rng(1).integers(0, VOCAB, (2, CONTEXT)))
    with mg.no_grad():
        np.testing.assert_allclose(fast(x).numpy(), slow(x).numpy(), rtol=1e-10, atol=1e-12)
    out = slow.generate(x[:, :3], CONTEXT + 4, top_k=1)  # runs past the block size: the context is cropped
    assert tuple(out.shape) == (2, 3 + CONTEXT + 4)
    assert (out[:, :3].numpy() == x[:, :3].numpy()).all()
    greedy = x[:, :3]
    with mg.no_grad():
        for _ in range(CONTEXT + 4):  # top_k=1 is greedy decoding
            nxt = slow(greedy[:, -CONTEXT:])[:, -1, :].argmax(dim=-1, keepdim=True)
            greedy = mg.cat((greedy, nxt), dim=1)
    assert (out.numpy() == greedy.numpy()).all()
