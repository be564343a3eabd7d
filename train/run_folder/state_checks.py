"""What a restore checks before it uses a state read from a checkpoint: kinds, ranges, forms.

A checkpoint's state is data (:mod:`train.run_folder.state_file`), but data a person may have changed: each
restore checks every value against the object it goes into and against the run before anything
is set. These are the checks they share, each a ValueError naming the value and what is allowed:

- the checks of every reader (:mod:`allfours_env.checks`: kinds, ranges, keys);
- :func:`weights_like`: a network's weights shaped as the learner's actor;
- the random generators' states, in the exact form their setters take: numpy's PCG64
  (:func:`generator_state`), numpy's global MT19937 (:func:`numpy_global_state`), Python's
  ``random`` (:func:`python_random_state`) and torch's (:func:`torch_rng_state`). Their setters
  check less than this: numpy's global generator takes any position and then reads outside its
  key (a crash), and numpy's and Python's raise OverflowError on huge integers.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from allfours_env.checks import brief, count, keys, like, number

# The most a step's reward, a return or a value can be: a reward is a step's points over the target
# score (about 3 at most) or 1 for a match, so these leave room; far larger ones overflow PPO's float32 losses.
MAX_REWARD = 100.0
MAX_RETURN = 1e6
PCG64_BITS = 128
MT_WORDS = 624  # the Mersenne Twister's state: 624 words of 32 bits and a position
WORD = 2**32


def weights_like(name: str, weights: Any, actor: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``weights``, if they have ``actor``'s arrays (names, shapes, dtypes) and its input layout
    and activation: a network the learner's own could be (its values: a policy file's checks)."""
    if not isinstance(weights, dict) or set(weights) != set(actor):
        raise ValueError(f"{name} must be weights of the arrays {sorted(actor)}")
    for key, reference in actor.items():
        like(f"{name} {key}", weights[key], reference)
        if reference.dtype.kind != "f" and not np.array_equal(weights[key], reference):
            raise ValueError(f"{name} {key} must be the learner's ({reference}), got {brief(weights[key])}")
    return weights


def generator_state(name: str, value: Any) -> dict:
    """``value``, if it is the state of numpy's PCG64 bit generator (``Generator.bit_generator.state``)."""
    keys(name, value, ("bit_generator", "state", "has_uint32", "uinteger"))
    if value["bit_generator"] != "PCG64":
        raise ValueError(f"{name} must be a PCG64 generator's state, got {brief(value['bit_generator'])}")
    inner = keys(f"{name} state", value["state"], ("state", "inc"))
    count(f"{name} state", inner["state"], 0, 2**PCG64_BITS - 1)
    if count(f"{name} increment", inner["inc"], 0, 2**PCG64_BITS - 1) % 2 == 0:
        raise ValueError(f"{name} increment must be odd, as PCG64 keeps it")
    count(f"{name} has_uint32", value["has_uint32"], 0, 1)
    count(f"{name} uinteger", value["uinteger"], 0, WORD - 1)
    return value


def numpy_global_state(value: Any) -> tuple:
    """``value``, if it is a state of numpy's global generator (``np.random.get_state()``)."""
    name = "numpy_global_rng"
    if not isinstance(value, tuple) or len(value) != 5 or value[0] != "MT19937":
        raise ValueError(f"{name} must be ('MT19937', key, position, has_gauss, cached_gaussian), got {brief(value)}")
    like(f"{name} key", value[1], np.zeros(MT_WORDS, np.uint32))
    count(f"{name} position", value[2], 0, MT_WORDS)
    count(f"{name} has_gauss", value[3], 0, 1)
    number(f"{name} cached_gaussian", value[4])
    return value


def python_random_state(value: Any) -> tuple:
    """``value``, if it is a state of Python's ``random`` (``random.getstate()``)."""
    name = "python_rng"
    if not isinstance(value, tuple) or len(value) != 3 or value[0] != 3 or not isinstance(value[1], tuple):
        raise ValueError(f"{name} must be (3, the generator's {MT_WORDS + 1} words, gauss_next), got {brief(value)}")
    words = value[1]
    if len(words) != MT_WORDS + 1:
        raise ValueError(f"{name} must hold {MT_WORDS + 1} words, got {len(words)}")
    for word in words[:-1]:
        count(f"{name} word", word, 0, WORD - 1)
    count(f"{name} position", words[-1], 0, MT_WORDS)
    if value[2] is not None:
        number(f"{name} gauss_next", value[2])
    random.Random().setstate(value)  # what else Python checks, on a generator of its own
    return value


def torch_rng_state(value: Any) -> np.ndarray:
    """``value``, if it is a state of torch's CPU generator (``torch.get_rng_state()``, as bytes)."""
    import torch

    reference = torch.get_rng_state().numpy()
    like("torch_rng", value, reference)
    try:
        torch.Generator().set_state(torch.from_numpy(value.copy()))  # torch's own checks, on a generator of its own
    except RuntimeError as err:
        raise ValueError(f"torch_rng is not a state of torch's generator: {err}") from None
    return value
