"""Search labels (train.rounds.labels, train.rounds.label_set) and the student fitted to them (train.rounds.distil)."""

from __future__ import annotations

import dataclasses
import errno
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from agents.expert import expert_actions
from agents.policy import ADVISED_LAYOUT, PolicyBot, batch_inputs, legal_softmax, load_weights
from agents.search import SearchBot
from allfours_env.observation import suit_relabelling
from allfours_env.rules import DEFAULT_RULES
from train.rounds import distil, label_set, labels
from train.run_folder.progress import Progress

PRETRAINED = Path(agents.__file__).parent / "pretrained" / "allfours_v1.npz"
SETTINGS = label_set.LabelSettings(
    count=30, worlds=4, margin=0.01, rollout="expert", player="expert", seed=7, shard_rows=12, tables=4,
    rules=DEFAULT_RULES, confirm=8,
)  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labels")
    labels.make_labels(SETTINGS, folder, workers=1)
    return folder


def shards(folder: Path) -> list[dict[str, np.ndarray]]:
    return list(label_set.iter_shards(folder))


def test_label_set_has_the_documented_columns(made: Path) -> None:
    got = shards(made)
    assert [len(s["search_action"]) for s in got] == [12, 12, 6]
    assert label_set.read_meta(made) == SETTINGS
    for shard in got:
        assert (shard["action_mask"].sum(axis=1) >= 2).all()
        legal = shard["values"][shard["action_mask"]]
        assert ((legal >= 0) & (legal <= 1)).all()


def test_labels_are_what_search_chooses_with_the_rows_seed(made: Path) -> None:
    for shard in shards(made):
        for i in range(len(shard["search_action"])):
            bot = SearchBot(worlds=SETTINGS.worlds, ms=0, margin=SETTINGS.margin, confirm=SETTINGS.confirm)
            bot.reset(int(shard["search_seed"][i]))
            action = bot.act(
                {"observation": shard["observation"][i], "action_mask": shard["action_mask"][i].view(np.int8)}
            )
            assert action == shard["search_action"][i]
            values = np.full(56, np.nan, dtype=np.float32)
            values[bot.last_search.actions] = bot.last_search.values
            np.testing.assert_array_equal(values, shard["values"][i])
            # more worlds exactly where the first ones left the expert's choice
            first = SearchBot(worlds=SETTINGS.worlds, ms=0, margin=SETTINGS.margin)
            first.reset(int(shard["search_seed"][i]))
            left = first.act(
                {"observation": shard["observation"][i], "action_mask": shard["action_mask"][i].view(np.int8)}
            )
            confirmed = left != shard["player_action"][i]
            assert bot.last_search.worlds == (SETTINGS.confirm if confirmed else SETTINGS.worlds)


def test_player_actions_are_the_players(made: Path) -> None:
    for shard in shards(made):
        np.testing.assert_array_equal(
            expert_actions(shard["observation"], shard["action_mask"]), shard["player_action"]
        )


def test_a_stopped_run_goes_on_to_the_same_labels_and_workers_change_nothing(made: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(made, again)
    label_set.shard_path(again, 1).unlink()
    labels.make_labels(SETTINGS, again, workers=2)  # forked workers, as a user runs it
    for a, b in zip(shards(made), shards(again), strict=True):
        for name in label_set.COLUMNS:
            np.testing.assert_array_equal(a[name], b[name])


class StopAt(Progress):
    """Silent progress that stops the labelling (a Ctrl-C) once ``at`` labels are done."""

    def __init__(self, at: int) -> None:
        super().__init__(enabled=False)
        self.at, self.done = at, 0

    def advance(self, done: int) -> None:
        self.done = done
        if done >= self.at:
            raise KeyboardInterrupt


def assert_same_labels(folder: Path, other: Path) -> None:
    for a, b in zip(shards(folder), shards(other), strict=True):
        for name in label_set.COLUMNS:
            assert a[name].dtype == b[name].dtype
            np.testing.assert_array_equal(a[name], b[name])


def test_shards_made_in_parts_with_stops_between_are_the_shards_made_whole(made: Path, tmp_path: Path) -> None:
    whole = tmp_path / "whole"  # each shard labelled in one go, as before parts
    label_set.write_meta(whole, SETTINGS)
    for k in range(SETTINGS.shards()):
        label_set.write_shard(whole, k, labels.label_shard(SETTINGS, k), DEFAULT_RULES)
    assert_same_labels(made, whole)
    parts = tmp_path / "parts"  # shards of 12 and 6 rows in parts of 5: stops in the middle of shards
    for at in (5, 10, 17, 22):
        with pytest.raises(KeyboardInterrupt):
            labels.make_labels(SETTINGS, parts, workers=1, progress=StopAt(at), rows=5)
        assert label_set.rows_on_disk(parts, SETTINGS, 5) == at
    assert sorted(p.name for p in parts.glob("*part*")) == ["shard_00001.part0.npz", "shard_00001.part1.npz"]
    labels.make_labels(SETTINGS, parts, workers=2, rows=5)
    assert_same_labels(made, parts)
    assert not list(parts.glob("*part*"))  # part files are transient


def test_a_stop_loses_at_most_the_part_each_worker_is_making(made: Path, tmp_path: Path) -> None:
    settings = dataclasses.replace(SETTINGS, count=60, shard_rows=30)
    folder = tmp_path / "stopped"
    stop = StopAt(20)
    with pytest.raises(KeyboardInterrupt):
        labels.make_labels(settings, folder, workers=2, progress=stop, rows=4)
    kept = label_set.rows_on_disk(folder, settings, 4)
    assert stop.done - 2 * 4 <= kept <= stop.done and kept > 0, (stop.done, kept)
    assert list(folder.glob("*part*")) and not list(folder.glob(".*"))  # parts written, no temporary file left
    todo = labels.open_label_set(settings, folder, 4)
    assert sum(len(label_set.part_rows(settings, k, p, 4)) for k, ps in todo.items() for p in ps) == 60 - kept


def test_a_damaged_part_is_labelled_again_and_the_shard_is_the_same(made: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "damaged"
    with pytest.raises(KeyboardInterrupt):
        labels.make_labels(SETTINGS, folder, workers=1, progress=StopAt(10), rows=5)
    part = label_set.read_part(folder, 0, 1, 5, SETTINGS)
    part["values"] = np.where(part["action_mask"], 2.0, np.nan).astype(np.float32)
    np.savez(label_set.part_path(folder, 0, 1), **part)
    label_set.part_path(folder, 0, 0).write_bytes(b"cut short")
    labels.make_labels(SETTINGS, folder, workers=1, rows=5)
    err = capsys.readouterr().err
    assert "shard_00000.part1.npz: row 0: values of legal actions must be chances in 0..1; " in err
    assert "shard_00000.part1.npz is labelled again" in err and "shard_00000.part0.npz is labelled again" in err
    assert_same_labels(made, folder)


def test_other_settings_in_the_same_folder_are_refused(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(made, folder)
    with pytest.raises(label_set.LabelSetError, match="worlds differ"):
        labels.make_labels(dataclasses.replace(SETTINGS, worlds=6), folder, workers=1)


@pytest.mark.parametrize("name, off, on", [("cut", 0, 1), ("infer", "", "student.npz")])
def test_a_label_set_made_before_a_search_option_left_reads_where_it_was_off(made, tmp_path, name, off, on) -> None:
    """Issue 63: labels.json files written before then name the removed options; off, they read as before."""
    folder = tmp_path / "old"
    shutil.copytree(made, folder)
    meta = json.loads((folder / label_set.META_FILE).read_text())
    for value in (off, on):
        meta["settings"][name] = value
        (folder / label_set.META_FILE).write_text(json.dumps(meta))
        if value == off:
            assert label_set.read_meta(folder) == SETTINGS
        else:
            with pytest.raises(label_set.LabelSetError, match=f"search's {name} option, which was removed"):
                label_set.read_meta(folder)


def test_a_bad_shard_is_refused_with_its_name(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(made, folder)
    columns = dict(shards(made)[0])
    columns["values"] = np.where(columns["action_mask"], 2.0, np.nan).astype(np.float32)
    np.savez(label_set.shard_path(folder, 0), **columns)
    with pytest.raises(label_set.LabelSetError, match="shard_00000.npz: row 0: values of legal actions must be"):
        shards(folder)
    label_set.shard_path(folder, 2).unlink()
    with pytest.raises(label_set.LabelSetError, match="1 of 3 shards missing"):
        shards(folder)


def test_the_player_must_answer_in_batches() -> None:
    with pytest.raises(ValueError, match="act_batch"):
        labels.player_bot("rule_based")


def test_the_torch_actor_is_policybots_network(made: Path) -> None:
    weights = load_weights(PRETRAINED)
    actor = distil.Actor.from_weights(weights)
    shard = shards(made)[0]
    x = batch_inputs(ADVISED_LAYOUT, shard["observation"], shard["action_mask"])
    with torch.no_grad():
        got = actor(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, PolicyBot(weights).logits(x), rtol=1e-4, atol=1e-4)
    back = actor.weights(ADVISED_LAYOUT)
    for name in weights:
        np.testing.assert_array_equal(back[name], weights[name])


@pytest.mark.parametrize("loss", ["cross_entropy", "logits"])
def test_distil_fits_toward_search_and_writes_a_policy(made: Path, tmp_path: Path, loss: str) -> None:
    out = tmp_path / "student.npz"
    args = [
        "--labels",
        str(made),
        "--out",
        str(out),
        "--hidden",
        "32",
        "--epochs",
        "200",
        "--lr",
        "0.01",
        "--temperature",
        "0.001",
    ]
    assert distil.main([*args, "--holdout", "0", "--loss", loss]) == 0
    student = agents.make(str(out))  # a policy file like any other
    for shard in shards(made):  # 30 decisions fitted 200 times: the student plays a best-valued action
        chosen = student.act_batch(shard["observation"], shard["action_mask"])
        values = shard["values"]
        assert (values[np.arange(len(chosen)), chosen] == np.nanmax(values, axis=1)).mean() > 0.9


def test_soft_targets_weigh_better_actions_more() -> None:
    values = np.full((1, 56), np.nan, dtype=np.float32)
    mask = np.zeros((1, 56), dtype=bool)
    mask[0, [3, 9]] = True
    values[0, 3], values[0, 9] = 0.50, 0.51
    p = legal_softmax(values, mask, 0.01)
    assert p[0, 9] / p[0, 3] == pytest.approx(np.e, rel=1e-4)
    assert p[0, ~mask[0]].sum() == 0


def test_against_opponents_only_the_players_decisions_are_labelled(tmp_path: Path) -> None:
    settings = dataclasses.replace(SETTINGS, count=12, confirm=0, opponents="rule_based")
    labels.make_labels(settings, tmp_path, workers=1)
    (shard,) = shards(tmp_path)
    np.testing.assert_array_equal(expert_actions(shard["observation"], shard["action_mask"]), shard["player_action"])
    player = labels.player_bot("expert")
    rng = np.random.default_rng(0)
    for table in range(2):
        bots = labels._seats(player, "rule_based", table, rng)
        assert [bot is player for bot in bots] == [seat % 2 == table for seat in range(4)]


def test_suit_copies_are_the_labels_relabelled(made: Path) -> None:
    plain, copied = distil.read_labels([made], ADVISED_LAYOUT), distil.read_labels([made], ADVISED_LAYOUT, 2, seed=1)
    assert len(copied.source) == 3 * len(plain.source) and copied.is_copy.sum() == 2 * len(plain.source)
    originals = np.flatnonzero(~copied.is_copy)
    np.testing.assert_array_equal(copied.inputs.dense(originals), plain.inputs.dense(np.arange(len(plain.source))))
    np.testing.assert_array_equal(copied.source[originals], np.arange(len(plain.source)))
    obs = np.concatenate([s["observation"] for s in shards(made)])
    every = [  # the inputs of every decision under each relabelling of the suits
        batch_inputs(ADVISED_LAYOUT, obs[:, o], plain.masks[:, a]).astype(np.float16).astype(np.float32)
        for o, a in (suit_relabelling(p) for p in itertools.permutations(range(4)))
    ]
    relabelled = 0
    for row in np.flatnonzero(copied.is_copy):
        i = copied.source[row]
        # the same decision: its values, legal actions and both choices carried to the new card ids
        assert copied.masks[row].sum() == plain.masks[i].sum()
        legal_values = np.sort(copied.values[row][copied.masks[row]]), np.sort(plain.values[i][plain.masks[i]])
        np.testing.assert_array_equal(*legal_values)
        assert copied.values[row, copied.search_actions[row]] == plain.values[i, plain.search_actions[i]]
        assert copied.values[row, copied.player_actions[row]] == plain.values[i, plain.player_actions[i]]
        assert copied.search_actions[row] % 13 == plain.search_actions[i] % 13  # ranks stay (decisions stay too)
        relabelled += not np.array_equal(copied.masks[row], plain.masks[i])
        mine = copied.inputs.dense(np.array([row]))[0]
        assert any(np.array_equal(mine, inputs[i]) for inputs in every)  # a relabelled position's input
    assert relabelled > len(plain.source) // 2  # the suits did move


def test_a_held_out_decision_is_held_out_with_its_relabellings(made: Path, tmp_path: Path) -> None:
    labels = distil.read_labels([made], ADVISED_LAYOUT, 3, seed=2)
    seen: list[np.ndarray] = []

    class Spy(distil.Actor):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(x.numpy().copy())
            return super().forward(x)

    torch.manual_seed(0)
    actor = Spy(labels.inputs.width, [8], "relu")
    distil.fit(actor, labels, 0.01, 1, 1e-3, holdout=0.2, seed=0, batch=10**6, say=lambda _: None)
    # calls: before (the held-out rows), one training batch (every training row), after the epoch
    held, trained = seen[0], seen[1]
    decisions = int((~labels.is_copy).sum())
    assert len(held) == int(decisions * 0.2)
    assert len(trained) == 4 * (decisions - len(held))  # no relabelling of a held-out decision trains
    originals = {r.tobytes() for r in labels.inputs.dense(np.flatnonzero(~labels.is_copy))}
    assert {r.tobytes() for r in held} <= originals


@pytest.mark.parametrize("block", [distil.BLOCK, 7])  # 7: rows straddle blocks, puts cross several
def test_sparse_rows_give_back_the_dense_rows(block, monkeypatch) -> None:
    monkeypatch.setattr(distil, "BLOCK", block)
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((50, 30)) < 0.1, rng.random((50, 30)), 0).astype(np.float32)
    dense[7] = 0  # a row of zeros
    rows = distil.SparseRows.room(50, 30)
    rows.put(0, dense[:20])
    rows.put(20, dense[20:])
    assert len(rows) == 50 and rows.non_zeros == (dense != 0).sum()
    pick = np.array([7, 49, 0, 7, 23])
    np.testing.assert_array_equal(rows.dense(pick), dense[pick].astype(np.float16).astype(np.float32))
    assert rows.dense(np.array([], dtype=np.int64)).shape == (0, 30)
    assert len(rows.columns) == -(-rows.non_zeros // block)  # blocks allocated as they are reached


# ---------------------------------------------------------------- settings, damaged files and full disks

# SETTINGS on the command line
ARGS = ["--count", "30", "--worlds", "4", "--confirm", "8", "--seed", "7", "--shard-rows", "12", "--tables", "4",
        "--workers", "1", "--quiet"]  # fmt: skip


def run_labels(capsys: pytest.CaptureFixture, out: Path, *more: str) -> tuple[int, str]:
    code = labels.main(["--out", str(out), *ARGS, *more])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize(
    "more, message",
    [
        (["--worlds", "100000000"], r"worlds must be an integer in \[1, 4,096\], got 100000000"),
        (["--confirm", "1000000000"], r"confirm must be an integer in \[0, 4,096\]"),
        (["--confirm", "4"], r"confirm must be 0 \(off\) or more than worlds \(4\)"),
        (["--count", "0"], r"count must be an integer in \[1, 100,000,000\]"),
        (["--count", "1" + "0" * 30], "count must be an integer"),
        (["--tables", "1000000"], r"tables must be an integer in \[1, 1,024\]"),
        (["--shard-rows", "100000000"], r"shard_rows must be an integer in \[1, 20,000\]"),
        (["--workers", "0"], r"--workers must be an integer in \[1, 1,024\]"),
        (["--seed", "-1"], "seed must be an integer in"),
        (["--margin", "nan"], r"margin must be a finite number in \[0, 1\], got nan"),
        (["--rule", "target_score=0"], "rule 'target_score' must be a positive integer"),
        (["--player", "nobody"], "unknown bot 'nobody'"),
        (["--opponents", "search:worlds=100000000"], "worlds"),
        (["--keep", "greedy"], r"keep must be one of \('expert',\) or a policy file"),
        (["--keep", "missing.npz"], "no policy file at 'missing.npz'"),
        (["--rollout", "student"], r"rollout must be one of \('expert', 'greedy'\) or a policy file"),
    ],
)
def test_bad_label_settings_are_exit_2_before_any_work(tmp_path, capsys, more, message) -> None:
    code, err = run_labels(capsys, tmp_path / "out", *more)
    assert code == 2 and err.startswith("python -m train.labels: error: ") and re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_not_a_label_folder_is_never_written(tmp_path, capsys) -> None:
    system_file = tmp_path / "passwd"
    system_file.write_text("root:x:0:0\n")
    code, err = run_labels(capsys, system_file)
    assert code == 2 and "is not a folder" in err
    assert system_file.read_text() == "root:x:0:0\n"
    code, err = run_labels(capsys, system_file / "below")
    assert code == 2 and f"cannot write the label folder {system_file / 'below'}: Not a directory" in err
    others = tmp_path / "etc"
    others.mkdir()
    (others / "hosts").write_text("127.0.0.1 localhost\n")
    code, err = run_labels(capsys, others)
    assert code == 2 and "holds other files and no labels.json: it is not a label set" in err
    assert [p.name for p in others.iterdir()] == ["hosts"]


def test_an_unreadable_labels_json_is_exit_2(tmp_path, capsys) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    for text in ('{"format": "allfours-search-labels", "version": 1, "settings": {"count": "many"}}', "[" * 100_000):
        (folder / "labels.json").write_text(text)
        code, err = run_labels(capsys, folder)
        assert code == 2 and "labels.json" in err, err
    (folder / "labels.json").unlink()
    os.mkfifo(folder / "labels.json")  # a FIFO would hang a plain read
    code, err = run_labels(capsys, folder)
    assert code == 2 and "labels.json is a FIFO, not a regular file" in err


def damage(folder: Path, shard: int, column: str, value) -> None:
    """Set ``column`` of the shard's first row to ``value`` (of values: its first legal action's)."""
    columns = dict(label_set.read_shard(folder, shard, label_set.read_meta(folder)))
    columns[column] = columns[column].copy()
    at = (0, int(np.argmax(columns["action_mask"][0]))) if column == "values" else 0
    columns[column][at] = value
    np.savez(label_set.shard_path(folder, shard), **columns)


def test_a_damaged_shard_is_labelled_again_on_resume(made: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "resumed"
    shutil.copytree(made, folder)
    damage(folder, 1, "observation", np.nan)  # the NaN inputs
    damage(folder, 2, "search_action", 55)  # an action the mask does not allow
    code, err = run_labels(capsys, folder)
    assert code == 0, err
    assert "shard_00001.npz: row 0: observation holds NaN or infinite values; shard_00001.npz is labelled again" in err
    assert "shard_00002.npz: row 0: search_action must be a legal action" in err
    for a, b in zip(shards(made), shards(folder), strict=True):
        for name in label_set.COLUMNS:
            np.testing.assert_array_equal(a[name], b[name])


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("code_name", ["ENOSPC", "EROFS"])
def test_a_full_or_read_only_disk_is_one_line_exit_74_and_the_same_command_goes_on(
    made: Path, tmp_path: Path, capsys, monkeypatch, workers: str, code_name: str
) -> None:
    folder = tmp_path / "full"
    real_save = np.savez_compressed
    writes = []

    def refused(file, **columns):  # the second shard's write: a partial file, then the disk refuses
        writes.append(file)
        if len(writes) == 2:
            Path(file).write_bytes(b"partial")
            raise OSError(getattr(errno, code_name), os.strerror(getattr(errno, code_name)))
        real_save(file, **columns)

    monkeypatch.setattr(np, "savez_compressed", refused)
    code, err = run_labels(capsys, folder, "--workers", workers)
    assert code == 74, err
    line = err.strip()
    assert "\n" not in line and "cannot write " in line and os.strerror(getattr(errno, code_name)) in line, err
    assert "the finished shards and parts are kept: once the disk has room, the same command goes on" in line
    names = sorted(p.name for p in folder.iterdir())  # the first shard written, no temporary file
    assert len(names) == 2 and names[0] == "labels.json" and re.fullmatch(r"shard_0000\d.npz", names[1]), names
    monkeypatch.setattr(np, "savez_compressed", real_save)
    code, err = run_labels(capsys, folder, "--workers", workers)
    assert code == 0, err
    for a, b in zip(shards(made), shards(folder), strict=True):
        np.testing.assert_array_equal(a["values"], b["values"])


# ---------------------------------------------------------------- train.rounds.distil checks everything first


def run_distil(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    try:
        code = distil.main(list(args))
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize(
    "more, message",
    [
        (["--epochs", "-1"], r"--epochs must be an integer in \[1, 10,000\], got -1"),
        (["--holdout", "2"], r"--holdout must be a finite number in \[0, 1\], got 2.0"),
        (["--holdout", "1"], "--holdout must be below 1"),
        (["--lr", "nan"], r"--lr must be a finite number in \(0, 1\], got nan"),
        (["--lr", "0"], r"--lr must be a finite number in \(0, 1\]"),
        (["--hidden", "0"], r"--hidden must be an integer in \[1, 65,536\], got 0"),
        (["--hidden", "64,x"], "--hidden must be layer sizes separated by commas"),
        (["--hidden", "1" + "0" * 20], "--hidden must be an integer"),
        (["--suit-copies", "-3"], r"--suit-copies must be an integer in \[0, 23\], got -3"),
        (["--suit-copies", "24"], r"--suit-copies must be an integer in \[0, 23\]"),
        (["--temperature", "-1"], "--temperature must be a finite number"),
        (["--temperature", "1e-9"], "--temperature must be a finite number in"),
        (["--temperature", "inf"], "--temperature must be a finite number"),
        (["--deviation-weight", "0"], "--deviation-weight must be a finite number"),
        (["--seed", "-1"], "--seed must be an integer in"),
        (["--init", "missing.npz"], "no policy file at 'missing.npz'"),
    ],
)
def test_bad_distil_options_are_exit_2_before_any_work(made, tmp_path, capsys, more, message) -> None:
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), *more)
    assert code == 2 and re.search(message, err), err
    assert not out.exists()


def test_distil_refuses_an_out_it_cannot_write(made, tmp_path, capsys) -> None:
    (tmp_path / "a_folder.npz").mkdir()
    for out, message in [
        (tmp_path / "student.txt", "--out must name an .npz file"),
        (tmp_path / "a_folder.npz", "is a folder"),
        (tmp_path / "no" / "such" / "student.npz", "does not exist"),
    ]:
        code, err = run_distil(capsys, "--labels", str(made), "--out", str(out))
        assert code == 2 and message in err, err


def test_distil_refuses_label_folders_that_do_not_fit(made, tmp_path, capsys) -> None:
    out = tmp_path / "student.npz"
    other_rules = tmp_path / "other_rules"
    seven = dataclasses.replace(SETTINGS, count=4, rules=dataclasses.replace(SETTINGS.rules, target_score=7))
    labels.make_labels(seven, other_rules, 1)
    incomplete = tmp_path / "incomplete"
    shutil.copytree(made, incomplete)
    label_set.shard_path(incomplete, 1).unlink()
    (tmp_path / "empty").mkdir()
    for folders, message in [
        ([tmp_path / "missing"], "is not a label set: it has no labels.json"),
        ([tmp_path / "empty"], "is not a label set"),
        ([incomplete], "is not complete: 1 of 3 shards missing"),
        ([made, made], "is named twice"),
        ([made, other_rules], "was labelled under other rules than"),
    ]:
        code, err = run_distil(capsys, "--labels", *map(str, folders), "--out", str(out))
        assert code == 2 and message in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("observation", np.nan, "observation holds NaN"),
        ("observation", 2.0, "observation flags .* must be 0 or 1"),
        ("values", 7.0, "values of legal actions must be chances"),
        ("player_action", -5, "player_action must be a legal action"),
    ],
)
def test_distil_refuses_a_damaged_set_naming_the_shard(made, tmp_path, capsys, column, value, message) -> None:
    folder = tmp_path / "damaged"
    shutil.copytree(made, folder)
    damage(folder, 2, column, value)
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(folder), "--out", str(out))
    assert code == 2 and re.search(f"shard_00002.npz: row 0: {message}", err), err
    assert not out.exists()


@pytest.mark.parametrize("code_name", ["ENOSPC", "EROFS"])
def test_distil_on_a_full_or_read_only_disk_is_one_line_exit_74(made, tmp_path, capsys, monkeypatch, code_name) -> None:
    def refused(file, **arrays):
        Path(file).write_bytes(b"partial")
        raise OSError(getattr(errno, code_name), os.strerror(getattr(errno, code_name)))

    monkeypatch.setattr(np, "savez_compressed", refused)
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), "--hidden", "8", "--epochs", "1")
    assert code == 74, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("python -m train.distil: cannot write ") and os.strerror(getattr(errno, code_name)) in last
    assert list(tmp_path.iterdir()) == []  # neither the student nor a temporary file


def test_distil_refuses_labels_that_cannot_fit_in_memory(made, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(os, "sysconf", lambda name: 4096 if name == "SC_PAGE_SIZE" else 2**18)  # a 1 GB machine
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out))
    assert code == 0, err  # 30 labels fit
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), "--suit-copies", "23")
    assert code == 0, err
    monkeypatch.setattr(distil, "LABEL_BYTES", 2**25)  # as if each label took 32 MB
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(tmp_path / "other.npz"))
    assert code == 2, err
    assert "these labels and the network need about 1.4 GB of memory and the machine has 1.0 GB" in err, err
    assert not (tmp_path / "other.npz").exists()


def test_without_ray_the_address_is_one_line_naming_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from train.rounds.labels import main\n"
        f"sys.exit(main(['--out', {str(tmp_path / 'labels')!r}, '--count', '12', '--address', '127.0.0.1:9']))\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install -e '.[rllib]'" in lines[0], done.stderr
    assert not (tmp_path / "labels").exists()


def test_distil_checks_a_new_networks_memory_before_reading_the_labels(made, tmp_path, capsys, monkeypatch) -> None:
    """Issue 57, item 10: ``--hidden 65536,65536`` was accepted, and failed with a traceback (torch
    could not allocate 17 GB); now it is refused first, with the labels' memory, as ``train`` does."""

    def read(*args, **kwargs):
        raise AssertionError("the labels were read before the network's size was checked")

    monkeypatch.setattr(distil, "read_labels", read)
    monkeypatch.setattr(os, "sysconf", lambda name: 4096 if name == "SC_PAGE_SIZE" else 2**22)  # a 16 GB machine
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), "--hidden", "65536,65536")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "these labels and the network need about" in err and "the machine has 16.0 GB" in err, err
    assert "(the network (--hidden 65536 65536) with its gradients and Adam's moments: " in err, err
    assert not out.exists()
