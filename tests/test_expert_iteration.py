"""Expert iteration inside ``python -m train`` (train/rounds/expert_iteration.py): rounds of labels,
students and their evaluation; DAgger rounds label the student's own positions; a stopped run
resumes to the same students; the config's checks; the actor handed to PPO."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

pytest.importorskip("sb3_contrib")

from agents.averaged import ALL_RELABELLINGS, AveragedPolicy
from agents.policy import PolicyBot, input_size, load_weights, weights_from_policy
from train.rounds import expert_iteration as ei
from train.rounds import labels
from train.config import (
    ConfigError,
    TrainConfig,
    check_memory,
    config_from_dict,
    fitted_labels,
    held_labels,
    init_weights,
    load_config,
)
from train.rounds.label_set import iter_shards, read_meta
from train.ppo.network import set_actor
from train.run_folder.progress import Progress
from train.ppo.pull import Pull
from train.ppo.trainer import make_vec_env, new_model

TINY = {
    "run_name": "ei", "imitate": "", "n_envs": 1, "n_steps": 64, "batch_size": 64, "net_arch": [16],
    "critic_arch": [], "critic_sees_hands": False, "distil_labels": [24, 12], "label_worlds": 4, "label_confirm": 0,
    "dagger_opponents": ["self", "rule_based"], "distil_epochs": 2, "distil_eval": {"random": 2, "rule_based": 2},
    "eval_boards": 2, "start_eval_boards": 2, "final_gate_boards": 2, "label_workers": 1, "step_labels": 0,
}  # fmt: skip


def tiny(folder: Path, **changes) -> TrainConfig:
    return config_from_dict({**TINY, "output_dir": str(folder), **changes})


def start_weights(config: TrainConfig) -> dict[str, np.ndarray]:
    return weights_from_policy(new_model(config, make_vec_env(config)).policy)


def run(config: TrainConfig) -> tuple[dict[str, np.ndarray], str]:
    out = io.StringIO()
    student = ei.run_rounds(config, start_weights(config), Progress(stream=out), minutes=lambda: 1.5)
    return student, out.getvalue()


@pytest.fixture(scope="module")
def rounds(tmp_path_factory: pytest.TempPathFactory) -> tuple[TrainConfig, dict[str, np.ndarray], str]:
    config = tiny(tmp_path_factory.mktemp("runs"))
    config.run_dir.mkdir()
    return config, *run(config)


def test_each_round_leaves_a_student_its_labels_and_its_scores(rounds) -> None:
    config, student, log = rounds
    run_dir = config.run_dir
    assert sorted(p.name for p in (run_dir / "labels").iterdir()) == ["round-1", "round-2-rule_based", "round-2-self"]
    assert [sum(len(s["search_action"]) for s in iter_shards(run_dir / "labels" / f)) for f in
            ("round-1", "round-2-self", "round-2-rule_based")] == [24, 6, 6]  # fmt: skip
    last = load_weights(ei.student_path(run_dir, 2))
    assert last.keys() == student.keys() and all(np.array_equal(last[k], student[k]) for k in student)
    assert ei.read_rounds(run_dir) == [
        (r, 1.5, labels, bot, *row[4:]) for (r, labels), bot, row in zip(
            [(1, 24), (1, 24), (2, 36), (2, 36)], ["random", "rule_based"] * 2, ei.read_rounds(run_dir))
    ]  # fmt: skip
    assert all(0 <= low <= rate <= high <= 1 for *_, rate, low, high, _ in ei.read_rounds(run_dir))
    assert (run_dir / ei.ROUNDS_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list((run_dir / ei.TB_DIR).glob("events.out.tfevents.*"))
    for line in ("round 1: labelling 24 decisions of expert", "round 2: labelling 6 decisions of",
                 "against rule_based", "round 2: student vs rule_based"):  # fmt: skip
        assert line in log


def test_a_dagger_round_labels_the_previous_students_own_positions(rounds) -> None:
    config, _, _ = rounds
    first = ei.student_path(config.run_dir, 1)
    for folder, opponents in (("round-2-self", ""), ("round-2-rule_based", "rule_based")):
        meta = read_meta(config.run_dir / "labels" / folder)
        assert (meta.player, meta.opponents) == (str(first), opponents)
        bot = PolicyBot(load_weights(first))
        for shard in iter_shards(config.run_dir / "labels" / folder):
            for observation, mask, action in zip(shard["observation"], shard["action_mask"], shard["player_action"]):
                assert bot.act({"observation": observation, "action_mask": mask.view(np.int8)}) == action


def test_a_teacher_that_reads_the_student_searches_on_top_of_the_last_one(tmp_path: Path) -> None:
    """The loop of issue 41 end to end: with label_search keep={student} each round's search keeps
    the previous round's student's choice (round 1's: the start, students/round-0.npz), and every
    label is what that search plays from the row's seed."""
    config = tiny(
        tmp_path, label_search="keep={student}", distil_labels=[12, 6], teacher_eval={"random": 2}
    )
    config.run_dir.mkdir()
    start = start_weights(config)
    _, log = run(config)
    assert sorted((row[0], row[7], row[3]) for row in ei.read_rounds(config.run_dir)) == [
        (r, player, bot) for r in (1, 2) for player, bot in
        (("student", "random"), ("student", "rule_based"), ("teacher", "random"))
    ]  # fmt: skip
    assert "round 2: teacher vs random" in log
    assert ei.teacher_spec(config, 2) == (
        f"search:worlds=4,ms=0,margin=0.01,keep={ei.student_path(config.run_dir, 1)},rollout=expert"
    )
    saved = load_weights(ei.student_path(config.run_dir, 0))
    assert all(np.array_equal(saved[k], start[k]) for k in start)
    for folder, round_ in (("round-1", 1), ("round-2-self", 2), ("round-2-rule_based", 2)):
        meta = read_meta(config.run_dir / "labels" / folder)
        teacher = str(ei.student_path(config.run_dir, round_ - 1))
        assert (meta.keep, meta.rollout) == (teacher, "expert")
        search, keeper = labels.teacher(meta), PolicyBot(load_weights(teacher))
        kept = 0
        for shard in iter_shards(config.run_dir / "labels" / folder):
            for observation, mask, action, seed in zip(
                shard["observation"], shard["action_mask"], shard["search_action"], shard["search_seed"]
            ):
                asked = {"observation": observation, "action_mask": mask.view(np.int8)}
                search.reset(int(seed))
                assert search.act(asked) == action
                kept += keeper.act(asked) == action
        assert kept > 0  # (the margin keeps the student's choice where search finds nothing better)


def test_the_last_step_labels_the_last_students_own_play_with_its_rollouts_and_fits_it_from_its_average(
    tmp_path: Path,
) -> None:
    """After the rounds, step_labels: the last round's student at every seat, searched with it as
    search's prior and rollouts; the student fitted from it by the advantage loss, its prior the
    student averaged over every suit relabelling (a fit at the largest tau moves toward that average)."""
    config = tiny(tmp_path, distil_labels=[12], step_labels=8, step_tau=100.0, step_prior_suits=24, distil_epochs=30,
                  distil_learning_rate=0.01)  # fmt: skip
    assert [(r.search, r.opponents, r.loss, r.start, r.prior_suits) for r in config.rounds] == [
        ("", ("self", "rule_based"), "logits", "start", 1),
        ("keep={student},rollout={student}", ("self",), "advantage", "previous", 24),
    ]
    config.run_dir.mkdir()
    step, log = run(config)
    assert "round 2: labelling 8 decisions of" in log and "the prior averaged over 24 suit relabellings" in log
    last = str(ei.student_path(config.run_dir, 1))
    meta = read_meta(config.run_dir / "labels" / "round-2-self")
    assert (meta.player, meta.opponents, meta.keep, meta.rollout, meta.count) == (last, "", last, last, 8)
    assert ei.teacher_spec(config, 2) == f"search:worlds=4,ms=0,margin=0.01,keep={last},rollout={last}"
    assert {row[0] for row in ei.read_rounds(config.run_dir)} == {1, 2}
    # at tau 100 the values drop out: the fit goes from round 1's student toward its suit-blind average
    shard = next(iter_shards(config.run_dir / "labels" / "round-2-self"))
    observations, masks = shard["observation"], shard["action_mask"].astype(bool)
    average = AveragedPolicy([PolicyBot(load_weights(last))], ALL_RELABELLINGS)
    target = average.log_probabilities(observations, masks)
    def distance(weights) -> float:  # mean KL(average || network) over the step's positions
        own = AveragedPolicy([PolicyBot(weights)], [(0, 1, 2, 3)]).log_probabilities(observations, masks)
        return float(np.mean(np.sum(np.where(masks, np.exp(target) * (target - own), 0.0), axis=1)))
    assert distance(step) < 0.5 * distance(load_weights(last))


def test_no_last_step_without_rounds(tmp_path: Path) -> None:
    assert tiny(tmp_path, distil_labels=[], step_labels=8).rounds == []


def test_a_run_begun_before_the_last_step_resumes_without_one(tmp_path: Path) -> None:
    """A run folder's config.yaml lists every option its run had: one without step_labels began
    before the last step existed, and resumes without one; a config file that leaves the option
    out takes the default, as it does every other."""
    options = tiny(tmp_path).to_dict()
    del options["step_labels"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(options))
    assert load_config(tmp_path / "config.yaml", saved_run=True).step_labels == 0
    assert load_config(tmp_path / "config.yaml").step_labels == load_config().step_labels == 25_000


def test_distil_loss_action_fits_the_actions_search_played(tmp_path: Path) -> None:
    """Fitted to its 24 labels to the end, a round's student with distil_loss action plays the
    action search played (the expert's choice where no other beat it by the margin), even where
    another action has the best searched value; with logits it follows the values there instead."""
    students = {}
    for loss in ("action", "logits"):
        config = tiny(
            tmp_path / loss, distil_labels=[24], distil_loss=loss, distil_epochs=200, distil_learning_rate=0.01,
            distil_suit_copies=0, distil_eval={"random": 1},
        )  # fmt: skip
        config.run_dir.mkdir(parents=True)
        students[loss] = PolicyBot(run(config)[0])
    plays: dict[str, list[int]] = {"action": [], "logits": []}
    searched, best = [], []
    for shard in iter_shards(tmp_path / "action" / "ei" / "labels" / "round-1"):  # (the same labels in both runs)
        for observation, mask, action, values in zip(
            shard["observation"], shard["action_mask"], shard["search_action"], shard["values"]
        ):
            for loss, bot in students.items():
                plays[loss].append(bot.act({"observation": observation, "action_mask": mask.view(np.int8)}))
            searched.append(action)
            best.append(np.nanargmax(np.where(mask, values, np.nan)))
    searched, differ = np.array(searched), np.array(searched) != np.array(best)
    action, logits = np.array(plays["action"]) == searched, np.array(plays["logits"]) == searched
    assert differ.sum() >= 2  # (labels where search kept the expert's choice over a better-valued one)
    assert action.sum() >= len(searched) - 1  # (one label of the 24 is held out)
    assert action[differ].sum() > logits[differ].sum()


def test_distil_from_previous_fits_the_last_student_to_its_own_rounds_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """distil_from previous: round 2 fits round 1's student, on round 2's labels alone (start: the
    warm start on both rounds' labels); a resumed round fits the same student again."""
    fits: dict[str, list[tuple[dict[str, np.ndarray], list[str]]]] = {}
    read_labels, from_weights = ei.read_labels, ei.Actor.from_weights
    for mode in ("start", "previous"):
        seen: list[list[str]] = []
        starts: list[dict[str, np.ndarray]] = []
        monkeypatch.setattr(ei, "read_labels", lambda f, *a, **k: seen.append(list(f)) or read_labels(f, *a, **k))
        monkeypatch.setattr(ei.Actor, "from_weights", lambda w: starts.append(w) or from_weights(w))
        config = tiny(tmp_path / mode, distil_from=mode)
        config.run_dir.mkdir(parents=True)
        start = start_weights(config)
        last = ei.run_rounds(config, start, Progress(enabled=False), minutes=lambda: 0.5)
        fits[mode] = [(w, [Path(f).name for f in folders]) for w, folders in zip(starts, seen)]
        first = load_weights(ei.student_path(config.run_dir, 1))
        assert all(np.array_equal(fits[mode][0][0][k], start[k]) for k in start)  # round 1 fits the warm start
        round_2_start = first if mode == "previous" else start
        assert all(np.array_equal(fits[mode][1][0][k], round_2_start[k]) for k in start)
        if mode == "previous":  # a stopped round fits the same student again
            ei.student_path(config.run_dir, 2).unlink()
            again = ei.run_rounds(config, start, Progress(enabled=False), minutes=lambda: 0.5)
            assert all(np.array_equal(again[k], last[k]) for k in last)
    assert [folders for _, folders in fits["start"]] == [["round-1"], ["round-1", "round-2-self", "round-2-rule_based"]]
    assert [folders for _, folders in fits["previous"]] == [["round-1"], ["round-2-self", "round-2-rule_based"]]
    assert fitted_labels(tiny(tmp_path, distil_from="previous"), 2) == 12
    assert fitted_labels(tiny(tmp_path, distil_from="start"), 2) == 36
    assert (held_labels(tiny(tmp_path, distil_from="previous")), held_labels(tiny(tmp_path))) == (24, 36)


def test_rounds_after_init_policy_begin_with_its_own_positions(tmp_path: Path) -> None:
    """init_policy with rounds: the network is round 0's student, whose play reaches round 1's
    positions (a DAgger round) and which round 1's search reads."""
    config = tiny(
        tmp_path, init_policy="student", imitate="", net_arch=[256, 256], distil_labels=[6], label_search="keep={student}"
    )
    config.run_dir.mkdir()
    start = init_weights(config.init_policy, config.layout, config.net_arch)
    ei.run_rounds(config, start, Progress(enabled=False), minutes=lambda: 0.5)
    first = str(ei.student_path(config.run_dir, 0))
    assert all(np.array_equal(load_weights(first)[k], start[k]) for k in start)
    for folder, opponents in (("round-1-self", ""), ("round-1-rule_based", "rule_based")):
        meta = read_meta(config.run_dir / "labels" / folder)
        assert (meta.player, meta.opponents, meta.keep) == (first, opponents, first)


@pytest.mark.parametrize(
    "text, message",
    [
        ("keep", "label_search must be search options KEY=VALUE"),
        ("worlds=4", "label_search must be search options KEY=VALUE"),
        ("keep={student},keep=expert", "at most once"),
        ("keep=greedy", r"label_search: keep must be one of \['expert', '\{student\}'\] or a policy file"),
        ("infer={student}", r"label_search must be search options .*, each of \['keep', 'rollout'\] at most once"),
        ("cut=1", r"label_search must be search options .*, each of \['keep', 'rollout'\] at most once"),
    ],
)
def test_bad_label_search_options_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tiny(tmp_path, label_search=text)


def test_a_stopped_pipeline_resumes_to_the_same_student(rounds, tmp_path: Path) -> None:
    config, student, _ = rounds
    copy = tiny(tmp_path)
    shutil.copytree(config.run_dir, copy.run_dir)
    ei.student_path(copy.run_dir, 2).unlink()  # stopped while round 2 labelled its second set, in another folder
    begun = list((copy.run_dir / "labels" / "round-2-rule_based").glob("shard_*.npz"))
    assert begun
    for shard in begun:
        shard.unlink()
    (copy.run_dir / ei.ROUNDS_CSV).write_text((copy.run_dir / ei.ROUNDS_CSV).read_text().splitlines()[0] + "\n")
    resumed, log = run(copy)
    assert "round 1: labelling" not in log and "round 2: labelling" in log
    assert all(np.array_equal(resumed[k], student[k]) for k in student)
    assert ei.read_rounds(copy.run_dir) == ei.read_rounds(config.run_dir)  # round 1 scored again, the same


@pytest.mark.parametrize("damage", ["garbage", "fifo", "nan"])
def test_a_damaged_student_of_a_finished_round_is_fitted_again_the_same(rounds, tmp_path: Path, damage) -> None:
    config, student, _ = rounds
    copy = tiny(tmp_path)
    shutil.copytree(config.run_dir, copy.run_dir)
    path = ei.student_path(copy.run_dir, 2)
    if damage == "garbage":
        path.write_bytes(b"not a policy")
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)  # never opened: reading it would wait forever
    else:
        np.savez(path, **{k: np.full_like(v, np.nan) if v.dtype.kind == "f" else v for k, v in student.items()})
    resumed, log = run(copy)
    assert "round 2: the student is damaged (" in log and "fitting it again" in log
    assert "round 1: the student is damaged" not in log
    assert all(np.array_equal(resumed[k], student[k]) for k in student)
    assert all(np.array_equal(load_weights(path)[k], student[k]) for k in student)


def test_without_rounds_the_start_is_returned(tmp_path: Path) -> None:
    config = tiny(tmp_path, distil_labels=[])
    start = start_weights(config)
    assert ei.run_rounds(config, start, Progress(enabled=False), minutes=lambda: 0.0) is start
    assert not config.run_dir.exists()


def test_set_actor_is_the_inverse_of_weights_from_policy(rounds, tmp_path: Path) -> None:
    config, student, _ = rounds
    policy = new_model(config, make_vec_env(config)).policy
    set_actor(policy, student)
    got = weights_from_policy(policy)
    assert got.keys() == student.keys() and all(np.array_equal(got[k], student[k]) for k in student)
    wider = new_model(tiny(tmp_path, net_arch=[32]), make_vec_env(config)).policy
    with pytest.raises(ValueError, match="w0"):
        set_actor(wider, student)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"distil_labels": [100, 0]}, r"distil_labels\[1\] must be an integer in \[1, 100,000,000\], got 0"),
        ({"label_worlds": 0}, r"label_worlds must be an integer in \[1, 4,096\], got 0"),
        ({"label_confirm": 4}, r"label_confirm must be 0 \(off\) or more than label_worlds \(4\), got 4"),
        ({"label_workers": -1}, r"label_workers must be an integer in \[0, 1,024\] \(0: every core\), got -1"),
        ({"dagger_opponents": []}, "dagger_opponents must name a bot or self when distil_labels has two or more"),
        ({"dagger_opponents": ["self", "nobody"]}, "dagger_opponents"),
        ({"distil_eval": {"nobody": 2}}, "distil_eval"),
        ({"distil_eval": {"expert": 0}}, r"distil_eval\['expert'\] must be an integer in \[1, 100,000\], got 0"),
        ({"distil_loss": "values"}, r"distil_loss must be one of \['logits', 'action', 'advantage'\], got 'values'"),
        ({"distil_tau": 0.0}, r"distil_tau must be a finite number in \[0.0001, 100\], got 0.0"),
        ({"distil_tau": float("inf")}, r"distil_tau must be a finite number in \[0.0001, 100\], got inf"),
        ({"distil_from": "scratch"}, r"distil_from must be one of \['start', 'previous'\], got 'scratch'"),
        ({"step_labels": -1}, r"step_labels must be an integer in \[0, 100,000,000\] \(0: no last step\), got -1"),
        ({"step_tau": 0.0}, r"step_tau must be a finite number in \[0.0001, 100\], got 0.0"),
        ({"step_prior_suits": 5}, r"step_prior_suits must be one of \[1, 6, 24\], got 5"),
        ({"distil_epochs": 0}, r"distil_epochs must be an integer in \[1, 10,000\], got 0"),
        ({"distil_suit_copies": -1}, r"distil_suit_copies must be an integer in \[0, 23\] \(0: none\), got -1"),
        ({"distil_learning_rate": 0.0}, r"distil_learning_rate must be a finite number in \(0, 1\]"),
        ({"student_pull": float("nan")}, r"student_pull must be a finite number in \[0, 1e\+06\], got nan"),
        ({"student_pull_steps": -1}, r"student_pull_steps must be an integer in \[0, 1,000,000,000,000\] \(0: constant\), got -1"),
    ],
)
def test_bad_expert_iteration_options_are_config_errors(tmp_path: Path, change, message) -> None:
    with pytest.raises(ConfigError, match=message):
        tiny(tmp_path, **change)


def test_distil_loss_advantage_fits_at_distil_tau(tmp_path: Path) -> None:
    assert tiny(tmp_path, distil_loss="advantage", distil_tau=0.02).rounds[0].fit == ("advantage", 0.02)
    assert tiny(tmp_path, distil_loss="logits", distil_tau=0.02).rounds[0].fit == ("logits", 0.01)  # (its own scale)
    assert tiny(tmp_path).distil_tau == 0.01 and tiny(tmp_path).distil_loss == "logits"  # the shipped default stays


def test_the_labels_a_fit_holds_count_in_the_memory_check(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expert-iteration labels"):
        check_memory(tiny(tmp_path, distil_labels=[10**7]), available=24 * 2**30)


def test_the_pull_fades_linearly_to_nothing() -> None:
    pull = Pull(start_weights(tiny(Path("/nonexistent"))), coefficient=2.0, steps=1000, seed=0)
    assert [pull.weight(step) for step in (0, 250, 1000, 5000)] == [2.0, 1.5, 0.0, 0.0]


def cross_entropy(teacher: PolicyBot, policy, observations: np.ndarray, masks: np.ndarray) -> float:
    target = np.exp(teacher.logits(observations[:, : input_size(teacher.layout)]))
    target = np.where(masks, target, 0.0)
    target /= target.sum(axis=1, keepdims=True)
    with torch.no_grad():
        log_probs = policy.get_distribution(torch.from_numpy(observations), action_masks=masks).distribution.logits
    return float(-(torch.from_numpy(target) * torch.where(torch.from_numpy(masks), log_probs, 0.0)).sum(1).mean())


def test_the_pull_moves_the_actor_toward_the_student_after_each_update(tmp_path: Path) -> None:
    config = tiny(
        tmp_path, n_envs=4, learning_rate=0.003, opponents={"random": 1.0}, overlap_updates=False, critic_warmup_steps=0
    )
    model = new_model(config, make_vec_env(config))
    teacher = weights_from_policy(model.policy)  # the actor PPO starts from, with other, firm preferences
    teacher["w_out"] = np.random.default_rng(0).normal(0.0, 3.0, teacher["w_out"].shape).astype(np.float32)
    pull = Pull(teacher, 1.0, steps=10**6, seed=0)
    model.pull = pull
    model.learn(total_timesteps=256)  # one rollout, one update, one pass of the pull
    assert model.last_pull_loss > 0
    buffer = model.rollout_buffer
    observations = buffer.observations.reshape(-1, buffer.observations.shape[-1])
    masks = buffer.action_masks.reshape(len(observations), -1).astype(bool)
    before = cross_entropy(PolicyBot(teacher), model.policy, observations, masks)
    for _ in range(20):
        pull.apply(model)
    after = cross_entropy(PolicyBot(teacher), model.policy, observations, masks)
    assert after < before - 0.1, (before, after)
    model.num_timesteps = 10**6  # faded out: no pass
    assert pull.apply(model) is None


def test_a_rounds_file_written_before_the_player_column_reads_as_the_students(tmp_path: Path) -> None:
    (tmp_path / ei.ROUNDS_CSV).write_text("round,minutes,labels,bot,win_rate,low,high\n1,2.5,24,expert,0.6,0.5,0.7\n")
    assert ei.read_rounds(tmp_path) == [(1, 2.5, 24, "expert", 0.6, 0.5, 0.7, "student")]
