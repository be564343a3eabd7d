"""``python -m agents.play``: play in the terminal (the program is :mod:`agents.apps.play`)."""

from agents.apps.play import main

if __name__ == "__main__":
    raise SystemExit(main())
