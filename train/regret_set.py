"""``python -m train.regret_set``: the command of :mod:`train.rounds.regret_set` (its documentation)."""

if __name__ == "__main__":
    from agents.shared.options import run_script
    from train.rounds.regret_set import main

    raise SystemExit(run_script(main, "python -m train.regret_set"))
