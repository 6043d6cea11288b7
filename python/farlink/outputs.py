"""Where farlink writes: output folders and files, and the one error an OS refusal becomes.

Every file a command writes goes through here, so that a path the operating system refuses (a
file where a folder is expected, a folder without permission, a name too long) is reported as one
:class:`OutputError` naming the path, never as a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OutputError", "make_folder", "write_bytes", "write_text"]


class OutputError(Exception):
    """An output path farlink cannot or must not write; the message names the path."""


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def make_folder(folder: str | os.PathLike[str], option: str = "--out") -> Path:
    """Create ``folder`` (and its parents) unless it is there; refuse a file in its place."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option}: {path} is a file, not a folder; name a folder to write into")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{option}: cannot create the folder {path} ({_reason(err)})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{option}: cannot write into the folder {path} (permission denied)")
    return path


def write_bytes(path: Path, data: bytes, option: str = "--out") -> Path:
    try:
        path.write_bytes(data)
    except OSError as err:
        raise OutputError(f"{option}: cannot write {path} ({_reason(err)})") from None
    return path


def write_text(path: Path, text: str, option: str = "--out") -> Path:
    return write_bytes(path, text.encode("utf-8"), option)
