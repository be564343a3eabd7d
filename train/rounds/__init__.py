"""Expert iteration, the stage between the warm start and PPO: search labels decisions
(``labels``, on a Ray cluster too: ``labels_ray``; on disk: ``label_set``), a network is fitted to
them (``distil``), round by round (``expert_iteration``)."""
