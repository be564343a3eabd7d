"""Every link of the README and docs/ to a file or to a heading points at one that exists."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors GitHub gives a page's headings (not a code block's ``#`` lines): lower case,
    punctuation but - and _ dropped, spaces as hyphens, a repeated one numbered -1, -2, ..."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#+ (.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        found.add(slug if seen[slug] == 0 else f"{slug}-{seen[slug]}")
    return frozenset(found)


def links(page: Path) -> list[tuple[int, str, str | None]]:
    found = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        for target, anchor in LINK.findall(line):
            if not re.match(r"[a-z]+:", target):  # not http:, mailto:
                found.append((number, target, anchor or None))
    return found


def test_the_slugs_are_githubs():
    page = ROOT / "README.md"
    assert "how-exploitable-is-a-bot-python--m-trainexploit" in anchors(page)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_lands(page):
    broken = []
    for number, target, anchor in links(page):
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"line {number}: {target} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"line {number}: {target or page.name} has no heading #{anchor}")
    assert not broken, f"{page.name}: " + "; ".join(broken)
