"""docs/rules.md: the rules document in the repository covers every variant key and every
section the code cites."""

import re
from pathlib import Path

from allfours_env import RULE_KEYS

ROOT = Path(__file__).resolve().parent.parent
RULES_DOC = ROOT / "docs" / "rules.md"
CODE_DIRS = ("allfours_env", "agents", "eval", "train", "tests")
SECTION = re.compile(r"\bA(\d+)(?:\.(\d+))?")


def rules_doc() -> str:
    return RULES_DOC.read_text(encoding="utf-8")


def test_every_rule_key_is_in_table_a0():
    doc = rules_doc()
    table = doc[doc.index("### A0."):doc.index("### A1.")]
    for key in RULE_KEYS:
        assert re.search(rf"^\| `{key}` \| \*\*", table, re.M), key


def test_the_readme_names_every_rule_key_and_points_to_table_a0():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Rule variants"):readme.index("### Rendering")]
    assert re.findall(r"`(\w+)`(?=[,.])", section) == list(RULE_KEYS)
    assert "docs/rules.md" in section


def test_every_section_the_code_cites_exists():
    doc = rules_doc()
    cited = set()
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if "docs/rules.md" in text or "A0" in text:
                cited |= {m.group(0) for m in SECTION.finditer(text)}
    assert cited, "the code cites sections of docs/rules.md"
    for section in sorted(cited):
        major, _, minor = section[1:].partition(".")
        assert f"### A{major}." in doc, section
        if minor:
            assert re.search(rf"^{major}\.{minor} ", doc, re.M), section


def test_every_scenario_has_a_test():
    doc = rules_doc()
    part_c = doc[doc.index("## C."):]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", part_c, re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
    tests = (ROOT / "tests" / "test_scenarios.py").read_text(encoding="utf-8")
    for n in numbers:
        assert f"def test_c{n:02d}_" in tests, n


def test_nothing_points_at_the_old_rules_file():
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            assert not re.search(r"(?<!docs/)RULES\.md", path.read_text(encoding="utf-8")), path
    assert not re.search(r"(?<!docs/)RULES\.md", (ROOT / "README.md").read_text(encoding="utf-8"))
