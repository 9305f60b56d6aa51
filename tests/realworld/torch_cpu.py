"""A small CPU workload with Debian's python3-torch.

Tensor algebra, autograd, a few optimiser steps of a two-layer network, a
TorchScript function, and a DataLoader with two worker processes (fork): each
prints a rounded, seeded result, so that a run under ldshim's hooks can be
compared with a plain one.  Run by tests/realworld/realworld_test.sh.
"""

import sys

import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    print("torch", torch.__version__, "cuda available:", torch.cuda.is_available())

    a = torch.randn(128, 128, dtype=torch.float64)
    print("matmul trace", round(float((a @ a.T).trace()), 6))
    print("solve residual < 1e-8", bool((a @ torch.linalg.solve(a, a[:, 0]) - a[:, 0]).abs().max() < 1e-8))
    print("fft", round(float(torch.fft.rfft(a[0]).abs().sum()), 6))

    x = torch.randn(256, 16)
    y = (x.sum(dim=1, keepdim=True) > 0).float()
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(50):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    print("loss after 50 steps", round(float(loss), 3))

    @torch.jit.script
    def poly(t: torch.Tensor) -> torch.Tensor:
        return t * t + 2 * t + 1

    print("torchscript", float(poly(torch.tensor(3.0))))

    data = torch.utils.data.TensorDataset(torch.arange(64, dtype=torch.float32))
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=2)
    print("dataloader (2 workers) sum", float(sum(batch[0].sum() for batch in loader)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
