"""``python -m train.distil``: the command of :mod:`train.rounds.distil` (its documentation)."""

import sys

if __name__ == "__main__":
    from train.rounds.distil import main

    sys.exit(main())
