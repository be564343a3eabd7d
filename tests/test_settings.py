"""Every training setting is checked before any work: a value out of range, a run name that cannot
be a folder, or a number too long to read is exit 2 with a message naming the setting, and
nothing is written (train/config.py, train/rllib/config.py)."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest
import yaml

from train import config as config_module
from train.__main__ import main as train_main
from train.config import (
    RANGES,
    ConfigError,
    TrainConfig,
    config_from_dict,
    load_config,
    run_folder,
)  # fmt: skip
from train.rllib.config import RLLIB_CONFIG, RLlibConfig, load_rllib_config

QUICK = config_module.CONFIG_DIR / "quick.yaml"


def quick_with(line: str) -> str:
    """The quick config's text with the top-level ``line`` in place of its own line of that key (a
    key given twice is refused as such)."""
    key = line.split(":", 1)[0]
    kept = [own for own in QUICK.read_text().splitlines() if not own.startswith(key + ":")]
    return "\n".join([*kept, line]) + "\n"
HUGE = 10**4000  # an integer Python can still print; 10**5000 cannot come from YAML (see below)
INTEGER_RANGES = {name: (r.low, r.high) for name, r in RANGES.items() if isinstance(r.low, int) and not r.each}


def numeric_fields(cls: type) -> dict[str, typing.Any]:
    """Every field of ``cls`` that is a number or holds numbers, with its type."""
    hints = typing.get_type_hints(cls)
    numeric = (int, float, list[int], dict[str, int], dict[str, float])
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if hints[f.name] in numeric}


@pytest.mark.parametrize("cls", [TrainConfig, RLlibConfig])
def test_every_number_of_either_config_has_a_range(cls: type) -> None:
    assert not set(numeric_fields(cls)) - set(RANGES)


def huge_value(hint: typing.Any, value: typing.Any) -> typing.Any:
    if hint in (int, float):
        return HUGE
    if hint == list[int]:
        return [HUGE]
    return {next(iter(value), "random"): HUGE}


@pytest.mark.parametrize("name", sorted(numeric_fields(TrainConfig)))
def test_a_huge_value_of_any_number_is_refused_naming_it(name: str) -> None:
    hint = numeric_fields(TrainConfig)[name]
    value = getattr(load_config(QUICK), name)
    with pytest.raises(ConfigError, match=rf"{name}(\[.*\])? must be .* got an integer of about 4,000 digits"):
        config_from_dict({name: huge_value(hint, value)})
    if hint is float:
        for bad in (float("nan"), float("inf"), -float("inf"), 1e300):
            with pytest.raises(ConfigError, match=f"{name} must be a finite number in"):
                config_from_dict({name: bad})


@pytest.mark.parametrize("name", sorted(numeric_fields(RLlibConfig)))
def test_a_huge_value_of_any_rllib_number_is_refused_naming_it(name: str) -> None:
    hint = numeric_fields(RLlibConfig)[name]
    value = getattr(load_rllib_config(RLLIB_CONFIG), name)
    with pytest.raises(ConfigError, match=rf"{name}(\[.*\])? must be .* got an integer of about 4,000 digits"):
        config_from_dict({name: huge_value(hint, value)}, cls=RLlibConfig)


@pytest.mark.parametrize("name", sorted(INTEGER_RANGES))
def test_each_integer_range_is_exact(name: str) -> None:
    low, high = INTEGER_RANGES[name]
    cls = TrainConfig if name in numeric_fields(TrainConfig) else RLlibConfig
    # the setting that must lie above or below this one, kept out of the way
    others = {
        "label_worlds": {"label_confirm": 0}, "label_confirm": {"label_worlds": 1}, "rollout_steps": {"batch_size": 1},
    }  # fmt: skip
    for value, ok in ((low - 1, False), (low, True), (high, True), (high + 1, False)):
        change = {**others.get(name, {}), name: value}
        if name == "label_confirm" and value == 1:  # confirm must be 0 or more than label_worlds
            continue
        if ok:
            config_from_dict(change, cls=cls)
        else:
            with pytest.raises(ConfigError, match=f"{name} must be an integer in"):
                config_from_dict(change, cls=cls)


def test_rllib_batch_size_is_checked_against_its_rollout() -> None:
    config_from_dict({"rollout_steps": config_module.MAX_BATCH, "batch_size": config_module.MAX_BATCH}, cls=RLlibConfig)
    with pytest.raises(ConfigError, match=r"batch_size \(600\) must not exceed rollout_steps \(500\)"):
        config_from_dict({"rollout_steps": 500, "batch_size": 600}, cls=RLlibConfig)


@pytest.mark.parametrize("cls", [TrainConfig, RLlibConfig])
def test_one_file_holds_every_default_of_each_config(cls: type, tmp_path) -> None:
    defaults = yaml.safe_load(cls.DEFAULTS_FILE.read_text())
    assert sorted(defaults) == sorted(f.name for f in dataclasses.fields(cls))  # every option (in the file's order)
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(cls))  # fmt: skip
    assert config_from_dict({}, cls=cls).to_dict() == defaults  # (dicts equal whatever their order)
    broken = tmp_path / "defaults.yaml"
    broken.write_text(yaml.safe_dump({k: v for k, v in defaults.items() if k != "seed"}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cls, "DEFAULTS_FILE", broken)
        with pytest.raises(ConfigError, match=r"must give every option its default; missing \['seed'\]"):
            config_from_dict({}, cls=cls)


def test_the_rllib_options_both_backends_have_carry_the_sb3_names() -> None:
    sb3, rllib = {f.name for f in dataclasses.fields(TrainConfig)}, {f.name for f in dataclasses.fields(RLlibConfig)}
    assert not set(RLlibConfig.RENAMED) & rllib  # an old name is no option now...
    assert set(RLlibConfig.RENAMED.values()) <= rllib  # ...and names one
    assert {"n_epochs", "batch_size", "learning_rate", "clip_range", "ent_coef", "vf_coef", "opponents"} <= sb3 & rllib
    assert "horizon" not in rllib  # RLlib's episode ends a match or a deal from 0-0; SB3's horizon cuts returns


def test_an_old_rllib_option_name_says_what_it_is_called_now(tmp_path) -> None:
    old = tmp_path / "old.yaml"
    old.write_text("num_epochs: 2\nminibatch_size: 100\ntrain_batch_size: 400\nleague_size: 2\nnum_env_runner: 2\n")
    with pytest.raises(ConfigError) as error:
        load_rllib_config(old)
    message = str(error.value)
    for renamed in ("league_size is now max_snapshots", "minibatch_size is now batch_size", "num_epochs is now n_epochs",
                    "train_batch_size is now rollout_steps"):  # fmt: skip
        assert renamed in message, message
    assert "unknown option(s) ['num_env_runner']" in message, message  # a typo: no new name to give


def test_search_settings_use_searchs_own_caps() -> None:
    from agents.search import MAX_WORLDS

    assert INTEGER_RANGES["label_worlds"][1] == INTEGER_RANGES["label_confirm"][1] == MAX_WORLDS


# ---------------------------------------------------------------- the reproductions, on the command line


def run_train(tmp_path: Path, capsys: pytest.CaptureFixture, text: str, *more: str) -> str:
    """``python -m train`` with a config of ``text`` (quick's other options): exit 2 and its message."""
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--config", str(config), "--output-dir", str(tmp_path / "runs"), "--quiet", *more])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err, err
    assert not (tmp_path / "runs").exists()  # refused before anything was written
    return err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"label_worlds": 100_000_000}, r"label_worlds must be an integer in \[1, 4,096\], got 100000000"),
        ({"label_confirm": 1_000_000_000}, r"label_confirm must be an integer in \[0, 4,096\] \(0: off\)"),
        ({"eval_boards": 10**12}, r"eval_boards must be an integer in \[1, 100,000\], got 1000000000000"),
        ({"opponents": {"self": 1.0, "search:worlds=100000000": 1.0}}, "opponents: .*worlds"),
    ],
)
def test_settings_that_failed_after_work_started_are_exit_2(tmp_path, capsys, change, message) -> None:
    text = yaml.safe_dump({**yaml.safe_load(QUICK.read_text()), **change})
    err = run_train(tmp_path, capsys, text)
    assert re.search(message, err), err


@pytest.mark.parametrize(
    "name", ["a\0b", "a/b", "..", ".", "", "x" * 256, "é" * 128, "a\nb", "\x1b[31mred", "a\\b", "tab\there", "\u2028"]
)
def test_a_run_name_that_cannot_be_a_folder_is_exit_2(tmp_path, capsys, name: str) -> None:
    text = quick_with(yaml.safe_dump({"run_name": name}).strip())
    assert "run_name must be a plain folder name" in run_train(tmp_path, capsys, text)


def test_a_run_name_on_the_command_line_is_checked_too_with_resume(tmp_path, capsys) -> None:
    for more in (["--run-name", "a\x1bb"], ["--run-name", "a\x1bb", "--resume"]):
        with pytest.raises(SystemExit) as exit_info:
            train_main(["--output-dir", str(tmp_path / "runs"), "--quiet", *more])
        assert exit_info.value.code == 2 and "run_name must be a plain folder name" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="run_name"):
        run_folder("..", str(tmp_path))
    with pytest.raises(ConfigError, match="output_dir must be a folder's path"):
        run_folder("ok", "a\0b")
    with pytest.raises(ConfigError, match="output_dir must be a folder's path"):
        config_from_dict({"output_dir": "runs\0/x"})


@pytest.mark.parametrize(
    "line",
    ["seed: 1" + "0" * 5000, "rules: {target_score: 1" + "0" * 5000 + "}", "net_arch: [64, 1" + "0" * 5000 + "]",
     "opponents: {self: 1" + "0" * 5000 + "}", "total_steps: -1" + "0" * 5000],
)  # fmt: skip
def test_a_5000_digit_integer_anywhere_is_exit_2(tmp_path, capsys, line: str) -> None:
    err = run_train(tmp_path, capsys, quick_with(line))
    assert "holds a value that cannot be read: Exceeds the limit (4300 digits)" in err, err


@pytest.mark.parametrize(
    "line, message",
    [
        ("total_steps: 1" + "0" * 4000, "total_steps must be an integer in .* got an integer of about 4,000 digits"),
        ("learning_rate: 1.0e+999", r"learning_rate must be a finite number in \(0, 1\], got inf"),
        ("gamma: .nan", "gamma must be a finite number"),
        ("run_name: " + "[" * 50_000, "holds a value that cannot be read|not valid YAML"),
    ],
)
def test_other_unreadable_or_huge_values_are_exit_2(tmp_path, capsys, line: str, message: str) -> None:
    err = run_train(tmp_path, capsys, quick_with(line))
    assert re.search(message, err), err


def test_a_config_file_too_large_is_refused_unread(tmp_path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * 200_000)
    with pytest.raises(ConfigError, match="a config file is far smaller"):
        load_config(big)


def alias_bomb(key: str) -> str:
    """``key``'s value as nine lines of aliases of aliases: 10 lists of 10 of 10 ... 10**9 strings."""
    inner = "  target_score:" if key == "rules" else "  expert:"
    lines = [f"{key}:", inner, '    - &a ["x","x","x","x","x","x","x","x","x","x"]']
    for before, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"    - &{name} [" + ",".join([f"*{before}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("key", ["rules", "distil_eval"])
def test_a_yaml_alias_bomb_is_exit_2_at_once(tmp_path, key) -> None:
    """Issue 57, item 6: aliases of aliases in ``rules:`` or ``distil_eval:`` hung ``python -m train``
    (2.4 GB and growing after 100 s). Run capped (4 GB, 60 s) so that a regression fails, not the machine."""
    import resource
    import subprocess
    import sys

    config = tmp_path / "bomb.yaml"
    config.write_text(quick_with(alias_bomb(key).rstrip("\n")))

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "train", "--config", str(config), "--output-dir", str(tmp_path / "runs"), "--quiet"],
        capture_output=True, text=True, timeout=60, preexec_fn=capped, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "is not valid YAML: an alias (*name) is not allowed in a config: write the value out (line" in lines[0]
    assert not (tmp_path / "runs").exists()


def test_any_alias_is_refused(tmp_path, capsys) -> None:
    err = run_train(tmp_path, capsys, "seed: &s 3\n" + quick_with("total_steps: *s"))
    assert "an alias (*name) is not allowed in a config" in err


def test_a_long_rule_value_is_quoted_cut_short(tmp_path, capsys) -> None:
    """Issue 57, item 6: the rule check printed the whole value (here 100,000 characters)."""
    err = run_train(tmp_path, capsys, quick_with("rules: {target_score: '" + "x" * 100_000 + "'}"))
    line = err.strip().splitlines()[-1]
    assert "rule 'target_score' must be a positive integer" in line and len(line) < 400, len(line)


def test_a_config_that_is_a_fifo_or_folder_is_refused_unread(tmp_path, capsys) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "folder.yaml").mkdir()
    for name, what in (("fifo.yaml", "a FIFO"), ("folder.yaml", "a folder")):
        with pytest.raises(ConfigError, match=f"{name} cannot be read: {what}, not a regular file"):
            load_config(tmp_path / name)  # at once: not waiting for a writer
