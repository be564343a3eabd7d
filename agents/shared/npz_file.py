"""Read an ``.npz`` file as plain arrays and nothing else, checked before anything is allocated.

Policy files and training checkpoints are shared between people, so reading one must neither run
code nor let the file choose how much memory this process takes. :func:`read_npz` therefore:

- opens the file once, without blocking, and refuses anything but a regular file (a FIFO would
  hang the read, a device such as ``/dev/zero`` never ends): :mod:`agents.shared.regular_file`;
- refuses a member that is not an ``.npy`` array (numpy's own reader would hand it back as bytes);
- parses each member's header first and refuses object arrays (pickles) and unknown formats;
- checks each member's declared shape against the member's own size in the archive, and that size
  against what its compressed bytes can hold (deflate expands at most about 1,032 times), so a
  header that claims terabytes is refused before numpy allocates them;
- reads the arrays with pickling off.

Every failure is an :class:`NpzError` (a ValueError) that names the member; callers name the file.
"""

from __future__ import annotations

import math
import struct
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .regular_file import open_regular

NPY_SUFFIX = ".npy"
MAX_DEFLATE_RATIO = 1100  # deflate's limit is about 1,032 bytes out per byte in; a little room above it
ENCRYPTED = 0x1  # a zip member's flag bit: zipfile would ask for a password
MAX_HEADER_READ = 1 << 16  # header bytes read to parse one member's header (numpy writes at most a few hundred)


# What reading a damaged archive raises: zipfile's and numpy's errors, a deflate stream's
# (zlib.error), and a header numpy cannot tokenize or parse.
DAMAGED = (
    ValueError, EOFError, zipfile.BadZipFile, NotImplementedError, zlib.error, SyntaxError, tokenize.TokenError,
    OverflowError, struct.error,
)  # fmt: skip


class NpzError(ValueError):
    """An ``.npz`` file that is not plain arrays, or whose arrays do not fit its own size."""


def read_npz(path: str | Path, max_bytes: int) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` at ``path`` by name (the member's name without ``.npy``).

    ``max_bytes`` caps the bytes of all arrays together. Raises NpzError for a file that is not
    a zip of plain ``.npy`` arrays within those sizes, OSError if it cannot be read at all.
    """
    with open_regular(path) as file:  # one open: the arrays read are those checked
        try:
            with zipfile.ZipFile(file) as archive:
                names = _check_members(archive, max_bytes)
        except (zipfile.BadZipFile, NotImplementedError) as err:  # (NotImplementedError: a compression it lacks)
            raise NpzError(f"not an .npz archive: {err}") from None
        file.seek(0)
        try:
            with np.load(file, allow_pickle=False) as data:
                return {name: data[name] for name in names}
        except DAMAGED as err:  # a member cut short, with a bad CRC or deflate stream
            raise NpzError(f"an array cannot be read: {type(err).__name__}: {shorten(str(err))}") from None


def shorten(text: str, limit: int = 200) -> str:
    """A text for a message (an error's, which may quote a damaged header at length), cut at ``limit``."""
    return text if len(text) <= limit else f"{text[:limit]}..."


def _check_members(archive: zipfile.ZipFile, max_bytes: int) -> list[str]:
    names: list[str] = []
    total = 0
    for info in archive.infolist():
        member = info.filename
        if not member.endswith(NPY_SUFFIX):
            raise NpzError(f"member {shorten(repr(member))} is not an .npy array; an .npz holds arrays only")
        name = member[: -len(NPY_SUFFIX)]
        if info.flag_bits & ENCRYPTED:
            raise NpzError(f"member {shorten(repr(member))} is encrypted; an .npz holds plain arrays")
        if name in names:
            raise NpzError(f"array {shorten(repr(name))} appears twice")
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 1024:
            raise NpzError(
                f"member {shorten(repr(member))} claims {info.file_size:,} bytes from {info.compress_size:,} "
                "compressed; "
                "no real array compresses that far"
            )
        dtype, shape, header_bytes = _header(archive, info)
        data_bytes = math.prod(shape) * dtype.itemsize
        if header_bytes + data_bytes != info.file_size:
            raise NpzError(
                f"array {shorten(repr(name))} declares shape {shorten(str(shape))} of {dtype} ({data_bytes:,} bytes), "
                "but its member "
                f"holds {max(info.file_size - header_bytes, 0):,} bytes of data"
            )
        total += data_bytes
        if total > max_bytes:
            raise NpzError(f"the arrays take more than {max_bytes:,} bytes; such a file is refused")
        names.append(name)
    return names


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[np.dtype, tuple[int, ...], int]:
    """The dtype, shape and header length of one ``.npy`` member, read from its first bytes."""
    where = f"array {shorten(repr(info.filename[: -len(NPY_SUFFIX)]))}"
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            if version not in readers:
                raise NpzError(f"{where} has .npy format version {version}; readable: {sorted(readers)}")
            shape, _, dtype = readers[version](member, max_header_size=MAX_HEADER_READ)
            header_bytes = member.tell()
    except NpzError:
        raise
    except (*DAMAGED, OSError) as err:
        raise NpzError(f"{where} has no valid .npy header: {type(err).__name__}: {shorten(str(err))}") from None
    if dtype.hasobject:
        raise NpzError(f"{where} is an object array (a pickle); only plain numbers and text are read")
    return dtype, tuple(int(n) for n in shape), header_bytes
