"""A seal on checkpoints whose format pickles (RLlib's): only this account's own are ever loaded.

RLlib writes its checkpoints with Python's pickle, which runs code when read; the project cannot
read them as data the way it reads its own (:mod:`train.run_folder.state_file`). So every such checkpoint
is sealed when written: ``seal.json`` lists every folder and every file of the tree with the
file's size and SHA-256, and an HMAC-SHA256 of that list under a key only this user account can
read (``~/.config/allfours/checkpoint.key``, made on first use, mode 0600; ``$ALLFOURS_KEY_FILE``
names another). ``--resume`` verifies the seal before RLlib opens anything: a checkpoint copied
from someone else, or changed since it was written, is refused unread. Share a run's
``final.npz`` instead, which is plain data.

The seal covers the tree as RLlib will read it, so a checkpoint holding anything the listing
cannot vouch for is refused: a symbolic link (to a file or a folder: its target could change
after the check, and RLlib follows it), a file that is not a regular one (a FIFO, a device, a
socket), or any folder or file not in the seal (an empty folder too). The key must be this
account's own and unreadable by others, as ssh requires of its keys: a key file with group or
other permissions is refused with the ``chmod 600`` that fixes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import BinaryIO

from agents.shared.regular_file import open_regular

from train.run_folder.state_file import read_json

SEAL_FILE = "seal.json"
SEAL_VERSION = 2  # 2: folders are listed too (version 1 listed files only)
KEY_ENV = "ALLFOURS_KEY_FILE"
KEY_BYTES = 32
MAX_SEAL_BYTES = 16 * 2**20  # a listing of a few hundred files takes a few tens of kB
FOLDER = "folder"  # a folder's entry in the listing (a file's is [size, sha256])


class SealError(ValueError):
    """A checkpoint without a valid seal of this account."""


def key_file() -> Path:
    configured = os.environ.get(KEY_ENV)
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "allfours" / "checkpoint.key"


def _open(path: Path) -> BinaryIO:
    """``path`` opened if it is a regular file and not a symbolic link (a FIFO put in its place
    cannot hang the open); a SealError otherwise."""
    try:
        return open_regular(path, follow_links=False)
    except OSError as err:
        raise SealError(f"{path} cannot be read as a plain file: {err.strerror or err}") from None


def _make_key(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile
        return
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))


def _key() -> bytes:
    """This account's key, made (readable by the owner only) if there is none yet; refused if
    another account owns it or could read it (it could then seal checkpoints as this one)."""
    path = key_file()
    if not path.exists() and not path.is_symlink():
        _make_key(path)
    with _open(path) as f:
        info = os.fstat(f.fileno())
        if info.st_uid != os.getuid():
            raise SealError(f"the checkpoint key {path} belongs to another account (uid {info.st_uid}); use your own")
        if info.st_mode & 0o077:
            raise SealError(
                f"the checkpoint key {path} can be read or changed by other users (mode {info.st_mode & 0o777:03o}): "
                f"make it yours alone with: chmod 600 {path}"
            )
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise SealError(f"the checkpoint key {path} is damaged ({len(key)} bytes, expected {KEY_BYTES})")
    return key


def _sha256(path: Path) -> tuple[int, str]:
    with _open(path) as f:
        return os.fstat(f.fileno()).st_size, hashlib.file_digest(f, "sha256").hexdigest()


def _listing(folder: Path) -> dict[str, object]:
    """Every entry under ``folder`` but the seal: relative path -> FOLDER or [size, sha256]; a
    SealError for a symbolic link or an entry that is neither a folder nor a regular file."""
    if folder.is_symlink() or not folder.is_dir():
        raise SealError(f"{folder} is not a folder (a checkpoint is a folder, not a link to one)")
    out: dict[str, object] = {}
    pending = [folder]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                path = Path(entry.path)
                name = path.relative_to(folder).as_posix()
                if entry.is_symlink():
                    raise SealError(f"{folder} holds a symbolic link, {name}: a checkpoint holds its own files")
                if entry.is_dir(follow_symlinks=False):
                    out[name] = FOLDER
                    pending.append(path)
                elif entry.is_file(follow_symlinks=False):
                    if name != SEAL_FILE:
                        out[name] = list(_sha256(path))
                else:
                    raise SealError(f"{folder} holds {name}, which is not a regular file (a FIFO, device or socket)")
    return dict(sorted(out.items()))


def _mac(listing: object) -> str:
    text = json.dumps({"version": SEAL_VERSION, "entries": listing}, sort_keys=True)
    return hmac.new(_key(), text.encode(), hashlib.sha256).hexdigest()


def seal(folder: Path) -> None:
    """Write ``folder/seal.json`` for the tree the folder holds now."""
    listing = _listing(folder)
    sealed = {"version": SEAL_VERSION, "entries": listing, "hmac": _mac(listing)}
    (folder / SEAL_FILE).write_text(json.dumps(sealed, indent=1))


def _read_seal(folder: Path) -> dict:
    path = folder / SEAL_FILE
    try:
        with _open(path) as f:
            sealed = read_json(f, MAX_SEAL_BYTES)
    except (SealError, OSError, ValueError, RecursionError) as err:
        raise SealError(f"{folder} has no readable {SEAL_FILE} ({type(err).__name__}: {err})") from None
    if not isinstance(sealed, dict) or not isinstance(sealed.get("hmac"), str):
        raise SealError(f"{folder} has no readable {SEAL_FILE} (not a seal)")
    version = sealed.get("version", 1 if "files" in sealed else None)  # version 1 had no number
    if version != SEAL_VERSION or "entries" not in sealed:
        raise SealError(
            f"{folder} has a seal of another version ({version!r}; this one reads {SEAL_VERSION}, "
            "which covers folders too): it cannot be verified, so it is not loaded"
        )
    return sealed


def verify(folder: Path) -> None:
    """A SealError unless ``folder`` holds exactly the folders and files this account sealed there,
    every one a real folder or regular file (no links, FIFOs or devices)."""
    sealed = _read_seal(folder)
    if not hmac.compare_digest(sealed["hmac"], _mac(sealed["entries"])):
        raise SealError(f"{folder} was not sealed by this account ({key_file()})")
    if _listing(folder) != sealed["entries"]:
        raise SealError(f"{folder} was changed after it was sealed")
