"""Issue 42: examples/char_rnn.py's model (embedding -> LSTM -> linear) against the same model in torch.
torch's initial weights are copied into minigrad's by load_state_dict (the keys must match), both are
trained for 5 steps of Adam with clip_grad_norm_ on the same batches of char_transformer.py's text,
and minigrad's losses must be torch's step by step (1e-10 relative in float64, 1e-5 in float32),
as must the trained weights (float32: 1e-5 absolute)."""
import numpy as np
import pytest

import minigrad as mg
from conftest import load_example

torch = pytest.importorskip("torch")

SEQ, HID, EMB, BATCH, STEPS = 16, 32, 16, 4, 5
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}


class TorchCharRNN(torch.nn.Module):
    def __init__(self, vocab, embed, hidden, num_layers):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, embed)
        self.lstm = torch.nn.LSTM(embed, hidden, num_layers=num_layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


@pytest.fixture(scope="module")
def ex():
    return load_example("char_rnn")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layers", [1, 2])
def test_losses_match_torch_step_by_step(ex, dtype, layers):
    vocab, train_ids, _ = ex.load_text()
    torch.manual_seed(0)
    tm = TorchCharRNN(len(vocab), EMB, HID, layers).to(getattr(torch, dtype))
    m = ex.CharRNN(len(vocab), embed=EMB, hidden=HID, num_layers=layers, dropout=0.0, dtype=dtype)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})

    opt = mg.optim.Adam(m.parameters(), lr=1e-2)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    losses, tlosses = [], []
    for _ in range(STEPS):
        x, y = ex.batches(train_ids, SEQ, BATCH, rng)
        opt.zero_grad()
        loss = ex.loss_of(m, mg.tensor(x), mg.tensor(y))
        loss.backward()
        mg.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())

        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)).reshape(-1, len(vocab)),
                                               torch.tensor(y).reshape(-1))
        tl.backward()
        torch.nn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        topt.step()
        tlosses.append(tl.item())
    np.testing.assert_allclose(losses, tlosses, **TOL[dtype])
    assert losses[-1] < losses[0]
    # the weights too; in float32 Adam's normalised step turns a rounding-level gradient difference of
    # an element whose gradient is near zero into a few 1e-6 of weight, hence an absolute 1e-5 there
    wtol = TOL[dtype] if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), **wtol, err_msg=k)


def test_sample_is_reproducible_and_carries_the_state(ex):
    vocab, _, _ = ex.load_text()
    mg.manual_seed(0)
    m = ex.CharRNN(len(vocab), embed=8, hidden=16, num_layers=1)
    a = ex.sample(m, vocab, "The ", 30, seed=3)
    assert a.startswith("The ") and len(a) == 34 and set(a) <= set(vocab.chars)
    assert ex.sample(m, vocab, "The ", 30, seed=3) == a
    # one character at a time with the state carried == the whole string re-read at once
    ids = vocab.encode(a)
    m.eval()  # no dropout
    with mg.no_grad():
        full, _ = m(mg.tensor(ids[None]))
        _, state = m(mg.tensor(ids[None, :-1]))
        last, _ = m(mg.tensor(ids[None, -1:]), state)
    np.testing.assert_allclose(last.numpy()[0, 0], full.numpy()[0, -1], rtol=1e-5, atol=1e-6)
