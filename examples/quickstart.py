"""PyTorch's quickstart tutorial, line for line, with minigrad's names, on scikit-learn's 8x8 digits.

    python examples/quickstart.py             # 10 epochs, a few seconds: 97.6 % test accuracy
    python examples/quickstart.py --epochs 5 --device cuda

The tutorial (pytorch.org/tutorials/beginner/basics/quickstart_tutorial.html) trains on
FashionMNIST, which is a download; the digits (1797 images, bundled with scikit-learn) take its
place, split 3:1 into training and test sets with ``random_split``. Everything else is the
tutorial's code with ``torch`` spelled ``mg``: a ``DataLoader`` over a dataset, a ``Module``
with ``Flatten`` and a ``Sequential`` of ``Linear`` and ``ReLU``, ``nn.CrossEntropyLoss``, SGD
(with momentum, which the tiny dataset needs), ``train`` and ``test`` loops, ``mg.no_grad``,
``pred.argmax(1) == y``, ``mg.save`` / ``mg.load`` of the ``state_dict``. Two additions: a
learning-rate scheduler (``CosineAnnealingLR``, stepped once an epoch) and a tqdm progress bar
over each epoch's batches (the user's own tqdm around the loader, as in PyTorch).

Every draw is seeded (``mg.manual_seed``, the split's and the loader's ``seed=``), so a run
prints the same numbers each time; ``tests/test_quickstart.py`` checks the figure above (and the README's).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402
from minigrad import nn  # noqa: E402
from minigrad.utils.data import DataLoader, TensorDataset, random_split  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
EPOCHS = 10
BATCH_SIZE = 64
LR = 0.05
SEED = 0


# -- Working with data ----------------------------------------------------------------------------


def load_datasets(seed: int = SEED):
    """(training_data, test_data): the digits as images [N, C, H, W] in [0, 1] with int64 labels,
    split 3:1 at random (``random_split`` with ``seed``)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    images = (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)  # what ToTensor() gives: floats in [0, 1]
    data = TensorDataset(mg.tensor(images), mg.tensor(y.astype(np.int64)))
    return random_split(data, [0.75, 0.25], seed=seed)


# -- Creating Models -------------------------------------------------------------------------------


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


# -- Optimizing the Model Parameters --------------------------------------------------------------


def _bar(dataloader, epoch, show):
    """The user's own progress bar around the loader (tqdm), or the loader itself."""
    if not show:
        return dataloader
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return dataloader
    return tqdm(dataloader, desc=f"epoch {epoch}", unit="batch", ncols=90, leave=False)


def train(dataloader, model, loss_fn, optimizer, device="cpu", epoch=1, progress=True):
    size = len(dataloader.dataset)
    model.train()
    bar = _bar(dataloader, epoch, progress)
    for batch, (X, y) in enumerate(bar):
        X, y = X.to(device), y.to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 10 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            if hasattr(bar, "set_postfix_str"):
                bar.set_postfix_str(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
            else:
                print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn, device="cpu"):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with mg.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).astype(mg.float32).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct, test_loss


def main(epochs: int = EPOCHS, batch_size: int = BATCH_SIZE, lr: float = LR, seed: int = SEED, device: str = "cpu",
         out_dir: Path | str | None = None, progress: bool = True) -> dict:
    """Run the tutorial; returns {"accuracy", "test_loss", "model", "path", "predicted", "actual"}."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    mg.manual_seed(seed)
    training_data, test_data = load_datasets(seed)

    # Create data loaders.
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True, seed=seed)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)

    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break

    print(f"Using {device} device")
    model = NeuralNetwork().to(device)
    print(model)

    loss_fn = nn.CrossEntropyLoss()
    optimizer = mg.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scheduler = mg.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)

    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, device, t + 1, progress)
        scheduler.step()
        accuracy, test_loss = test(test_dataloader, model, loss_fn, device)
    print("Done!")

    # Saving Models
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "model.pth"
    mg.save(model.state_dict(), path)  # exactly this name, as torch.save
    print(f"Saved minigrad Model State to {path}")

    # Loading Models
    model = NeuralNetwork().to(device)
    model.load_state_dict(mg.load(path))

    classes = [str(d) for d in range(10)]
    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with mg.no_grad():
        x = x.to(device)
        pred = model(x.unsqueeze(0))  # one image: a batch of one (the tutorial's pred[0])
        predicted, actual = classes[pred[0].argmax(0).item()], classes[y.item()]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    return {"accuracy": accuracy, "test_loss": test_loss, "model": model, "path": path, "predicted": predicted,
            "actual": actual}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description="PyTorch's quickstart tutorial with minigrad on the 8x8 digits: DataLoader, CrossEntropyLoss, "
                    "SGD with a cosine schedule, train and test loops with a tqdm bar; saves the model's state_dict "
                    "to OUT_DIR/model.pth.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--epochs", type=int, default=EPOCHS, help="passes over the training set")
    ap.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="images per batch")
    ap.add_argument("--lr", type=float, default=LR, help="SGD's learning rate (momentum 0.9), annealed to 0")
    ap.add_argument("--seed", type=int, default=SEED, help="the split, the shuffling and the initialisation")
    ap.add_argument("--device", default="cpu", help="'cpu', or 'cuda' / 'cuda:N' (CuPy)")
    ap.add_argument("--out-dir", default=str(OUT), help="where model.pth is written")
    ap.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    a = ap.parse_args()
    main(epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, seed=a.seed, device=a.device, out_dir=a.out_dir,
         progress=not a.no_progress)
