"""Registers the bots that ship with the project under their short names."""

from pathlib import Path

from .base import register
from .expert import ExpertBot
from .oracle import OracleBot
from .policy import PolicyBot
from .random_bot import RandomBot
from .rule_based import RuleBasedBot
from .search import SearchBot, search_v1
from .text_bot import TextRuleBasedBot

register("random", RandomBot)
register("rule_based", RuleBasedBot)
register("rule_based_text", TextRuleBasedBot)  # rule_based reading the text view only
register("expert", ExpertBot)
register("search", SearchBot)
register("search_v1", search_v1)  # the frozen reference search (issue 41)
register("oracle", OracleBot, sees_hands=True)  # a ceiling for evaluation, never a player


PRETRAINED = Path(__file__).parent / "pretrained" / "allfours_v1.npz"


def pretrained() -> PolicyBot:
    """The policy shipped with the package, trained by ``python -m train`` (configs/default.yaml)."""
    return PolicyBot.from_file(PRETRAINED, name="pretrained")


register("pretrained", pretrained)


STUDENT = Path(__file__).parent / "pretrained" / "student_v6.npz"


def student() -> PolicyBot:
    """The strongest network (docs/expert_iteration.md): the default ``python -m train`` run's
    student (``student_v2.npz``) taken four rounds further by expert iteration whose search reads
    the student, as its prior and in its rollouts (``student_v3.npz``), then one more round fitted
    by the advantage loss from ``student_v3`` averaged over every suit relabelling
    (``student_v4.npz``), then two generations of PPO, each against the one before, frozen, with
    the fine-tuning recipe (``student_v5.npz``, then ``student_v6.npz``, docs/results.md). (The
    earlier students stay for the figures measured with them.)"""
    return PolicyBot.from_file(STUDENT, name="student")


register("student", student)
