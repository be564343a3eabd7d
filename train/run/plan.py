"""Where a training run is and how long the rest takes; what a stopped run kept.

A run is a list of stages (the warm start, each round of expert iteration, PPO), each an ordered
list of pieces of work in units of one kind: ``recording`` (decisions), ``imitation fit``
(samples), ``labelling`` (labels), ``fit`` (samples), ``evaluation against <bot>`` (boards),
``PPO`` (steps); a resumed run's plan leaves out what its folder holds. The progress phases name
their kind (``work``): the plan follows them and times each kind. The whole run's time left is the
current phase's rest, then every later piece at its kind's rate (PPO's counts the evaluations and
checkpoints between its updates): this run's, else earlier runs' (:mod:`train.run.rates`), else a
calibration's (:mod:`train.run.calibration`); a kind none has timed is named, not guessed. Its band
is :data:`BANDS` by basis, weighted by each one's share (the default config's first run on a shared
2-core machine, its 5th and 13th lines, each one line cut here)::

    [train] [stage 1/5: warm start] recording expert: 0/200,000 decisions (0%)  0s elapsed, starting;
    run: 5s elapsed, 1h27m left ±50% (recording, imitation fit, labelling, fit, evaluation, PPO from a 3s calibration)
    [train] [stage 2/5: round 1 of 3] labelling: 3,665/150,000 labels (2%)  101 labels/s  36s elapsed,
    24m04s left; run: 1m16s elapsed, 1h45m left ±34% (fit, evaluation, PPO from a 3s calibration)

:func:`kept` says what a stopped run's folder holds for ``--resume`` (the last line of a stop).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from train.config import TrainConfig
from train.rounds import expert_iteration as ei
from train.rounds.label_set import LabelSettings, rows_on_disk
from train.rounds.labels import PART_ROWS, labelling_work
from train.run.rates import KeptRates
from train.run_folder.checkpoints import candidates, checkpoint_step
from train.run_folder.progress import Phase, duration


THIS_RUN, EARLIER, CALIBRATION, UNTIMED = "this run", "earlier runs", "calibration", ""
# How far off a whole-run time left may be, by what its rates come from: a judgement, not a measured
# interval. On a machine shared with other work one benchmark's speed has varied 2x within a day
# (README's training throughput row), so this run's own rates move with the load; earlier runs' were
# measured under another load; a calibration's slices last a second or less, with their start-up
# costs and their luck (the default config's, against its run's rates: train/run/calibration.py).
BANDS = {THIS_RUN: 0.2, EARLIER: 0.3, CALIBRATION: 0.5}


@dataclass
class Work:
    kind: str  # what its rate is measured in
    amount: int  # units left to do when the plan was made


@dataclass
class Stage:
    name: str
    work: list[Work]  # in the order the run does them; none: done before this process


@dataclass
class RunPlan:
    stages: list[Stage]
    elapsed: Callable[[], float]  # the run's seconds so far
    deadline: float = 0.0  # the run's seconds at the most (max_minutes; 0: none)
    kept: KeptRates | None = None  # earlier runs' rates on this machine, and where this one's are kept
    calibrated: dict[str, float] = field(default_factory=dict)  # kind -> rate of its slice (train.run.calibration)
    calibration_seconds: float = 0.0
    _at: int = -1  # the piece running (or last run), in the order of all pieces
    _timed: dict[str, list[float]] = field(default_factory=dict)  # kind -> [units, seconds] of closed phases

    def __post_init__(self) -> None:
        self._pieces = [(index, work) for index, stage in enumerate(self.stages) for work in stage.work]

    def opened(self, kind: str) -> None:
        """A phase of ``kind`` opened: the next piece of that kind is running (a phase a piece)."""
        for at in range(self._at + 1, len(self._pieces)):
            if self._pieces[at][1].kind == kind:
                self._at = at
                return

    def closed(self, kind: str, units: int, seconds: float) -> None:
        timed = self._timed.setdefault(kind, [0.0, 0.0])
        timed[0] += units
        timed[1] += seconds
        if self.kept:
            self.kept.keep(kind, *timed)

    def allowed(self) -> float:
        """The run's seconds left before max_minutes ends it (inf: no limit)."""
        return max(self.deadline - self.elapsed(), 0.0) if self.deadline else math.inf

    def where(self, what: str) -> str:
        """The stage of the running piece, for a line about ``what`` (its name unless ``what`` starts with it)."""
        if self._at < 0:
            return ""
        index = self._pieces[self._at][0]
        name = self.stages[index].name
        return f"[stage {index + 1}/{len(self.stages)}{'' if what.startswith(name) else ': ' + name}] "

    def untimed(self) -> list[str]:
        """The kinds of work still to do that no run has timed (for a calibration)."""
        kinds = [work.kind for at, (_, work) in enumerate(self._pieces) if at >= self._at and work.amount > 0]
        return [kind for kind in dict.fromkeys(kinds) if self._rate(kind)[0] in (UNTIMED, CALIBRATION)]

    def left(self, phases: list[Phase], now: float) -> str:
        """The run's time so far and left (of ``phases``, those open at ``now``): the running piece's rest, then
        every later piece, its band and the bases other than this run's own rates."""
        current = {phase.work: phase for phase in phases if phase.work}
        seconds, spread = 0.0, 0.0
        named: dict[str, dict[str, None]] = {EARLIER: {}, CALIBRATION: {}, UNTIMED: {}}  # basis -> kinds, in order
        for at, (_, work) in enumerate(self._pieces):
            phase = current.get(work.kind) if at == self._at else None
            rest = phase.total - phase.done if phase else work.amount
            if at < self._at or (at == self._at and not phase) or rest <= 0:  # (done: its phase has closed)
                continue
            basis, rate = self._rate(work.kind, current.get(work.kind), now)
            if basis != THIS_RUN:
                named[basis][work.kind.split(" against ")[0]] = None
            if rate:
                seconds += rest / rate
                spread += rest / rate * BANDS[basis]
        band = spread / seconds if seconds else 0.0
        seconds = min(seconds, self.allowed())  # max_minutes: the run ends by then whatever its steps
        calibration = f"from a {duration(self.calibration_seconds)} calibration"
        texts = {EARLIER: "at earlier runs' rates", CALIBRATION: calibration}
        bases = [f"{', '.join(named[basis])} {text}" for basis, text in texts.items() if named[basis]]
        known = f"{duration(seconds)} left" + (f" ±{band:.0%}" if seconds else "")
        known += f" ({'; '.join(bases)})" if bases else ""
        text = f"run: {duration(self.elapsed())} elapsed, "
        if not named[UNTIMED]:
            return text + known
        return text + (f"{known} + " if seconds else "left: ") + f"{', '.join(named[UNTIMED])} (not timed yet)"

    def _rate(self, kind: str, phase: Phase | None = None, now: float = 0.0) -> tuple[str, float]:
        """The rate of ``kind`` and its basis: this run's (closed phases and ``phase``, open), else earlier runs',
        else the calibration's."""
        units, seconds = self._timed.get(kind, (0.0, 0.0))
        if phase:
            units, seconds = units + phase.done - phase.first, seconds + now - phase.started
        if units > 0 and seconds > 0:
            return THIS_RUN, units / seconds
        if self.kept and self.kept.rate(kind) > 0:
            return EARLIER, self.kept.rate(kind)
        if self.calibrated.get(kind, 0.0) > 0:
            return CALIBRATION, self.calibrated[kind]
        return UNTIMED, 0.0


def plan_run(config: TrainConfig, resumed: bool, steps: int, elapsed: Callable[[], float]) -> RunPlan:
    """The plan of the run from where its folder is: ``resumed`` (the warm start done), at PPO
    step ``steps`` (past 0: every round done); ``elapsed()``: the run's seconds so far."""
    stages = []
    if config.imitate:
        samples = config.imitation_epochs * config.imitation_steps
        work = [Work("recording", config.imitation_steps), Work("imitation fit", samples)]
        stages.append(Stage("warm start", [] if resumed else work))
    rounds = len(config.rounds)
    for round_ in range(1, rounds + 1):
        stages.append(Stage(f"round {round_} of {rounds}", [] if steps else _round_work(config, round_)))
    stages.append(Stage("PPO", [Work("PPO", max(config.total_steps - steps, 0))]))
    return RunPlan(stages, elapsed, 60 * config.max_minutes, KeptRates(Path(config.output_dir), config.to_dict()))


def _round_work(config: TrainConfig, round_: int) -> list[Work]:
    """What round ``round_`` has left to do, from the run folder (expert_iteration.run_rounds)."""
    evaluations = [Work(f"evaluation against {bot}", boards) for (_, bot), boards in ei.evaluations(config).items()]
    if ei.measured(config, ei.read_rounds(config.run_dir), round_):
        evaluations = []
    if ei.student_path(config.run_dir, round_).exists():
        return evaluations
    sets = ei.label_sets(config, round_)
    labelling = [Work(labelling_work(s), s.count - _labels_kept(folder, s)) for folder, s in sets]
    return [*labelling, Work("fit", ei.fit_samples(config, round_)), *evaluations]


def _labels_kept(folder: Path, settings: LabelSettings) -> int:
    return rows_on_disk(folder, settings, PART_ROWS) if folder.is_dir() else 0


def start_line(config: TrainConfig, source: str, resumed: bool) -> str:
    """The line that opens a run: its folder, config and stages (and, resumed, what it goes on from)."""
    stages = []
    if config.imitate:
        stages.append(f"warm start ({config.imitate}, {config.imitation_steps:,} decisions)")
    if config.distil_labels:
        counts = " + ".join(f"{count:,}" for count in config.distil_labels)
        rounds = len(config.distil_labels)
        step = f" and a last step ({config.step_labels:,} labels)" if config.step_labels else ""
        stages.append(f"{rounds} round{'s' * (rounds > 1)} of expert iteration ({counts} labels){step}")
    stages.append(
        f"PPO to {config.total_steps:,} steps" + (f" or {config.max_minutes:g} minutes" if config.max_minutes else "")
    )
    text = f"run {config.run_dir}{f' (config {source})' if source else ''}: {', '.join(stages)}"
    return text + (f"; going on from {kept(config)}" if resumed else "")


def kept(config: TrainConfig) -> str:
    """What the run folder holds for ``--resume``: its newest checkpoint, the rounds finished,
    the labels of the round under way ("nothing" without a checkpoint: the run starts again)."""
    folders = candidates(config.run_dir)
    if not folders:
        return "nothing"
    step = checkpoint_step(folders[0])
    rounds = len(config.rounds)
    done = next((k - 1 for k in range(1, rounds + 1) if not ei.student_path(config.run_dir, k).exists()), rounds)
    pieces = [] if step else ["the warm start" if config.imitate else "the starting network"]
    if done:
        pieces.append("round 1's student" if done == 1 else f"rounds 1-{done}'s students")
    if not step and done < rounds:
        labels = sum(_labels_kept(folder, s) for folder, s in ei.label_sets(config, done + 1))
        if labels:
            total = config.rounds[done].labels
            pieces.append(f"round {done + 1}'s {labels:,} of {total:,} labels")
    if step:
        pieces.append(f"PPO checkpoint {folders[0].name} (step {step:,})")
    text = ", ".join(pieces[:-1]) + (" and " if len(pieces) > 1 else "") + pieces[-1]
    missing = ["no round finished yet"] * (rounds > 0 and not done) + ["no PPO checkpoint yet"] * (not step)
    return text + (f"; {', '.join(missing)}" if missing else "")
