"""``python -m agents.web``: the web page's server (the program is :mod:`agents.apps.web`)."""

from agents.apps.web.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
