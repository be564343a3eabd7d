"""The PPO stage: MaskablePPO from the last student against a league (``trainer``, ``learner_env``,
``league``, ``network``), fine-tuned without losing its start (``fine_tune``, ``pull``) and with
rollouts overlapping updates (``overlap``)."""
