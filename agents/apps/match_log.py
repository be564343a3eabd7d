"""Match logs: one JSON file per match, enough to replay it move by move and to check it.

The format is documented in ``docs/match_log.md``; in short::

    {"format": "allfours-match-log", "version": 1, "source": "agents.play",
     "players": ["person", "rule_based", "rule_based", "expert"], "seed": 42,
     "rules": {every A0 key}, "episode": "match", "dealer": 3,
     "decks": [[52 card indices], ...], "actions": [53, 55, 14, ...],
     "result": {"scores": [3, 7], "winner": 1}}

(and ``"start_scores": [team0, team1]`` when the match did not start at 0 to 0). ``decks``
holds every deck the match dealt, in order (a redeal is a deal), ``dealer`` the first dealer,
``actions`` every decision in order (0..51 a card, 52 STAND, 53 BEG, 54 GIVE_ONE, 55 RUN). That
is all the engine needs: :func:`replay` builds an :class:`allfours_env.engine.Game` from the
rules, the decks, the dealer and the starting scores, applies every action (the engine checks
each one) and compares the end with ``result``. A log that does not replay (an illegal action, a
missing or unused deck, a result that differs, a field of the wrong type) is a
:class:`MatchLogError` that says what was wrong, so a tampered log is refused, never half-shown.
``seed`` is a record of what the match was dealt from (0..``MAX_SEED``, the 128 bits the web
page draws), not read by the replay. A reader that holds logs for others (the web page) passes
``max_actions`` to :func:`loads`: a longer log is refused before it is replayed, so its memory
and time stay bounded.

Writers: :class:`Recorder` is an ``on_event`` hook of :class:`allfours_env.match.Match` that keeps each
deal's deck and every action as the match is played (``python -m agents.play --log``, ``python -m
eval --logs``, the web server). Readers: :func:`loads` / :func:`read`; :class:`Replay` gives the
game at any step, forwards or backwards (the web page's replay).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import secrets
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env.cards import N_SEATS
from allfours_env.engine import (
    BEG,
    BEGGED,
    DEAL,
    EPISODES,
    GAVE_ONE,
    GIVE_ONE,
    N_ACTIONS,
    PLAYED,
    RAN,
    RUN,
    STAND,
    STOOD,
    Event,
    Game,
    IllegalActionError,
    action_text,
    check_deck,
)  # fmt: skip
from allfours_env.rules import Rules

from ..shared import atomic_file, regular_file

FORMAT = "allfours-match-log"
VERSION = 1
MAX_LOG_BYTES = 8 * 1024 * 1024  # a match to 14 is about 3 KB; far longer ones still fit
MAX_SEED = 2**128 - 1  # the largest seed a log records (numpy takes any size; the web page draws 128 bits)
# The event each decision leaves in the engine's log (a card leaves a PLAYED event).
ACTION_OF_EVENT = {STOOD: STAND, BEGGED: BEG, GAVE_ONE: GIVE_ONE, RAN: RUN}
FIELDS = (
    "format", "version", "source", "players", "seed", "rules", "episode", "dealer", "start_scores", "decks", "actions",
    "result",
)  # fmt: skip
REQUIRED = ("format", "version", "rules", "dealer", "decks", "actions", "result")

EventHook = Callable[[Event], None]


def draw_seed() -> int:
    """A new match's seed: 128 random bits from the operating system (too many to try them all)."""
    return secrets.randbits(MAX_SEED.bit_length())


def side_seeds(seed: int, count: int) -> list[int]:
    """``count`` seeds of independent streams spawned from ``seed`` (numpy's SeedSequence), for the
    bots (and the web page's hinter): none is the game's stream or gives the seed back."""
    children = np.random.SeedSequence(seed).spawn(count)
    return [int.from_bytes(child.generate_state(4).tobytes(), "little") for child in children]


class MatchLogError(ValueError):
    """A match log that cannot be read or does not replay; the message says what is wrong."""


@dataclass(frozen=True)
class MatchLog:
    """One match as logged; see the module docstring and ``docs/match_log.md``."""

    rules: Rules
    dealer: int
    decks: tuple[tuple[int, ...], ...]
    actions: tuple[int, ...]
    scores: tuple[int, int] = (0, 0)  # at the end of the log
    winner: int = -1  # team that won, -1 if the log stops before the end
    players: tuple[str, ...] = ("", "", "", "")
    episode: str = "match"
    seed: int | None = None
    source: str = ""
    start_scores: tuple[int, int] = (0, 0)  # before the first deal

    def to_json(self) -> dict[str, Any]:
        """The log as JSON-ready data (:meth:`from_json` reads it back, equal). ``start_scores`` is
        written only when the match did not start at 0 to 0, so such logs read as they always have."""
        start = {"start_scores": list(self.start_scores)} if self.start_scores != (0, 0) else {}
        return {
            "format": FORMAT, "version": VERSION, "source": self.source, "players": list(self.players),
            "seed": self.seed, "rules": dataclasses.asdict(self.rules), "episode": self.episode,
            "dealer": self.dealer, **start, "decks": [list(d) for d in self.decks], "actions": list(self.actions),
            "result": {"scores": list(self.scores), "winner": self.winner},
        }  # fmt: skip

    def dumps(self) -> str:
        """JSON text: one line per deck, the rest compact (small, and readable in a diff)."""
        data = self.to_json()
        decks = data.pop("decks")
        head = json.dumps(data, separators=(", ", ": "))[:-1]
        deck_lines = ",\n  ".join(json.dumps(d, separators=(",", ":")) for d in decks)
        return f'{head}, "decks": [\n  {deck_lines}\n]}}\n'

    @classmethod
    def from_json(cls, data: Any) -> MatchLog:
        """Check the structure and types of ``data`` (not the play: :func:`replay` does that)."""
        if not isinstance(data, dict):
            raise MatchLogError(f"a match log is a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise MatchLogError(f"not a match log: 'format' must be {FORMAT!r}, got {_short(data.get('format'))}")
        if data.get("version") != VERSION:
            raise MatchLogError(f"match log version {_short(data.get('version'))} is not read here; this version reads {VERSION}")
        missing = [k for k in REQUIRED if k not in data]
        unknown = sorted(k for k in data if k not in FIELDS)
        if missing or unknown:
            what = [f"missing {', '.join(missing)}"] if missing else []
            what += [f"unknown {', '.join(map(repr, unknown[:5]))}"] if unknown else []
            raise MatchLogError(f"match log fields: {'; '.join(what)} (fields: {', '.join(FIELDS)})")
        rules_data = data["rules"]
        if not isinstance(rules_data, dict):
            raise MatchLogError("'rules' must be an object of rule keys (docs/rules.md table A0)")
        try:
            rules = Rules.from_kwargs(**rules_data)
        except ValueError as error:
            raise MatchLogError(f"'rules': {error}") from None
        episode = data.get("episode", "match")
        if episode not in EPISODES:
            raise MatchLogError(f"'episode' must be one of {EPISODES}, got {_short(episode)}")
        dealer = data["dealer"]
        if not _is_int(dealer) or not 0 <= dealer < N_SEATS:
            raise MatchLogError(f"'dealer' (the first dealer) must be a seat 0..3, got {_short(dealer)}")
        start_scores = data.get("start_scores", [0, 0])
        if not (isinstance(start_scores, list) and len(start_scores) == 2 and all(_is_int(s) for s in start_scores)):
            what = "the scores before the first deal"
            raise MatchLogError(f"'start_scores' must be [team0, team1], {what}, got {_short(start_scores)}")
        actions = data["actions"]
        if not isinstance(actions, list):
            raise MatchLogError("'actions' must be a list of action ids 0..55")
        bad = next((i for i, a in enumerate(actions) if not _is_int(a) or not 0 <= a < N_ACTIONS), None)
        if bad is not None:
            raise MatchLogError(f"'actions'[{bad}] is {_short(actions[bad])}; actions are ints 0..55")
        decks = data["decks"]
        if not isinstance(decks, list) or not decks:
            raise MatchLogError("'decks' must be a list of the decks the match dealt (at least one)")
        if len(decks) > len(actions) + 1:  # a deal after the first begins with an action, and a step deals once
            raise MatchLogError(f"the log holds {len(decks):,} decks, more than {len(actions):,} actions can deal")
        try:
            checked = tuple(tuple(check_deck(d, f"'decks'[{i}]")) for i, d in enumerate(decks))
        except ValueError as error:
            raise MatchLogError(str(error)) from None
        result = data["result"]
        scores = result.get("scores") if isinstance(result, dict) else None
        winner = result.get("winner") if isinstance(result, dict) else None
        if not (isinstance(scores, list) and len(scores) == 2 and all(_is_int(s) and s >= 0 for s in scores)):
            raise MatchLogError("'result' must be {\"scores\": [team0, team1], \"winner\": 0, 1 or -1}")
        if not _is_int(winner) or winner not in (-1, 0, 1):
            raise MatchLogError(f"'result' winner must be 0, 1 or -1 (not finished), got {_short(winner)}")
        players = data.get("players", [""] * N_SEATS)
        if not (isinstance(players, list) and len(players) == N_SEATS and all(isinstance(p, str) for p in players)):
            raise MatchLogError("'players' must be a list of four names, seat 0 first")
        seed = data.get("seed")
        if seed is not None and not (_is_int(seed) and 0 <= seed <= MAX_SEED):
            raise MatchLogError(f"'seed' must be null or an integer 0..2**128-1, got {_short(seed)}")
        source = data.get("source", "")
        if not isinstance(source, str):
            raise MatchLogError("'source' must be text")
        return cls(
            rules, dealer, checked, tuple(actions), (scores[0], scores[1]), winner,
            tuple(p[:200] for p in players), episode, seed, source[:200], (start_scores[0], start_scores[1]),
        )  # fmt: skip


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


class Recorder:
    """An ``on_event`` hook for :class:`allfours_env.match.Match` that keeps what a log needs.

    Build it on the game before the Match (which reports the first deal's events at once), pass
    it as ``on_event``; ``then`` is another hook it forwards every event to (a narrator). Each
    DEAL event takes the game's deck at that moment: the Match reports events right after each
    step, and a step deals at most once.
    """

    def __init__(self, game: Game, then: EventHook | None = None) -> None:
        self.game = game
        self.then = then
        self.decks: list[tuple[int, ...]] = []
        self.actions: list[int] = []
        self.dealer = -1

    def __call__(self, event: Event) -> None:
        kind = event.kind
        if kind == PLAYED:
            self.actions.append(event.card)
        elif kind in ACTION_OF_EVENT:
            self.actions.append(ACTION_OF_EVENT[kind])
        elif kind == DEAL:
            if event.deal != self.game.deal_number or event.deal != len(self.decks) + 1:
                raise RuntimeError("a Recorder must hear each event as it happens (use it as the Match's on_event)")
            if self.dealer < 0:
                self.dealer = event.seat
            self.decks.append(tuple(int(c) for c in self.game.deck))
        if self.then is not None:
            self.then(event)

    def log(self, players: Sequence[str] = ("",) * N_SEATS, seed: int | None = None, source: str = "") -> MatchLog:
        """The log of the match so far."""
        game = self.game
        return MatchLog(
            game.rules, self.dealer, tuple(self.decks), tuple(self.actions), (game.scores[0], game.scores[1]),
            game.winner, tuple(players), game.episode, seed, source, game.start_scores,
        )  # fmt: skip


def start(log: MatchLog) -> Game:
    """The game of ``log`` before its first action; a MatchLogError if it cannot start so."""
    decks = [list(d) for d in log.decks]
    try:
        return Game(log.rules, None, decks=decks, dealer=log.dealer, scores=log.start_scores, episode=log.episode)
    except ValueError as error:  # starting scores at or past the target
        raise MatchLogError(f"'start_scores': {error}") from None


def apply(game: Game, log: MatchLog, index: int) -> None:
    """Apply ``log.actions[index]`` to ``game``; a MatchLogError says why it cannot be."""
    action = log.actions[index]
    if game.is_over:
        raise MatchLogError(f"the match is over after {index} actions, but the log has {len(log.actions)}")
    try:
        game.step(action)
    except IllegalActionError as error:
        raise MatchLogError(f"action {index} ({action_text(action)}) does not replay: {error}") from None
    except ValueError as error:  # the decks ran out
        raise MatchLogError(
            f"after action {index} the match deals again, but the log holds only {len(log.decks)} decks ({error})"
        ) from None


def replay(log: MatchLog) -> Game:
    """Play the whole log on the engine and check its end; the game, or a MatchLogError."""
    game = start(log)
    for index in range(len(log.actions)):
        apply(game, log, index)
    if game.deal_number != len(log.decks):
        raise MatchLogError(f"the log holds {len(log.decks)} decks but its match dealt {game.deal_number}")
    if (game.scores[0], game.scores[1]) != log.scores or game.winner != log.winner:
        raise MatchLogError(
            f"the log says the result is scores {list(log.scores)}, winner {log.winner}, but replaying it gives "
            f"scores {game.scores}, winner {game.winner}"
        )
    return game


SNAPSHOT_EVERY = 500  # actions between the games a Replay keeps (a jump replays at most this many, about 4 ms)


class Replay:
    """A checked log, and the game at any step (0 = before the first action), forwards or back.

    It keeps a copy of the game every ``SNAPSHOT_EVERY`` actions as it passes them, so a jump
    (back, or far forwards) starts from the nearest kept game at or before the step rather than
    from the start (10,000 actions took about 100 ms to replay). The games share what does not
    change: the events (the checked replay's, each game holding the first so many) and the log's
    decks, given to the engine at the start and only read by it (a kept game is then about 2 KB)."""

    def __init__(self, log: MatchLog) -> None:
        self._events = replay(log).events  # the whole log is checked once: every position is then a legal one
        self.log = log
        self._game = start(log)
        self._step = 0
        self._kept: dict[int, tuple[Game, int]] = {0: _without_events(self._game)}

    @property
    def steps(self) -> int:
        return len(self.log.actions)

    def game_at(self, step: int) -> Game:
        """The game after ``step`` actions (0..steps); a ValueError outside that range."""
        if not _is_int(step) or not 0 <= step <= self.steps:
            raise ValueError(f"step must be 0..{self.steps}, got {step!r}")
        nearest = step - step % SNAPSHOT_EVERY
        while nearest not in self._kept:  # (every multiple passed is kept, from 0 on)
            nearest -= SNAPSHOT_EVERY
        if step < self._step or nearest > self._step:
            kept, n_events = self._kept[nearest]
            self._game, self._step = copy.deepcopy(kept), nearest
            self._game.events = self._events[:n_events]
        while self._step < step:
            apply(self._game, self.log, self._step)
            self._step += 1
            if self._step % SNAPSHOT_EVERY == 0 and self._step not in self._kept:
                self._kept[self._step] = _without_events(self._game)
        self._game.events = self._events[: len(self._game.events)]  # (the same events: shared, not held twice)
        return self._game


def _without_events(game: Game) -> tuple[Game, int]:
    """A copy of ``game`` with an empty event list and the same given decks, and the number of
    events ``game`` holds."""
    events, game.events = game.events, []
    decks = game._core._given  # (a replay's game never gives a deck after its start: shared, not copied)
    try:
        return copy.deepcopy(game, {id(decks): decks}), len(events)
    finally:
        game.events = events


def loads(text: str | bytes, max_actions: int | None = None) -> MatchLog:
    """Read a log from JSON text and check it by replaying it; a MatchLogError says what is wrong.
    ``max_actions``: a log of more actions is refused before the replay (None: no limit but the size)."""
    if len(text) > MAX_LOG_BYTES:
        raise MatchLogError(f"a match log is at most {MAX_LOG_BYTES:,} bytes, got {len(text):,}")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MatchLogError(f"a match log is JSON text: {error}") from None
    log = MatchLog.from_json(data)
    if max_actions is not None and len(log.actions) > max_actions:
        raise MatchLogError(f"the log holds {len(log.actions):,} actions; at most {max_actions:,} are read here")
    replay(log)
    return log


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a match log")


def read(path: str | Path, max_actions: int | None = None) -> MatchLog:
    """The checked log in the file ``path`` (:func:`loads`), or a MatchLogError naming it; an OSError
    if it cannot be read or is not a regular file (a FIFO or device is refused before a byte is read:
    it could hang the read or never end it, :mod:`agents.shared.regular_file`)."""
    data = regular_file.read_bytes(path, MAX_LOG_BYTES)
    if len(data) > MAX_LOG_BYTES:
        raise MatchLogError(f"{path} holds more than a match log may be ({MAX_LOG_BYTES:,} bytes)")
    try:
        return loads(data, max_actions)
    except MatchLogError as error:
        raise MatchLogError(f"{path} is not a match log that replays: {error}") from None


def write(log: MatchLog, path: str | Path) -> None:
    """Write ``log`` to ``path`` through a temporary file, so a failure leaves no half-written file."""
    atomic_file.write_text(path, log.dumps())


def check_log_path(text: str, option: str = "--log", suffix: str = ".json") -> Path:
    """A path a log (or another ``suffix`` file) can be written to (its folder exists and is
    writable, and it is a regular file or none yet), or a ValueError saying why."""
    path = Path(text)
    if path.is_dir():
        raise ValueError(f"{option}: {text!r} is a folder; name a {suffix} file")
    try:
        regular_file.check_target(path)  # a device or FIFO would be replaced by the file, a link too
    except regular_file.NotRegularFile as err:
        raise ValueError(f"{option}: {err}; name a {suffix} file to write") from None
    if not path.parent.is_dir():
        raise ValueError(f"{option}: the folder {str(path.parent)!r} does not exist")
    try:
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:
        raise ValueError(f"{option}: cannot write in the folder {str(path.parent)!r}: {err.strerror or err}") from None
    return path
