"""Expert iteration, between the warm start and PPO: the actor distilled from search, round by round.

Each round of ``distil_labels`` (docs/expert_iteration.md has the measurements behind the choices):

1. **Label** (:mod:`train.rounds.labels`): decisions drawn from matches, each searched by ``search``
   (``label_worlds`` worlds, ``label_confirm`` in all before it leaves the kept choice; with
   ``label_search`` its keep and rollout options, where ``{student}`` is the previous
   round's student and round 1's is the start, ``students/round-0.npz``: the teacher improves
   with its student), every legal action's value kept. The first round's positions come from
   ``expert`` playing itself (from the start, round 0's student, where ``init_policy`` gives one);
   each later round's from the previous round's student (DAgger: the positions its own play reaches),
   split evenly between ``dagger_opponents`` (``self``: the student at every seat; a bot name: the
   student against that bot).
2. **Fit** (:func:`train.rounds.distil.fit`): the warm start's actor, fitted to every label made so far
   (``distil_from: start``), or the previous round's student fitted to its round's labels
   (``distil_from: previous``: each round a step on from the last, as its teacher is), by logit
   matching (``distil_loss: logits``: each legal action's logit regressed on its searched value
   above the legal mean; on labels that keep the expert's choice it averages their noise where
   cross-entropy toward search's choice copies the expert) or by cross-entropy toward the action
   search played (``action``), 5% held out to report the regret. The student is
   ``students/round-K.npz`` (K = 1, 2, ...), a policy file. A resumed run reads it as the learner's
   kind of network only (:func:`read_student`); a damaged one is fitted again, the same.
3. **Evaluate** the student against each bot of ``distil_eval`` and the round's teacher (its
   labelling search, :func:`teacher_spec`) against each of ``teacher_eval`` (duplicate, its number
   of board pairs; ``search_v1``, the frozen reference, measures both on one scale):
   ``rounds.csv`` (a row per player and bot), ``expert_iteration.png`` and the
   ``expert_iteration/*`` tensorboard tags (``win_rate_vs_<bot>``, ``win_rate_low_vs_<bot>``,
   ``win_rate_high_vs_<bot>``, the teacher's with ``teacher_`` before them, at step K).

After them, with ``step_labels``, **the last step** (docs/expert_iteration.md, "The default run's
last step"): one round more on the last student's own play at every seat, searched with that
student as search's prior and its rollouts (the play the student meets), and that student fitted
to it by the advantage loss (``step_tau``) from itself averaged over ``step_prior_suits`` suit
relabellings: the step that made ``student_v4`` from ``student_v3``.

PPO then starts from the last student's actor. Everything is kept in the run folder (label sets
under ``labels/``, :mod:`train.rounds.label_set`), so a stopped run resumes where it was: a round whose
student exists is done, a label set goes on from its finished shards and parts, and the same
seeds make the same labels and the same fit.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from torch.utils.tensorboard import SummaryWriter

from agents.policy import Weights, load_weights, save_weights
from agents.shared.atomic_file import write_bytes
from eval import evaluate

from train.config import MAX_SEED, SELF, STUDENT, TrainConfig, fitted_labels, label_search_options
from train.rounds.distil import Actor, averaged_prior, fit, read_labels
from train.rounds.label_set import FILE_SETTINGS, META_FILE, LabelSettings, read_meta, write_settings
from train.rounds.labels import DEFAULT_TABLES, make_labels
from train.run_folder import curve
from train.run_folder.progress import Progress, duration
from train.run_folder.state_checks import weights_like
from train.run_folder.state_file import regular_file

FIRST_PLAYER = "expert"  # whose play reaches the first round's positions
SEARCH_MARGIN = 0.01  # search's default margin
SHARD_ROWS = 2000
HOLDOUT = 0.05
ROUNDS_CSV, ROUNDS_PNG = "rounds.csv", "expert_iteration.png"
TB_DIR = "expert_iteration"


def student_path(run_dir: Path, round_: int) -> Path:
    return run_dir / "students" / f"round-{round_}.npz"


def read_student(path: Path, actor: Weights) -> Weights:
    """The student at ``path``, if it is a regular file holding a policy shaped as ``actor`` (the
    learner's actor: arrays, shapes, input layout) that passes a policy file's checks; a
    ValueError saying what is wrong otherwise (missing, a FIFO or device, damaged, another network)."""
    regular_file(path, 2 * sum(a.nbytes for a in actor.values()) + 2**20)
    try:
        weights = load_weights(path)
    except OSError as err:
        raise ValueError(f"{path} cannot be read: {err.strerror or err}") from None
    return weights_like(str(path), weights, actor)


def label_sets(config: TrainConfig, round_: int) -> list[tuple[Path, LabelSettings]]:
    """The label sets of round ``round_`` (1, 2, ...): folder and settings, each with a seed of its own."""
    plan = config.rounds[round_ - 1]
    count = plan.labels
    previous = str(student_path(config.run_dir, round_ - 1))
    if round_ == 1 and not config.init_policy:
        parts = [("", FIRST_PLAYER, count)]
    else:
        n = len(plan.opponents)
        parts = [(name, previous, count // n + (i < count % n)) for i, name in enumerate(plan.opponents)]
    search = {"rollout": "expert", **label_search_options(plan.search, previous)}
    sets = []
    for part, (opponent, player, rows) in enumerate(parts):
        if rows == 0:
            continue
        seed = int(np.random.SeedSequence([config.seed, round_, part]).generate_state(1)[0]) % (MAX_SEED + 1)
        settings = LabelSettings(
            count=rows, worlds=config.label_worlds, margin=SEARCH_MARGIN, player=player, seed=seed,
            shard_rows=min(SHARD_ROWS, rows), tables=DEFAULT_TABLES, rules=config.rules,
            confirm=config.label_confirm, opponents="" if opponent in ("", SELF) else opponent, **search,
        )  # fmt: skip
        folder = config.run_dir / "labels" / (f"round-{round_}" + (f"-{opponent}" if opponent else ""))
        sets.append((folder, settings))
    return sets


def fit_samples(config: TrainConfig, round_: int) -> int:
    """The samples round ``round_``'s fit passes over: the labels it fits (:func:`fitted_labels`) and
    their relabellings, but the decisions held out, once per epoch."""
    labels = fitted_labels(config, round_)
    return config.distil_epochs * (labels - int(labels * HOLDOUT)) * (1 + config.distil_suit_copies)


def label_workers(config: TrainConfig) -> int:
    """The processes that label and evaluate the rounds."""
    return config.label_workers or os.cpu_count() or 1


def run_rounds(
    config: TrainConfig, start: Weights, progress: Progress, minutes: Callable[[], float], address: str | None = None
) -> Weights:
    """Run (or finish) every round from the warm start's actor ``start``; the last student's
    weights (``start`` itself when ``distil_labels`` is empty). ``minutes()``: the run's time so
    far; ``address``: a Ray cluster that makes the labels (:mod:`train.rounds.labels_ray`)."""
    workers = label_workers(config)
    rows = read_rounds(config.run_dir)
    folders: list[Path] = []
    student = start
    rounds = config.rounds
    if config.init_policy or rounds and STUDENT in rounds[0].search:  # round 1 reads the start as its student
        _save(start, student_path(config.run_dir, 0))  # (written again, the same, on a resume)
    for round_, plan in enumerate(rounds, 1):
        sets = label_sets(config, round_)
        folders += [folder for folder, _ in sets]
        path = student_path(config.run_dir, round_)
        previous, student = student, _finished_student(path, start, round_, progress)
        if student is None:
            begun = time.monotonic()
            for folder, settings in sets:
                _follow_a_move(folder, settings)
                against = f" against {settings.opponents}" if settings.opponents else ""
                progress.say(f"round {round_}: labelling {settings.count:,} decisions of {settings.player}{against}")
                make_labels(settings, folder, workers, progress, address=address)
            initial, fitted = (previous, [f for f, _ in sets]) if plan.start == "previous" else (start, folders)
            student = _fit(config, initial, fitted, round_, progress)
            _save(student, path)
            progress.say(f"round {round_}: student {path} ({duration(time.monotonic() - begun)})")
        if not measured(config, rows, round_):
            labelled = sum(r.labels for r in rounds[:round_])
            scores = _evaluate(config, round_, labelled, minutes(), workers, progress)
            rows = [row for row in rows if row[0] != round_] + scores
            write_rounds(config.run_dir, rows)
    return student


def _save(student: Weights, path: Path) -> None:
    path.parent.mkdir(exist_ok=True)
    save_weights(student, path)


def _finished_student(path: Path, start: Weights, round_: int, progress: Progress) -> Weights | None:
    """The student of a round finished before a stop, or None when the round must (again) fit one:
    a damaged student is fitted again, the same (the same labels and seeds)."""
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        return read_student(path, start)
    except ValueError as err:
        progress.say(f"round {round_}: the student is damaged ({err}); fitting it again")
        path.unlink()  # (a FIFO or link there: the new student is written as a new file, never through it)
        return None


def _follow_a_move(folder: Path, settings: LabelSettings) -> None:
    """A DAgger label set begun before its run folder moved names the previous student (as player,
    or in search's options) at the old place; the student moved with the run, so the set goes on
    with the new place."""
    if not (folder / META_FILE).exists():
        return
    found = read_meta(folder)
    moved = {}
    for name in FILE_SETTINGS:
        old, new = getattr(found, name), getattr(settings, name)
        if old != new and Path(old).name == Path(new).name:
            moved[name] = new
    if moved and dataclasses.replace(found, **moved) == settings:
        write_settings(folder, settings)


def _fit(config: TrainConfig, initial: Weights, folders: list[Path], round_: int, progress: Progress) -> Weights:
    """The actor ``initial`` (the warm start's, or the previous round's student) fitted to the labels in ``folders``."""
    plan = config.rounds[round_ - 1]
    labelled = fitted_labels(config, round_)
    copies = f" and {labelled * config.distil_suit_copies:,} relabellings" if config.distil_suit_copies else ""
    averaged = f", the prior averaged over {plan.prior_suits} suit relabellings" if plan.prior_suits > 1 else ""
    with progress.phase(
        f"fitting the student on {labelled:,} labels{copies}{averaged}", "samples", fit_samples(config, round_), work="fit"
    ):  # (reading the labels, and the prior at each, counts in the fit's time)
        prior = averaged_prior(initial, plan.prior_suits)
        labels = read_labels(folders, config.layout, config.distil_suit_copies, seed=config.seed + round_, prior=prior)
        actor = Actor.from_weights(initial)
        loss_kind, temperature = plan.fit
        fit(
            actor, labels, temperature, config.distil_epochs, config.distil_learning_rate, HOLDOUT,
            seed=config.seed + round_, loss_kind=loss_kind, say=progress.say, on_batch=progress.add,
        )  # fmt: skip
    return actor.weights(config.layout)


Row = tuple[int, float, int, str, float, float, float, str]  # round, minutes, labels, bot, win rate, low, high, player


def evaluations(config: TrainConfig) -> dict[tuple[str, str], int]:
    """What each round is measured by: (player, bot) -> board pairs, the round's student against
    each bot of ``distil_eval`` and its teacher (the round's labelling search) against each of
    ``teacher_eval``."""
    return {
        **{("student", bot): boards for bot, boards in config.distil_eval.items()},
        **{("teacher", bot): boards for bot, boards in config.teacher_eval.items()},
    }


def measured(config: TrainConfig, rows: list[Row], round_: int) -> bool:
    """Whether ``rows`` (of ``rounds.csv``) hold every measure of round ``round_``."""
    return {(row[7], row[3]) for row in rows if row[0] == round_} == set(evaluations(config))


def teacher_spec(config: TrainConfig, round_: int) -> str:
    """Round ``round_``'s labelling search as a bot spec (every label set of a round has one search)."""
    options = label_sets(config, round_)[0][1].search_options()
    return "search:" + ",".join(f"{k}={v}" for k, v in options.items() if v not in (None, 0) or k == "ms")


def _evaluate(
    config: TrainConfig, round_: int, labelled: int, minutes: float, workers: int, progress: Progress
) -> list[Row]:
    rows: list[Row] = []
    writer = SummaryWriter(str(config.run_dir / TB_DIR))
    players = {"student": str(student_path(config.run_dir, round_)), "teacher": teacher_spec(config, round_)}
    for (player, opponent), boards in evaluations(config).items():
        kind = f"evaluation against {opponent}"
        with progress.phase(f"evaluating the {player} against {opponent}", "boards", boards, work=kind):
            result = evaluate(
                players[player], opponent, boards=boards, rules=config.rules,
                workers=min(workers, boards), on_progress=progress.add,
            )  # fmt: skip
        low, high = result.win_rate_ci
        rows.append((round_, minutes, labelled, opponent, result.win_rate, low, high, player))
        prefix = "" if player == "student" else "teacher_"
        for tag, value in (("win_rate", result.win_rate), ("win_rate_low", low), ("win_rate_high", high)):
            writer.add_scalar(f"{TB_DIR}/{prefix}{tag}_vs_{opponent}", value, round_)
        progress.say(f"round {round_}: {player} vs {opponent} {result.win_rate:.3f} [{low:.3f}, {high:.3f}]")
    writer.close()
    return rows


COLUMNS = ("round", "minutes", "labels", "bot", "win_rate", "low", "high", "player")


def read_rounds(run_dir: Path) -> list[Row]:
    """The rows of ``rounds.csv`` (none if it is missing)."""
    path = run_dir / ROUNDS_CSV
    if not path.exists():
        return []
    rows = list(csv.reader(io.StringIO(path.read_text())))[1:]
    return [
        (int(r[0]), float(r[1]), int(r[2]), r[3], float(r[4]), float(r[5]), float(r[6]), (r[7:] or ["student"])[0])
        for r in rows
    ]  # (a run begun before the player column measured its students only)


def write_rounds(run_dir: Path, rows: list[Row]) -> None:
    curve.write_csv(run_dir / ROUNDS_CSV, COLUMNS, sorted(rows))
    points = [(r[0], r[1], r[3] + (" (teacher)" if r[7] == "teacher" else ""), r[4], r[5], r[6]) for r in rows]
    picture = curve.picture(points, f"{run_dir.name}: the student after each round", "expert-iteration round")
    write_bytes(run_dir / ROUNDS_PNG, picture)
