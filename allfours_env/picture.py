"""Drawing the table as a picture (an RGB array), from a decoded observation (a :class:`View`).

Like the text drawer, it sees what the seat it draws for may see, and nothing else: it is fed a
View and the absolute seat of that View's observer. The observer sits at the bottom with its
hand face up, the partner at the top, the next seat (relative 1, who plays after the observer)
on the right and the previous seat on the left, so play goes round the picture anticlockwise.
The other hands are card backs, as many as each holds (public: every hand holds the same number
when play starts, minus what its seat has played). Each seat's card in the current trick lies in
front of it, numbered in play order.

Cards, suits and words are drawn once and then pasted, so a frame costs a few milliseconds.
Suits are drawn as shapes, not font glyphs, so any font will do: Pillow's default font, at the
sizes below where Pillow supports it (10.1 and later).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError as error:  # pragma: no cover - depends on the install
    raise ImportError("render_mode='rgb_array' draws with Pillow, which is missing: pip install pillow") from error

from .cards import N_CARDS, N_RANKS, N_SEATS, N_SUITS, RANK_LETTERS
from .observation import View

# ---------------------------------------------------------------- layout (pixels)

FRAME_WIDTH, FRAME_HEIGHT = 960, 720
FRAME_SHAPE = (FRAME_HEIGHT, FRAME_WIDTH, 3)
MARGIN = 16
CARD_W, CARD_H = 64, 90
CARD_RADIUS = 6
HAND_STEP = 44  # between the cards of the observer's hand (face up)
BACK_STEP = 22  # between face-down cards
ASIDE_STEP = 26  # between kicks set aside, enough to show a "10"
MAX_HAND = 12  # 6 dealt + 3 for each of at most two runs of the pack
TABLE_CENTER = (FRAME_WIDTH // 2, 340)
TRICK_OFFSET = 80  # from the table centre to the centre of each seat's trick card
LABEL_GAP = 8  # between a hand and its seat label
LINE_HEIGHT = 22
GAP = 12  # between the trump, the kicks set aside and the live kick
KICK_X = FRAME_WIDTH - MARGIN - CARD_W  # top right, right to left: live kick, kicks set aside, trump
ASIDE_WIDTH = CARD_W + 3 * ASIDE_STEP  # more than four kicks set aside squeeze together
ASIDE_RIGHT = KICK_X - GAP
TRUMP_X = ASIDE_RIGHT - ASIDE_WIDTH - GAP - CARD_W
TOP_ROW_Y = MARGIN + LINE_HEIGHT  # cards of the top-right group, under their captions
SIDE_LABEL_Y = TABLE_CENTER[1] + ((MAX_HAND - 1) * BACK_STEP + CARD_W) // 2 + LABEL_GAP
BOTTOM_HAND_Y = FRAME_HEIGHT - MARGIN - LINE_HEIGHT - CARD_H
CHIP_RADIUS = 10
SUPERSAMPLE = 4  # shapes are drawn this much larger, then scaled down (smooth edges)

# Where each relative seat sits, as a unit vector from the table centre: 0 bottom, 1 right,
# 2 top, 3 left.
SEAT_DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0))

# ---------------------------------------------------------------- colours and type sizes

FELT = (26, 102, 58)
FELT_RIM = (18, 78, 44)
CARD_WHITE = (252, 252, 248)
CARD_BORDER = (110, 110, 110)
BACK_BLUE = (34, 62, 140)
BACK_LINE = (86, 120, 200)
RED = (200, 24, 36)
BLACK = (22, 22, 22)
SUIT_COLOURS = (BLACK, RED, RED, BLACK)  # clubs, diamonds, hearts, spades
TEXT = (245, 245, 240)
DIM_TEXT = (200, 220, 205)
TEAM_COLOURS = ((150, 205, 255), (255, 196, 120))
DEALER_CHIP = (250, 220, 90)

RANK_SIZE, INDEX_SUIT_SIZE, PIP_SIZE, TRUMP_SUIT_SIZE = 20, 13, 30, 36
TEXT_SIZE, TITLE_SIZE, CHIP_TEXT_SIZE = 16, 20, 14

PHASE_TEXT = {"stand_or_beg": "stand or beg", "give_or_run": "give one or run", "play": "play", "over": "over"}

# ---------------------------------------------------------------- sprites, drawn once


@lru_cache(maxsize=None)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one small bitmap font
        return ImageFont.load_default()


@lru_cache(maxsize=4096)
def _text_sprite(text: str, size: int, colour: tuple[int, int, int], bold: bool = False) -> Image.Image:
    """``text`` as an RGBA image as wide as its ink; pasting it is much faster than drawing text."""
    image = Image.new("RGBA", (len(text) * size + 2, 2 * size), colour + (0,))
    draw = ImageDraw.Draw(image)
    for dx in (0, 1) if bold else (0,):  # bold: drawn twice, a pixel apart (works with any font)
        draw.text((dx, 0), text, fill=colour, font=_font(size))
    right = (image.getchannel("A").getbbox() or (0, 0, 1, 1))[2]
    return image.crop((0, 0, right, image.height))


def _circle(draw: ImageDraw.ImageDraw, x: float, y: float, r: float, scale: int, fill: tuple) -> None:
    draw.ellipse(((x - r) * scale, (y - r) * scale, (x + r) * scale, (y + r) * scale), fill=fill)


def _polygon(draw: ImageDraw.ImageDraw, points: list[tuple[float, float]], scale: int, fill: tuple) -> None:
    draw.polygon([(x * scale, y * scale) for x, y in points], fill=fill)


@lru_cache(maxsize=None)
def _suit_shape(suit: int, size: int) -> Image.Image:
    """Suit ``suit`` (C D H S) as a ``size`` x ``size`` RGBA image, drawn from circles and polygons."""
    big = size * SUPERSAMPLE
    colour = SUIT_COLOURS[suit]
    image = Image.new("RGBA", (big, big), colour + (0,))
    draw = ImageDraw.Draw(image)
    fill = colour + (255,)
    if suit == 0:  # clubs: three leaves and a stem
        for x, y in ((0.5, 0.27), (0.26, 0.56), (0.74, 0.56)):
            _circle(draw, x, y, 0.22, big, fill)
        _polygon(draw, [(0.5, 0.45), (0.32, 1.0), (0.68, 1.0)], big, fill)
    elif suit == 1:  # diamonds
        _polygon(draw, [(0.5, 0.0), (0.88, 0.5), (0.5, 1.0), (0.12, 0.5)], big, fill)
    elif suit == 2:  # hearts: two lobes and a point
        for x in (0.28, 0.72):
            _circle(draw, x, 0.3, 0.24, big, fill)
        _polygon(draw, [(0.06, 0.38), (0.94, 0.38), (0.5, 0.96)], big, fill)
    else:  # spades: an upside-down heart and a stem
        for x in (0.28, 0.72):
            _circle(draw, x, 0.6, 0.22, big, fill)
        _polygon(draw, [(0.07, 0.53), (0.93, 0.53), (0.5, 0.0)], big, fill)
        _polygon(draw, [(0.5, 0.6), (0.32, 1.0), (0.68, 1.0)], big, fill)
    return image.resize((size, size), Image.LANCZOS)


def _blank_card(width: int = CARD_W, height: int = CARD_H) -> Image.Image:
    """A white rounded card with a grey border."""
    big = Image.new("RGBA", (width * SUPERSAMPLE, height * SUPERSAMPLE), CARD_WHITE + (0,))
    ImageDraw.Draw(big).rounded_rectangle(
        (0, 0, big.width - 1, big.height - 1), CARD_RADIUS * SUPERSAMPLE,
        fill=CARD_WHITE, outline=CARD_BORDER, width=SUPERSAMPLE,
    )
    return big.resize((width, height), Image.LANCZOS)


def _card_face(card: int) -> Image.Image:
    """Rank and suit in the top-left corner (and upside down in the bottom-right), a big pip."""
    suit, rank = divmod(card, N_RANKS)
    face = _blank_card()
    index = Image.new("RGBA", face.size, (0, 0, 0, 0))
    rank_text = "10" if RANK_LETTERS[rank] == "T" else RANK_LETTERS[rank]
    text = _text_sprite(rank_text, RANK_SIZE, SUIT_COLOURS[suit], bold=True)
    index.alpha_composite(text, (max(2, 4 + (INDEX_SUIT_SIZE - text.width) // 2), 3))
    index.alpha_composite(_suit_shape(suit, INDEX_SUIT_SIZE), (4, 6 + RANK_SIZE))
    face.alpha_composite(index)
    face.alpha_composite(index.rotate(180))
    face.alpha_composite(_suit_shape(suit, PIP_SIZE), ((CARD_W - PIP_SIZE) // 2 + 4, (CARD_H - PIP_SIZE) // 2))
    return face


def _card_back() -> Image.Image:
    """Blue back with a white border and a diagonal lattice."""
    back = _blank_card()
    inner = Image.new("RGBA", (CARD_W - 10, CARD_H - 10), BACK_BLUE + (255,))
    draw = ImageDraw.Draw(inner)
    for start in range(-inner.height, inner.width, 8):
        draw.line((start, 0, start + inner.height, inner.height), fill=BACK_LINE)
        draw.line((start, inner.height, start + inner.height, 0), fill=BACK_LINE)
    back.alpha_composite(inner, (5, 5))
    return back


def _trump_badge(suit: int) -> Image.Image:
    """A square white tile with the trump suit."""
    badge = _blank_card(CARD_W, CARD_W)
    offset = (CARD_W - TRUMP_SUIT_SIZE) // 2
    badge.alpha_composite(_suit_shape(suit, TRUMP_SUIT_SIZE), (offset, offset))
    return badge


def _empty_table() -> Image.Image:
    """Felt with a darker rim."""
    image = Image.new("RGB", (FRAME_WIDTH, FRAME_HEIGHT), FELT_RIM)
    ImageDraw.Draw(image).rounded_rectangle(
        (MARGIN // 2, MARGIN // 2, FRAME_WIDTH - MARGIN // 2, FRAME_HEIGHT - MARGIN // 2), 40, fill=FELT
    )
    return image


@dataclass(frozen=True)
class _Sprites:
    table: Image.Image
    faces: tuple[Image.Image, ...]
    back: Image.Image
    back_sideways: Image.Image
    trump_badges: tuple[Image.Image, ...]


@lru_cache(maxsize=1)
def _sprites() -> _Sprites:
    back = _card_back()
    return _Sprites(
        table=_empty_table(),
        faces=tuple(_card_face(c) for c in range(N_CARDS)),
        back=back,
        back_sideways=back.transpose(Image.ROTATE_90),
        trump_badges=tuple(_trump_badge(s) for s in range(N_SUITS)),
    )


# ---------------------------------------------------------------- one frame


def hand_counts(view: View) -> tuple[int, int, int, int]:
    """Cards held by each relative seat: all hands start play equal, then lose what they play."""
    start = len(view.hand) + view.played_bits[0].bit_count()
    return tuple(start - played.bit_count() for played in view.played_bits)


def _paste(frame: Image.Image, sprite: Image.Image, xy: tuple[float, float]) -> None:
    frame.paste(sprite, (round(xy[0]), round(xy[1])), sprite)


def _text(frame: Image.Image, xy: tuple[float, float], text: str, size: int, colour: tuple[int, int, int],
          align: str = "left") -> int:
    """Paste ``text`` with its top at ``xy[1]`` and its left, centre or right at ``xy[0]``; returns its width."""
    sprite = _text_sprite(text, size, colour)
    _paste(frame, sprite, (xy[0] - {"left": 0, "center": sprite.width / 2, "right": sprite.width}[align], xy[1]))
    return sprite.width


def _chip(frame: Image.Image, draw: ImageDraw.ImageDraw, center: tuple[float, float], text: str,
          fill: tuple[int, int, int], ink: tuple[int, int, int]) -> None:
    """A small disc with a letter or digit on it."""
    x, y = center
    draw.ellipse((x - CHIP_RADIUS, y - CHIP_RADIUS, x + CHIP_RADIUS, y + CHIP_RADIUS), fill=fill, outline=BLACK)
    _text(frame, (x, y - CHIP_TEXT_SIZE // 2 - 1), text, CHIP_TEXT_SIZE, ink, "center")


def _row(frame: Image.Image, sprites: list[Image.Image], step: int, center_x: int, top: int) -> None:
    if sprites:
        left = center_x - ((len(sprites) - 1) * step + sprites[0].width) / 2
        for i, sprite in enumerate(sprites):
            _paste(frame, sprite, (left + i * step, top))


def _column(frame: Image.Image, sprite: Image.Image, n: int, left: int, center_y: int) -> None:
    top = center_y - ((n - 1) * BACK_STEP + sprite.height) / 2
    for i in range(n):
        _paste(frame, sprite, (left, top + i * BACK_STEP))


def _draw_hands(frame: Image.Image, draw: ImageDraw.ImageDraw, view: View, seat: int) -> None:
    """Own hand face up at the bottom, the others' backs; each seat labelled, the dealer with a D."""
    sprites = _sprites()
    counts = hand_counts(view)
    cx, cy = TABLE_CENTER
    _row(frame, [sprites.faces[c] for c in view.hand], HAND_STEP, cx, BOTTOM_HAND_Y)
    _row(frame, [sprites.back] * counts[2], BACK_STEP, cx, MARGIN)
    _column(frame, sprites.back_sideways, counts[1], FRAME_WIDTH - MARGIN - CARD_H, cy)
    _column(frame, sprites.back_sideways, counts[3], MARGIN, cy)
    label_places = (  # (x, y, align) of each relative seat's label; room on the right for the D chip
        (cx, BOTTOM_HAND_Y + CARD_H + LABEL_GAP, "center"),
        (FRAME_WIDTH - MARGIN - 3 * CHIP_RADIUS, SIDE_LABEL_Y, "right"),
        (cx, MARGIN + CARD_H + LABEL_GAP, "center"),
        (MARGIN, SIDE_LABEL_Y, "left"),
    )
    for rel, (x, y, align) in enumerate(label_places):
        player = (seat + rel) % N_SEATS
        width = _text(frame, (x, y), f"player_{player}  team {player % 2}", TEXT_SIZE, TEAM_COLOURS[player % 2], align)
        if rel == view.dealer:
            right = x + {"left": width, "center": width / 2, "right": 0}[align]
            _chip(frame, draw, (right + 2 * CHIP_RADIUS, y + TEXT_SIZE / 2 + 1), "D", DEALER_CHIP, BLACK)


def _draw_trick(frame: Image.Image, draw: ImageDraw.ImageDraw, view: View) -> None:
    """Each seat's card of the current trick in front of it, numbered in play order."""
    faces = _sprites().faces
    cx, cy = TABLE_CENTER
    for order, (rel, card) in enumerate(view.trick_order, start=1):
        dx, dy = SEAT_DIRECTIONS[rel]
        x, y = cx + dx * TRICK_OFFSET - CARD_W // 2, cy + dy * TRICK_OFFSET - CARD_H // 2
        _paste(frame, faces[card], (x, y))
        _chip(frame, draw, (x + CARD_W - 4, y + 4), str(order), BLACK, TEXT)


def _draw_scores(frame: Image.Image, view: View, seat: int) -> None:
    """Top left: both teams' scores and the target; game points during play."""
    own = seat % 2
    scores = {own: view.scores[0], 1 - own: view.scores[1]}
    game_points = {own: view.game_points[0], 1 - own: view.game_points[1]}
    x = MARGIN + 8
    _text(frame, (x, MARGIN), f"Score (to {view.target})", TITLE_SIZE, TEXT)
    for team in (0, 1):
        _text(frame, (x, MARGIN + 4 + (team + 1) * LINE_HEIGHT), f"team {team}: {scores[team]}", TITLE_SIZE,
              TEAM_COLOURS[team])
    if view.phase == "play":
        _text(frame, (x, MARGIN + 8 + 3 * LINE_HEIGHT), f"game points {game_points[0]} - {game_points[1]}",
              TEXT_SIZE, DIM_TEXT)


def _draw_kicks_and_trump(frame: Image.Image, draw: ImageDraw.ImageDraw, view: View) -> None:
    """Top right: the trump, the kicks set aside by runs (squeezed to fit), the live kick."""
    sprites = _sprites()
    _text(frame, (KICK_X + CARD_W / 2, MARGIN), "kick", TEXT_SIZE, TEXT, "center")
    if view.kick is not None:
        _paste(frame, sprites.faces[view.kick], (KICK_X, TOP_ROW_Y))
    else:
        draw.rounded_rectangle((KICK_X, TOP_ROW_Y, KICK_X + CARD_W, TOP_ROW_Y + CARD_H), CARD_RADIUS, outline=DIM_TEXT)
    aside = view.kicks_aside
    if aside:
        step = min(ASIDE_STEP, (ASIDE_WIDTH - CARD_W) // max(len(aside) - 1, 1))
        left = ASIDE_RIGHT - CARD_W - (len(aside) - 1) * step
        _text(frame, ((left + ASIDE_RIGHT) / 2, MARGIN), "set aside", TEXT_SIZE, TEXT, "center")
        for i, card in enumerate(aside):
            _paste(frame, sprites.faces[card], (left + i * step, TOP_ROW_Y))
    _text(frame, (TRUMP_X + CARD_W / 2, MARGIN), "trump", TEXT_SIZE, TEXT, "center")
    if view.trump is not None:
        _paste(frame, sprites.trump_badges[view.trump], (TRUMP_X, TOP_ROW_Y))
    else:
        box = (TRUMP_X, TOP_ROW_Y, TRUMP_X + CARD_W, TOP_ROW_Y + CARD_W)
        draw.rounded_rectangle(box, CARD_RADIUS, outline=DIM_TEXT)
        _text(frame, (TRUMP_X + CARD_W / 2, TOP_ROW_Y + (CARD_W - TITLE_SIZE) / 2), "?", TITLE_SIZE, DIM_TEXT, "center")


def _draw_status(frame: Image.Image, view: View, status: str) -> None:
    """Bottom left: the phase and this deal's decisions; under the trick: the status line."""
    lines = [f"phase: {PHASE_TEXT[view.phase]}", *view.decided]
    top = FRAME_HEIGHT - MARGIN - len(lines) * LINE_HEIGHT
    for i, line in enumerate(lines):
        _text(frame, (MARGIN + 8, top + i * LINE_HEIGHT), line, TEXT_SIZE, DIM_TEXT)
    if status:
        cx, cy = TABLE_CENTER
        _text(frame, (cx, cy + TRICK_OFFSET + CARD_H // 2 + GAP), status, TITLE_SIZE, TEXT, "center")


def render_picture(view: View, seat: int, status: str = "") -> np.ndarray:
    """The table as seen by absolute ``seat``: a new uint8 RGB array of ``FRAME_SHAPE`` (720, 960, 3)."""
    frame = _sprites().table.copy()
    draw = ImageDraw.Draw(frame)
    _draw_hands(frame, draw, view, seat)
    _draw_trick(frame, draw, view)
    _draw_scores(frame, view, seat)
    _draw_kicks_and_trump(frame, draw, view)
    _draw_status(frame, view, status)
    return np.array(frame, dtype=np.uint8)
