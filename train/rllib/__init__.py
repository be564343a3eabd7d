"""The Ray RLlib backend of ``python -m train`` (``--backend rllib``; needs ``pip install -e '.[rllib]'``).

One job per module:

* :mod:`.env`: the engine as an RLlib ``MultiAgentEnv`` (turn-based; rewards to every seat);
* :mod:`.module`: the action-masking PPO RLModule;
* :mod:`.league`: who plays which seat (team-shared modules, seats swapped between matches) and
  the league of frozen snapshots, refreshed by a callback;
* :mod:`.export`: the trained actor as the numpy policy file ``agents.make`` loads;
* :mod:`.config`: the YAML config (``configs/rllib.yaml``);
* :mod:`.cluster`: starting Ray locally or joining a cluster;
* :mod:`.run`: the training loop (progress, evaluation, checkpoints, resume, final export);
* :mod:`.cli`: the command line behind ``python -m train --backend rllib``.

Only :mod:`.cli` may be imported without Ray installed.
"""
