"""``python -m agents.review LOG``: review a match log (the program is :mod:`agents.apps.review`)."""

from agents.apps.review import main

if __name__ == "__main__":
    raise SystemExit(main())
