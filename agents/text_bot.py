"""``rule_based_text``: the rule-based bot reading the text view only (:mod:`allfours_env.text_view`).

Each decision, the observation is written as text; the bot reads the text back (hand, trump,
tricks, scores, legal moves: never the array), makes rule_based's choice, answers it as move text,
and that text is parsed into the action id. It plays exactly as ``rule_based`` does when the text
holds everything the observation holds, which is what it shows: the text is complete enough to
play well from (``python -m eval rule_based_text rule_based``).
"""

from __future__ import annotations

from allfours_env.actions import action_text
from allfours_env.cards import bits_of
from allfours_env.text_view import observation_text, parse_move, read_observation_text

from .base import Observation
from .rule_based import RuleBasedBot


class TextRuleBasedBot(RuleBasedBot):
    name = "rule_based_text"

    def reply(self, text: str) -> str:
        """The move, as text, for a text view that :func:`~allfours_env.text_view.observation_text` wrote."""
        view, legal = read_observation_text(text)
        if not legal:
            raise ValueError("the text has no legal move: this seat is not the one to act")
        return action_text(self.decide(view, bits_of(legal)))

    def act(self, observation: Observation) -> int:
        text = observation_text(observation)  # the last use of the observation
        _, legal = read_observation_text(text)
        return parse_move(self.reply(text), legal)
