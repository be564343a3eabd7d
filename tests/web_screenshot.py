"""``python -m tests.web_screenshot docs/web.png``: the README's picture of the web page.

``python -m tests.web_screenshot docs/web_mobile.png --width 390 --height 844``: the same on a phone.

Starts the server on 127.0.0.1, plays a match in headless Chromium (the browser tests' tooling)
through its first deal, stops at a turn of the person with cards on the table in the second and
a choice of cards, asks for a hint and takes the screenshot; Pillow then stores it with a
256-colour palette so the file stays small.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.test_web_browser import CHROMIUM, CHROMIUM_ARGS
from tests.web_server import running_server

VIEWPORT = {"width": 1280, "height": 800}
MAX_TURNS = 200


def take(path: Path, seed: int = 7, viewport: dict[str, int] = VIEWPORT) -> int:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with running_server() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=viewport)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", state="attached")
        page.fill("#partner", "expert")
        page.fill("#right", "search")
        page.fill("#left", "expert")
        page.fill("#seed", str(seed))
        page.select_option("#speed", "0")
        page.click("#start")
        for _ in range(MAX_TURNS):
            page.wait_for_selector("#game[data-turn=you], #game[data-over=true]", state="attached")
            state = page.evaluate("ui.state")
            if state["over"]:
                raise SystemExit("the match ended before a good moment for the picture: try another --seed")
            table = state["table"]
            chooses = len(state["legal"]) >= 2  # (a choice of cards: the hint has figures to show)
            if table["deal"] >= 2 and table["phase"] == "play" and len(table["trick"]) >= 2 and chooses:
                break
            step = state["step"]
            page.click("#bids button:not([disabled]), #hand .card.legal >> nth=0")
            page.wait_for_selector(f"#game:not([data-step='{step}'])", state="attached")  # (the page's CSP forbids eval)
        page.click("#hint")
        page.wait_for_selector("#hint-values tr")
        page.evaluate("window.scrollTo(0, 0)")  # (the click may have scrolled a phone's page)
        page.screenshot(path=str(path))
        browser.close()
    image = Image.open(path).convert("RGB")
    image.quantize(colors=256, dither=Image.Dither.NONE).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.web_screenshot", description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the PNG to write, e.g. docs/web.png")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--width", type=int, default=VIEWPORT["width"], help="of the viewport, px (390: a phone)")
    parser.add_argument("--height", type=int, default=VIEWPORT["height"])
    args = parser.parse_args(argv)
    return take(args.path, args.seed, {"width": args.width, "height": args.height})


if __name__ == "__main__":
    sys.exit(main())
