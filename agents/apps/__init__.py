"""The programs built on the bots: terminal play (``python -m agents.play``), the web page
(``python -m agents.web``), the review of a match (``python -m agents.review``) and the match
logs they read and write. ``agents/play.py``, ``web.py`` and ``review.py`` only start them."""
