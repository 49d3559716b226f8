"""Whole-file writes for run folders, and the hashes checkpoints record.

``atomic_write_*`` writes to ``<name>.tmp`` and renames it over ``<name>``: a reader, or a
resume after the process is killed at any instant, sees the old file or the new one, never a
part. Files are handed to the operating system, not forced to the disk (``fsync`` costs about
8 ms a file on a typical disk, several times a checkpoint's own cost); after an operating-system
crash or a power cut, the hashes let a resume tell a damaged file from a whole one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: Suffix of a file being written; a leftover one is what a kill mid-write leaves.
TMP_SUFFIX = ".tmp"
_CHUNK_BYTES = 1 << 20


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file, rename)."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    tmp.write_bytes(data)
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def file_sha256(path: Path, n_bytes: int | None = None) -> str:
    """SHA-256 (hex) of ``path``'s first ``n_bytes`` bytes (all of it when None)."""
    return hash_prefix(path, n_bytes).hexdigest()


def hash_prefix(path: Path, n_bytes: int | None = None) -> hashlib._Hash:
    """A SHA-256 hasher fed with ``path``'s first ``n_bytes`` bytes (all when None)."""
    hasher = hashlib.sha256()
    left = n_bytes
    with open(path, "rb") as fh:
        while left is None or left > 0:
            chunk = fh.read(_CHUNK_BYTES if left is None else min(_CHUNK_BYTES, left))
            if not chunk:
                break
            hasher.update(chunk)
            if left is not None:
                left -= len(chunk)
    return hasher
