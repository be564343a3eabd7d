"""The sparse first layer of the learner's network (train/sparse_input.py) computes nn.Linear.

- Forward, weight and bias gradients equal a dense ``torch.nn.Linear`` with the same weights on a
  mostly-zero input (float tolerance: only the order of the additions differs), for a contiguous
  input and for a column slice (the actor reads the first columns of the critic's input), with
  and without gradients, and for rows that are all zeros.
- An input that needs a gradient goes through the dense product, so its gradient is right too.
- The network's trunks use it for their first layer and keep nn.Linear's parameter names.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from train.ppo.network import Trunks  # noqa: E402
from train.sparse_input import SparseInputLinear  # noqa: E402


def _input(rows: int, cols: int, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    x = (rng.random((rows, cols)) < 0.08) * rng.choice([1.0, 0.5, 3.0, -2.0], size=(rows, cols))
    x[3] = 0.0  # a row of zeros
    return torch.from_numpy(x.astype(np.float32))


def _pair(inputs: int, outputs: int) -> tuple[SparseInputLinear, torch.nn.Linear]:
    sparse = SparseInputLinear(inputs, outputs)
    dense = torch.nn.Linear(inputs, outputs)
    dense.load_state_dict(sparse.state_dict())
    return sparse, dense


@pytest.mark.parametrize("sliced", [False, True])
def test_forward_and_gradients_equal_a_dense_linear(sliced):
    x = _input(300, 90)
    x = x[:, :70] if sliced else x
    sparse, dense = _pair(x.shape[1], 16)
    upstream = torch.randn(300, 16, generator=torch.Generator().manual_seed(1))
    outputs = [layer(x) for layer in (sparse, dense)]
    torch.testing.assert_close(outputs[0], outputs[1])
    for out in outputs:
        (out * upstream).sum().backward()
    torch.testing.assert_close(sparse.weight.grad, dense.weight.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(sparse.bias.grad, dense.bias.grad, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(sparse(x), dense(x))


def test_an_input_that_needs_a_gradient_gets_the_right_one():
    sparse, dense = _pair(40, 8)
    inputs = [_input(50, 40).requires_grad_() for _ in range(2)]
    for layer, x in zip((sparse, dense), inputs):
        layer(x).square().sum().backward()
    torch.testing.assert_close(inputs[0].grad, inputs[1].grad)
    torch.testing.assert_close(sparse.weight.grad, dense.weight.grad)


def test_the_trunks_first_layers_are_sparse_with_linear_names():
    import gymnasium as gym

    trunks = Trunks(gym.spaces.Box(0.0, 1.0, (90,), np.float32), actor_inputs=70, sizes=[32, 32], critic_sizes=[16])
    assert isinstance(trunks.net[0], SparseInputLinear) and isinstance(trunks.critic_net[0], SparseInputLinear)
    assert type(trunks.net[2]) is torch.nn.Linear
    assert {"net.0.weight", "net.0.bias", "critic_net.0.weight"} <= set(trunks.state_dict())
