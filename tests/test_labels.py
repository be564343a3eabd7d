"""Search labels (train.labels, train.label_set) and the student fitted to them (train.distil)."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from agents.expert import expert_actions
from agents.policy import ADVISED_LAYOUT, PolicyBot, batch_inputs, load_weights
from agents.search import SearchBot
from allfours_env.observation import suit_relabelling
from allfours_env.rules import DEFAULT_RULES
from train import distil, label_set, labels

PRETRAINED = Path(agents.__file__).parent / "pretrained" / "allfours_v1.npz"
SETTINGS = label_set.LabelSettings(
    count=30, worlds=4, margin=0.01, rollout="expert", player="expert", seed=7, shard_rows=12, tables=4,
    rules=dataclasses.asdict(DEFAULT_RULES), confirm=8,
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


def test_other_settings_in_the_same_folder_are_refused(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(made, folder)
    with pytest.raises(label_set.LabelSetError, match="worlds differ"):
        labels.make_labels(dataclasses.replace(SETTINGS, worlds=8), folder, workers=1)


def test_a_bad_shard_is_refused_with_its_name(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(made, folder)
    columns = dict(shards(made)[0])
    columns["values"] = np.where(columns["action_mask"], 2.0, np.nan).astype(np.float32)
    np.savez(label_set.shard_path(folder, 0), **columns)
    with pytest.raises(label_set.LabelSetError, match="shard_00000.npz: values are chances"):
        shards(folder)
    label_set.shard_path(folder, 2).unlink()
    with pytest.raises(label_set.LabelSetError, match="1 of 3 shards missing"):
        shards(folder)


def test_the_player_must_answer_in_batches() -> None:
    with pytest.raises(ValueError, match="act_batch"):
        labels.Recorder(agents.make("rule_based"))


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
    p = distil.soft_targets(values, mask, 0.01)
    assert p[0, 9] / p[0, 3] == pytest.approx(np.e, rel=1e-4)
    assert p[0, ~mask[0]].sum() == 0


def test_against_opponents_only_the_players_decisions_are_labelled(tmp_path: Path) -> None:
    settings = dataclasses.replace(SETTINGS, count=12, confirm=0, opponents="rule_based")
    labels.make_labels(settings, tmp_path, workers=1)
    (shard,) = shards(tmp_path)
    np.testing.assert_array_equal(expert_actions(shard["observation"], shard["action_mask"]), shard["player_action"])
    recorder = labels.Recorder(agents.make("expert"))
    rng = np.random.default_rng(0)
    for table in range(2):
        bots = labels._seats(recorder, "rule_based", table, rng)
        assert [bot is recorder for bot in bots] == [seat % 2 == table for seat in range(4)]


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
    rows = distil.SparseRows.room(60, 30)
    rows.put(0, dense[:20])
    rows.put(20, dense[20:])
    rows = rows.head(50)
    assert len(rows) == 50 and rows.non_zeros == (dense != 0).sum()
    pick = np.array([7, 49, 0, 7, 23])
    np.testing.assert_array_equal(rows.dense(pick), dense[pick].astype(np.float16).astype(np.float32))
    assert rows.dense(np.array([], dtype=np.int64)).shape == (0, 30)
    assert len(rows.columns) == -(-rows.non_zeros // block)  # blocks allocated as they are reached
