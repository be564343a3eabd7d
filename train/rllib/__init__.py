"""The Ray RLlib backend of ``python -m train`` (``--backend rllib``; needs ``pip install -e '.[rllib]'``).

One job per module:

* :mod:`.env`: the Gymnasium vector env over the vector engine as RLlib's env runners sample it
  (``gym_env_vectorize_mode="vector_entry_point"``): the learner's team against the league;
* :mod:`.module`: the action-masking PPO RLModule;
* :mod:`.league`: the other team inside the env (the learner's latest weights, or a frozen
  snapshot), each network answering all its tables in one forward pass;
* :mod:`.export`: the trained actor as the numpy policy file ``agents.make`` loads;
* :mod:`.config`: the YAML config (``configs/rllib.yaml``);
* :mod:`.cluster`: starting Ray locally or joining a cluster;
* :mod:`.run`: the training loop (progress, evaluation, checkpoints, resume, final export);
* :mod:`.cli`: the command line behind ``python -m train --backend rllib``.

Only :mod:`.cli` and :mod:`.cluster` (which ``python -m train.labels --address`` uses too) may be
imported without Ray installed.
"""
