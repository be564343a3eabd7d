"""A seal on checkpoints whose format pickles (RLlib's): only this account's own are ever loaded.

RLlib writes its checkpoints with Python's pickle, which runs code when read; the project cannot
read them as data the way it reads its own (:mod:`train.state_file`). So every such checkpoint
is sealed when written: ``seal.json`` lists each file's size and SHA-256, and an HMAC-SHA256 of
that list under a key only this user account can read (``~/.config/allfours/checkpoint.key``,
made on first use, mode 0600; ``$ALLFOURS_KEY_FILE`` names another). ``--resume`` verifies the
seal before RLlib opens anything: a checkpoint copied from someone else, or changed since it was
written, is refused unread. Share a run's ``final.npz`` instead, which is plain data.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

SEAL_FILE = "seal.json"
KEY_ENV = "ALLFOURS_KEY_FILE"
KEY_BYTES = 32


class SealError(ValueError):
    """A checkpoint without a valid seal of this account."""


def key_file() -> Path:
    configured = os.environ.get(KEY_ENV)
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "allfours" / "checkpoint.key"


def _key() -> bytes:
    """This account's key, made (readable by the owner only) if there is none yet."""
    path = key_file()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it meanwhile
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(KEY_BYTES))
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise SealError(f"the checkpoint key {path} is damaged ({len(key)} bytes, expected {KEY_BYTES})")
    return key


def _listing(folder: Path) -> dict[str, list]:
    """Every file under ``folder`` but the seal: relative path -> [size, sha256]."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != SEAL_FILE):
        out[path.relative_to(folder).as_posix()] = [path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()]
    return out


def _mac(listing: dict[str, list]) -> str:
    return hmac.new(_key(), json.dumps(listing, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def seal(folder: Path) -> None:
    """Write ``folder/seal.json`` for the files the folder holds now."""
    listing = _listing(folder)
    (folder / SEAL_FILE).write_text(json.dumps({"files": listing, "hmac": _mac(listing)}, indent=1))


def verify(folder: Path) -> None:
    """A SealError unless ``folder`` holds exactly the files this account sealed there."""
    try:
        sealed = json.loads((folder / SEAL_FILE).read_text())
        listing, mac = sealed["files"], sealed["hmac"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SealError(f"{folder} has no readable {SEAL_FILE} ({type(err).__name__}: {err})") from None
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(listing)):
        raise SealError(f"{folder} was not sealed by this account ({key_file()})")
    if _listing(folder) != listing:
        raise SealError(f"{folder} was changed after it was sealed")
