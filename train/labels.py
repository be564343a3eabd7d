"""``python -m train.labels``: the command of :mod:`train.rounds.labels` (its documentation)."""

import sys

if __name__ == "__main__":
    from train.rounds.labels import main

    sys.exit(main())
