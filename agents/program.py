"""Bots outside the process: ``exec:COMMAND`` runs a program and asks it each decision, one JSON line each way.

``agents.make("exec:python3 my_bot.py")`` (or ``"exec[timeout=60]:./my_bot"``) gives a bot that
writes every decision to the program's standard input as one JSON line (the text view of
:mod:`allfours_env.text_view`, the legal moves as ids and text, the raw observation and mask)
and reads its answer, one JSON line on its standard output: ``{"action": ID}`` or
``{"move": TEXT}``. The protocol is documented in docs/outside_bots.md.

The command is split as a POSIX shell would split it (no shell runs it) and started on the
first decision; every bot of the same command in one process shares that one program, each
bot telling its decisions apart by its ``player`` number. A program that ends, answers nothing
within the timeout (default 10 s a decision), or answers what is not a legal move is stopped,
and the bot raises :class:`allfours_env.match.BotFailure` naming the decision (the loop that
seated the bot adds the seat, and an evaluation the board). The page of ``python -m agents.web``
never seats such a bot: it seats only registered names and the policy files of its command line.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import time

import numpy as np

from allfours_env.actions import N_ACTIONS, action_text
from allfours_env.match import BotFailure
from allfours_env.observation import decode
from allfours_env.text_view import observation_text, parse_move

from .base import Observation, parse_options

PREFIX = "exec"
PROTOCOL = 1  # the version of the messages, sent in each; docs/outside_bots.md
DEFAULT_TIMEOUT = 10.0  # seconds a decision (the first includes the program's start)
MAX_TIMEOUT = 3600.0
MAX_ANSWER_BYTES = 1 << 16  # an answer is a short line: more without a newline is not one
FORM = "exec:COMMAND or exec[timeout=SECONDS]:COMMAND"
_SPEC = re.compile(r"exec(?:\[(?P<options>[^\]]*)\])?:(?P<command>.*)", re.DOTALL)
_players = itertools.count(1)


def is_program_spec(spec: str) -> bool:
    """Whether a bot spec names an outside program (``exec:...`` or ``exec[...]:...``)."""
    return spec.startswith((PREFIX + ":", PREFIX + "["))


def parse_program_spec(spec: str) -> tuple[list[str], float]:
    """The command line and the timeout of a program spec; a ValueError saying what is wrong."""
    found = _SPEC.fullmatch(spec)
    if found is None:
        raise ValueError(f"a program bot is written {FORM}, got {spec[:80]!r}")
    options = parse_options(spec, found["options"]) if found["options"] else {}
    unknown = sorted(set(options) - {"timeout"})
    if unknown:
        raise ValueError(f"program bot {spec[:80]!r}: unknown option {', '.join(unknown)}; the one option is timeout")
    timeout = options.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise ValueError(f"program bot timeout is seconds, more than 0 and at most {MAX_TIMEOUT:g}, got {timeout!r}")
    try:
        argv = shlex.split(found["command"])
    except ValueError as error:
        raise ValueError(f"program bot {spec[:80]!r}: cannot split its command ({error})") from None
    if not argv:
        raise ValueError(f"program bot {spec[:80]!r} names no command; write {FORM}")
    if shutil.which(argv[0]) is None:
        raise ValueError(f"program bot {spec[:80]!r}: {argv[0]!r} is not an executable file nor a program on PATH")
    return argv, float(timeout)


class _NoAnswer(Exception):
    """The program gave no usable answer (the reason is the message); it has been stopped."""


class _Program:
    """One running program: a line written, a line read back within a timeout."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, start_new_session=True,
        )  # its standard error is ours; its own session: a Ctrl-C reaches this process, which ends it
        self.owner = os.getpid()
        self.pending = b""  # read past the last answer's newline

    def ask(self, line: bytes, timeout: float) -> bytes:
        """The program's answer line to ``line`` (a _NoAnswer if it ends or does not answer in time)."""
        try:
            written = 0
            while written < len(line):  # (a raw pipe may take part of it)
                written += self.process.stdin.write(line[written:])
        except OSError:  # a broken pipe: it ended
            raise _NoAnswer(self._ended()) from None
        deadline = time.monotonic() + timeout
        out = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise _NoAnswer(f"no answer within {timeout:g} s (the program was stopped)")
            if select.select([out], [], [], left)[0]:
                chunk = os.read(out, 1 << 16)
                if not chunk:
                    raise _NoAnswer(self._ended())
                self.pending += chunk
                if len(self.pending) > MAX_ANSWER_BYTES:
                    raise _NoAnswer(f"answered more than {MAX_ANSWER_BYTES:,} bytes without a newline")
        answer, _, self.pending = self.pending.partition(b"\n")
        return answer

    def _ended(self) -> str:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.stop()
            return "the program closed its output without answering (it was stopped)"
        return f"the program ended (exit code {code}) without answering"

    def stop(self) -> None:
        """End the program: its input closed, then killed if it has not ended a second later."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=1.0)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


_running: dict[tuple[str, ...], _Program] = {}  # this process's programs, by command line


def _program(argv: list[str]) -> _Program:
    key = tuple(argv)
    program = _running.get(key)
    if program is None or program.owner != os.getpid() or program.process.poll() is not None:
        program = _running[key] = _Program(argv)  # (a forked worker starts its own)
    return program


@atexit.register
def _stop_all() -> None:
    for program in _running.values():
        if program.owner == os.getpid():
            program.stop()


class ProgramBot:
    """A seat played by an outside program (see the module docstring)."""

    def __init__(self, spec: str) -> None:
        self.argv, self.timeout = parse_program_spec(spec)
        self.name = spec
        self.player = next(_players)  # tells the program's players apart
        self.match = 0
        self.decision = 0
        self.seed: int | None = None

    def reset(self, seed: int | None = None) -> None:
        self.match += 1
        self.decision = 0
        self.seed = None if seed is None else int(seed)  # (a numpy int is not JSON)

    def act(self, observation: Observation) -> int:
        self.decision += 1
        mask = observation["action_mask"]
        legal = np.flatnonzero(mask).tolist()
        message = {
            "type": "act", "protocol": PROTOCOL, "player": self.player, "match": self.match, "decision": self.decision,
            "seed": self.seed, "text": observation_text(observation),
            "legal": [{"id": action, "move": action_text(action)} for action in legal],
            "observation": observation["observation"].tolist(), "action_mask": mask.tolist(),
        }  # fmt: skip
        program = _program(self.argv)
        try:
            line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
            return self._action(program.ask(line, self.timeout), legal)
        except _NoAnswer as error:
            program.stop()
            _running.pop(tuple(self.argv), None)
            where = f"match {self.match}, decision {self.decision}" if self.match else f"decision {self.decision}"
            raise BotFailure(self.name, f"{where} ({decode(observation).phase})", str(error)) from None

    @staticmethod
    def _action(line: bytes, legal: list[int]) -> int:
        """The action id of an answer line; a _NoAnswer saying what is wrong with it."""
        shown = line[:80].decode(errors="replace")
        form = 'answer one JSON line, {"action": ID} or {"move": TEXT}'
        try:
            answer = json.loads(line)
        except ValueError:
            raise _NoAnswer(f"answered {shown!r}, not JSON; {form}") from None
        if not isinstance(answer, dict) or not ("action" in answer or "move" in answer):
            raise _NoAnswer(f"answered {shown}; {form}")
        move = answer.get("move")
        if "action" in answer:
            action = answer["action"]
            if isinstance(action, bool) or not isinstance(action, int) or not 0 <= action < N_ACTIONS:
                raise _NoAnswer(f"answered action {action!r}, not an action id 0..{N_ACTIONS - 1}")
            move = action_text(action)
        try:
            return parse_move(move, legal)
        except ValueError as error:
            raise _NoAnswer(f"answered {shown}: {error}") from None
