"""Fit the amplitudes and phases of a noisy signal's tones through an FFT-domain loss.

    python examples/fourier_fit.py            # a second or so; the picture: examples/out/fourier_fit.png

The signal is a sum of a few sinusoids, each at a known frequency bin with an unknown amplitude
and phase, plus noise. The model holds each tone as a complex number, ``polar(amplitude, phase)``
(complex parameters, PyTorch's convention for their gradients: docs/complex.md), places them in
a half spectrum and makes a signal with ``irfft``. The loss compares the two signals' spectra,
``|rfft(model) - rfft(target)|²``, with a weight that favours the model's bins: the gradient goes
back through rfft, the complex subtraction and |·|², irfft, and ``polar``. Adam updates the
amplitudes and phases (real parameters). Prints the fitted and true values, and draws the
spectra before and after.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def make_signal(n: int, bins, amplitudes, phases, noise: float, rng) -> np.ndarray:
    """``n`` samples of the tones (one per bin: amplitude * cos(2 pi bin t / n + phase)) plus noise."""
    t = np.arange(n)
    x = sum(a * np.cos(2 * np.pi * k * t / n + p) for k, a, p in zip(bins, amplitudes, phases, strict=True))
    return x + noise * rng.standard_normal(n)


class Tones(mg.nn.Module):
    """Tones at fixed bins with learnable amplitudes and phases: a signal by the inverse real FFT."""

    def __init__(self, n: int, bins):
        super().__init__()
        self.n, self.bins = n, np.asarray(bins)
        self.amplitude = mg.nn.Parameter(mg.ones(len(bins), dtype=mg.float64))
        self.phase = mg.nn.Parameter(mg.zeros(len(bins), dtype=mg.float64))
        place = np.zeros((len(bins), n // 2 + 1))
        place[np.arange(len(bins)), self.bins] = n / 2  # a cos of amplitude a has |X_k| = a n / 2
        self.place = mg.tensor(place)

    def spectrum(self):
        z = mg.polar(self.amplitude, self.phase)  # complex: a e^{i phase}
        return z @ self.place.astype(np.complex128)  # the half spectrum, one bin per tone

    def forward(self):
        return mg.fft.irfft(self.spectrum(), n=self.n)


def fft_loss(model_signal, target_spectrum, weight):
    diff = mg.fft.rfft(model_signal) - target_spectrum
    return (weight * diff.abs() ** 2).sum() / model_signal.shape[0]


def plot_spectra(before, after, target, path: Path) -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the picture (pip install matplotlib)")
        return None
    fig, ax = plt.subplots(figsize=(7, 3.6))
    k = np.arange(len(target))
    ax.plot(k, np.abs(target), color="0.6", lw=1, label="target |rfft|")
    ax.plot(k, np.abs(before), "--", color="tab:red", lw=1, label="model, before")
    ax.plot(k, np.abs(after), color="tab:blue", lw=1.2, label="model, after")
    ax.set_xlabel("frequency bin")
    ax.set_ylabel("|spectrum|")
    ax.set_xlim(0, min(len(target) - 1, 64))
    ax.legend(frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(steps: int = 400, n: int = 1024, noise: float = 0.5, lr: float = 0.05, seed: int = 0,
         out_dir: Path | str | None = None, plot: bool = True, log=print) -> dict:
    """Fit and report; returns {"losses", "amplitude", "phase", "true_amplitude", "true_phase",
    "amplitude_error", "phase_error", "figure"}."""
    rng = np.random.default_rng(seed)
    bins = [5, 12, 31, 40]
    amp = rng.uniform(0.5, 2.0, len(bins))
    phase = rng.uniform(-np.pi, np.pi, len(bins))
    target = mg.tensor(make_signal(n, bins, amp, phase, noise, rng))
    target_spectrum = mg.fft.rfft(target)
    weight = mg.ones(n // 2 + 1, dtype=mg.float64)
    model = Tones(n, bins)
    opt = mg.optim.Adam(model.parameters(), lr=lr)
    with mg.no_grad():
        before = model.spectrum().numpy()
    losses = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = fft_loss(model(), target_spectrum, weight)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if log and (step == 1 or step % 100 == 0 or step == steps):
            log(f"step {step:4d}  spectral loss {losses[-1]:.4f}")
    dt = time.perf_counter() - t0
    fitted_amp = model.amplitude.detach().numpy()
    fitted_phase = np.angle(np.exp(1j * model.phase.detach().numpy()))  # in (-pi, pi]
    amp_err = float(np.abs(np.abs(fitted_amp) - amp).max())
    phase_err = float(np.abs(np.angle(np.exp(1j * (fitted_phase + np.pi * (fitted_amp < 0) - phase)))).max())
    if log:
        log(f"fitted in {dt:.2f}s ({steps} steps)")
        log(" bin   amplitude (true)   phase (true)")
        for k, a, ta, p, tp in zip(bins, fitted_amp, amp, fitted_phase, phase, strict=True):
            log(f"{k:4d}   {a:7.3f} ({ta:6.3f})   {p:+6.3f} ({tp:+6.3f})")
    with mg.no_grad():
        after = model.spectrum().numpy()
    out_dir = OUT if out_dir is None else Path(out_dir)
    fig = plot_spectra(before, after, target_spectrum.numpy() * 1.0, out_dir / "fourier_fit.png") if plot else None
    if fig and log:
        log(f"spectra before and after: {fig}")
    return {"losses": losses, "amplitude": fitted_amp, "phase": fitted_phase, "true_amplitude": amp,
            "true_phase": phase, "amplitude_error": amp_err, "phase_error": phase_err, "figure": fig}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Fit tones' amplitudes and phases through an FFT-domain loss.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=400, help="Adam steps")
    ap.add_argument("--n", type=int, default=1024, help="samples in the signal")
    ap.add_argument("--noise", type=float, default=0.5, help="standard deviation of the added noise")
    ap.add_argument("--lr", type=float, default=0.05, help="Adam's learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the tones and the noise")
    ap.add_argument("--no-plot", action="store_true", help="do not draw the spectra")
    a = ap.parse_args()
    main(steps=a.steps, n=a.n, noise=a.noise, lr=a.lr, seed=a.seed, plot=not a.no_plot)
