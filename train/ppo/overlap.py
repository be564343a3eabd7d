"""MaskablePPO with rollouts collected on a second thread while the previous rollout trains.

On two cores, collection (the vector engine, the opponents, the learner's forward passes) and the
PPO update each keep one core busy; done one after the other, each core waits half the time. With
``overlap_updates: true`` in the config, :class:`OverlappedMaskablePPO` replaces only SB3's
``collect_rollouts``: while ``train()`` updates the policy on rollout k, a thread collects rollout
k+1 with a frozen copy of the policy as it was before that update. The data is one update old
when it is trained on; PPO's ratio to the behaviour policy's stored log-probabilities and its
clipping are what make that sound (as in asynchronous PPO variants). Torch ops and numpy release
the GIL, so the two threads run mostly in parallel.

What stays exact: the collection thread has its own copy of the policy, its own step counter,
last observation and episode buffers (merged at the join), and draws only from torch's generator,
which training does not use (minibatches are shuffled with numpy's); so a run is reproducible
from its seed whatever the threads' timing. Everything between two updates (SB3's
``on_rollout_start``: snapshots, evaluations, checkpoints) happens on the main thread while no
collection is in flight, and a checkpoint holds the collected rollout that is waiting to be
trained on (:meth:`pending_state`).

The model's step counter takes a rollout in at the join, and SB3's loop stops once the counter
reaches ``total_timesteps``: so when the loop checks it, it counts the rollouts trained on, not
the one collected ahead. A checkpoint is written after a join (its step counts the rollout
waiting); :meth:`restore_pending` puts the model back where it was before that join, the
rollout's steps counted again only when it is taken in. A run resumed from any checkpoint, the
last one included, so makes the same updates as the uninterrupted run and ends with the same
weights. After the last update one more rollout is collected (to ``total_steps`` plus a
rollout): the last checkpoint holds it, so that a run extended later goes on exactly.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from typing import Any

import numpy as np
from sb3_contrib import MaskablePPO

from allfours_env.checks import count, in_range, keys, like

from train.ppo.fine_tune import FineTunePPO
from train.run_folder.state_checks import MAX_RETURN, MAX_REWARD

PENDING_ARRAYS = (
    "observations", "actions", "rewards", "returns", "episode_starts", "values", "log_probs", "advantages",
    "action_masks",
)  # fmt: skip
PENDING_FIELDS = (*PENDING_ARRAYS, "pos", "full", "generator_ready")
MIN_LOG_PROB = -40.0  # a probability of 4e-18


class _Collector:
    """The model as the collection thread sees it: every attribute read from the model, except its
    own frozen policy copy, step counter, last observation and episode buffers."""

    COUNTERS = ("num_timesteps", "_last_obs", "_last_episode_starts")  # taken from the model, given back at the join

    def __init__(self, model: MaskablePPO, policy: Any):
        own = {name: getattr(model, name) for name in self.COUNTERS}
        own["policy"] = policy
        for name in ("ep_info_buffer", "ep_success_buffer"):  # merged into the model's at the join
            own[name] = deque(maxlen=model._stats_window_size)
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_own", own)

    def __getattr__(self, name: str) -> Any:
        own = object.__getattribute__(self, "_own")
        return own[name] if name in own else getattr(object.__getattribute__(self, "_model"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._own:
            raise AttributeError(f"collection may not set {name!r} on the model")
        self._own[name] = value

    def _update_info_buffer(self, infos: list[dict], dones: np.ndarray) -> None:
        type(self._model)._update_info_buffer(self, infos, dones)

    def merge_into(self, model: MaskablePPO) -> None:
        for name in self.COUNTERS:
            setattr(model, name, self._own[name])
        model.ep_info_buffer.extend(self._own["ep_info_buffer"])
        model.ep_success_buffer.extend(self._own["ep_success_buffer"])


class _StepHooks:
    """The callback as the collection thread calls it: per-step hooks only; the rollout's start
    and end are called by the main thread."""

    def __init__(self, callback: Any):
        self.update_locals, self.on_step = callback.update_locals, callback.on_step

    def on_rollout_start(self) -> None:
        pass

    on_rollout_end = on_rollout_start


class OverlappedMaskablePPO(FineTunePPO):
    """See the module docstring."""

    def _setup_model(self) -> None:
        super()._setup_model()
        self._spare = copy.deepcopy(self.rollout_buffer)  # the buffer being collected into
        self._spare_full = False  # a collected rollout waits in _spare
        self._behaviour = copy.deepcopy(self.policy)  # the frozen copy the collection acts with
        self._thread: threading.Thread | None = None
        self._outcome: tuple[_Collector, bool] | BaseException | None = None
        self.uncounted_steps = 0  # the steps of a restored rollout, counted at its join

    def _excluded_save_params(self) -> list[str]:
        """Not in the saved model: the collection's buffer, policy copy and thread (checkpoints keep
        the waiting rollout as data, :meth:`pending_state`), which SB3 would otherwise pickle into
        every checkpoint's and final.zip's data."""
        collection = ("_spare", "_spare_full", "_behaviour", "_thread", "_outcome", "uncounted_steps")
        return [*super()._excluded_save_params(), *collection]

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int, use_masking: bool = True) -> bool:
        args = (env, callback, n_rollout_steps, use_masking)
        if self._thread is None and not self._spare_full:  # nothing in flight or waiting: the first rollout
            self._behaviour.load_state_dict(self.policy.state_dict())
            self._collect(*args)
        went_on = self._join()
        callback.on_rollout_start()  # nothing in flight: snapshots, evaluations, checkpoints (pending: _spare)
        self.rollout_buffer, self._spare = self._spare, self.rollout_buffer
        self._spare_full = False
        if went_on:  # also after the last update, so that a run extended later goes on exactly
            self._behaviour.load_state_dict(self.policy.state_dict())
            self._thread = threading.Thread(target=self._collect, args=args, daemon=True)
            self._thread.start()
        callback.on_rollout_end()
        return went_on

    def _collect(self, env, callback, n_rollout_steps: int, use_masking: bool) -> None:
        collector = _Collector(self, self._behaviour)
        try:
            hooks = _StepHooks(callback)
            went_on = MaskablePPO.collect_rollouts(collector, env, hooks, self._spare, n_rollout_steps, use_masking)
            self._outcome = (collector, went_on)
        except BaseException as error:  # raised again on the main thread
            self._outcome = error

    def _join(self) -> bool:
        """Wait for the collection in flight, if any; take over its counters; whether to go on."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        outcome, self._outcome = self._outcome, None
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is None:  # a rollout restored from a checkpoint: taken in now
            self.num_timesteps += self.uncounted_steps
            self.uncounted_steps = 0
            return True
        collector, went_on = outcome
        collector.merge_into(self)
        self._spare_full = True
        return went_on

    def finish_collection(self) -> None:
        """Wait for the collection in flight (at the end of training, before the last checkpoint)."""
        if self._thread is not None:
            self._join()

    def pending_state(self) -> dict[str, Any] | None:
        """The collected rollout waiting to be trained on (None if there is none), for checkpoints."""
        if not self._spare_full:
            return None
        return {name: copy.copy(getattr(self._spare, name)) for name in PENDING_FIELDS}

    def restore_pending(self, state: dict[str, Any] | None) -> None:
        """Continue from a checkpoint (its counters restored first): its waiting rollout is trained
        on next, before any collection, and its steps are counted at that join, as they were in
        the uninterrupted run (see the module docstring). The rollout is checked first (shapes,
        dtypes, observations in the observation space, finite numbers, legal actions); a
        ValueError names what does not fit, and nothing changes then."""
        if state is None:
            return
        keys("the pending rollout", state, PENDING_FIELDS)
        arrays = {
            name: copy.copy(like(f"pending rollout {name}", state[name], getattr(self._spare, name)))
            for name in PENDING_ARRAYS
        }
        self._check_pending(arrays)
        count("pending rollout pos", state["pos"], self._spare.buffer_size, self._spare.buffer_size)
        if state["full"] is not True or state["generator_ready"] is not False:
            raise ValueError("pending rollout full must be True, generator_ready False (collected, not yet trained on)")
        for name, array in arrays.items():
            setattr(self._spare, name, array)
        self._spare.pos, self._spare.full, self._spare.generator_ready = self._spare.buffer_size, True, False
        self._spare_full = True
        self.uncounted_steps = self.n_steps * self.n_envs
        self.num_timesteps -= self.uncounted_steps

    def _check_pending(self, arrays: dict[str, np.ndarray]) -> None:
        space = self.observation_space
        observations = arrays["observations"]
        inside = (observations >= space.low).all() and (observations <= space.high).all()
        if not (np.isfinite(observations).all() and inside):
            raise ValueError("pending rollout observations must lie in the observation space")
        in_range("pending rollout rewards", arrays["rewards"], -MAX_REWARD, MAX_REWARD)
        for name in ("returns", "values", "advantages"):
            in_range(f"pending rollout {name}", arrays[name], -MAX_RETURN, MAX_RETURN)
        # a sampled action's log-probability: below -MIN_LOG_PROB none is ever drawn, and PPO's ratio would overflow
        in_range("pending rollout log_probs", arrays["log_probs"], MIN_LOG_PROB, 0.0)
        masks, starts, actions = arrays["action_masks"], arrays["episode_starts"], arrays["actions"]
        if not (np.isin(masks, (0, 1)).all() and np.isin(starts, (0, 1)).all()):
            raise ValueError("pending rollout action_masks and episode_starts must hold 0 or 1")
        in_range("pending rollout actions", actions, 0, masks.shape[-1] - 1)
        chosen = actions[..., 0].astype(np.int64)
        if not (chosen == actions[..., 0]).all() or not np.take_along_axis(masks, chosen[..., None], axis=-1).all():
            raise ValueError("pending rollout actions must be whole numbers, each legal under its mask")
