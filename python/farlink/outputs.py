"""Where farlink writes: output folders and files, and the one error an OS refusal becomes.

Every file a command writes goes through here, so that a path the operating system refuses (a
file where a folder is expected, a folder without permission, a name too long) is reported as one
:class:`OutputError` naming the path, never as a traceback; names taken from scenario text are
made safe (:func:`safe_name`); and a file farlink did not write is not replaced without
``--force`` (:class:`OutputFolder`, its manifest; docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

__all__ = [
    "MANIFEST",
    "MAX_NAME_BYTES",
    "OutputError",
    "OutputFolder",
    "file_kind",
    "make_folder",
    "safe_name",
    "write_between_markers",
    "write_bytes",
    "write_text",
]


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


def _refuse_non_regular(path: Path, option: str) -> None:
    """A path where farlink means to write a regular file must not be a folder, a device, a
    pipe or a socket (``--force`` or not): writing there would not make the file asked for,
    and opening a device or a pipe can block or act on hardware."""
    try:
        mode = path.stat().st_mode
    except OSError:  # absent (or a dangling link, which claim() treats as a file)
        return
    if not stat.S_ISREG(mode):
        raise OutputError(
            f"{option}: {path} is {file_kind(mode)}, not a regular file; name a file to write"
        )


def file_kind(mode: int) -> str:
    """What a path's ``st_mode`` says it is, in words ("a folder", "a character device")."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((words for test, words in kinds if test(mode)), "not a regular file")


# --------------------------------------------------------------------------------------------
# Names taken from scenario text

MAX_NAME_BYTES = 100
"""The longest file or folder name farlink derives from scenario text, in UTF-8 bytes (file
systems allow 255; the rest is left for suffixes such as ``.parquet``)."""

_UNSAFE = re.compile(r"[^\w.+=@,-]+")


def write_between_markers(doc: Path, begin: str, end: str, text: str) -> None:
    """Puts ``text`` (lines, without a final newline) between the marker lines ``begin`` and
    ``end`` of ``doc`` (a generated section of the docs, written again by the make target that
    measures it), replacing what was there; a document without the markers gets them, with
    ``text``, at its end."""
    content = doc.read_text(encoding="utf-8") if doc.exists() else ""
    section = f"{begin}\n{text}\n{end}"
    if begin in content and end in content:
        head, rest = content.split(begin, 1)
        content = head + section + rest.split(end, 1)[1]
    else:
        content = content.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(content, encoding="utf-8")


def safe_name(text: str, fallback: str = "unnamed") -> str:
    """A file or folder name made from ``text`` that stays where it is put.

    Separators, control characters and anything else but letters, digits and ``._-+=@,`` become
    ``-``; parts made only of dots (``.``, ``..``) are dropped, and so is a leading dot (no hidden
    files); the result is at most :data:`MAX_NAME_BYTES` long, a name shortened or emptied ending
    in eight hex digits of the text's SHA-256 so that two long names stay apart.
    """
    parts = [p for p in _UNSAFE.split(str(text)) if p.strip(".")]
    name = "-".join(parts).lstrip(".")
    if name and len(name.encode("utf-8")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    head = name.encode("utf-8")[: MAX_NAME_BYTES - 9].decode("utf-8", "ignore")
    return f"{head or fallback}-{digest}"


# --------------------------------------------------------------------------------------------
# Folders farlink writes into, and how it recognises its own files

MANIFEST = ".farlink-manifest.json"
"""The file, in every folder farlink writes into, that lists the files farlink wrote there."""


class OutputFolder:
    """A folder farlink writes into, with the manifest of the files it wrote there.

    A file farlink is about to write that already exists is replaced only when the manifest
    lists it (farlink wrote it) or with ``force`` (``--force``); otherwise the command stops
    before writing anything it would replace.
    """

    def __init__(self, path: str | os.PathLike[str], option: str = "--out", force: bool = False):
        self.path = make_folder(path, option)
        self.option = option
        self.force = force
        self._manifest = self.path / MANIFEST
        self._files = set(self._read_manifest())

    def _read_manifest(self) -> list[str]:
        try:
            doc = json.loads(self._manifest.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            # An unreadable or mangled manifest vouches for nothing.
            return []
        files = doc.get("files") if isinstance(doc, dict) else None
        return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []

    def owns(self, name: str) -> bool:
        """Whether farlink wrote ``name`` here (the manifest lists it)."""
        return name in self._files

    def is_foreign(self) -> bool:
        """Holds files and no manifest: a folder farlink did not make (subfolders aside, which
        farlink's default folder holds, one per command)."""
        return not self._manifest.exists() and any(p.is_file() for p in self.path.iterdir())

    def claim(self, *names: str) -> list[Path]:
        """The paths of ``names``, refusing any that exists and is not farlink's (see class)."""
        paths = []
        for name in names:
            if Path(name).name != name or name in (".", "..", MANIFEST):
                raise OutputError(f"{self.option}: {name!r} is not a file name farlink writes")
            path = self.path / name
            _refuse_non_regular(path, self.option)
            if (path.exists() or path.is_symlink()) and not (self.force or self.owns(name)):
                raise OutputError(
                    f"{self.option}: {path} exists and farlink did not write it (it is not in "
                    f"{self._manifest}); move it away or add --force to replace it"
                )
            paths.append(path)
        return paths

    def claim_folder(self) -> None:
        """For outputs whose names a library chooses: refuse a folder farlink did not make,
        and mark one it may write into with its manifest at once, before any file is written,
        so that a run killed halfway leaves a folder its rerun recognises as farlink's."""
        if self.is_foreign() and not self.force:
            raise OutputError(
                f"{self.option}: {self.path} holds files and no {MANIFEST}, so farlink did not "
                "make it; name a new or empty folder, or add --force to write into it"
            )
        self.record([])

    def record(self, paths: list[Path] | tuple[Path, ...]) -> None:
        """Add ``paths`` (files in this folder) to the manifest, and save it."""
        self._files.update(p.name for p in paths if p.parent == self.path)
        doc = {
            "about": "the files farlink wrote here, the only ones it replaces (docs/security.md)",
            "files": sorted(self._files),
        }
        write_text(self._manifest, json.dumps(doc, indent=1) + "\n", self.option)

    def remove_stale(self, keep: list[str], suffixes: tuple[str, ...]) -> list[Path]:
        """Delete the files farlink wrote here before (manifest-listed, ending in one of
        ``suffixes``) that are not in ``keep``: a new run's folder holds that run's files only."""
        stale = [
            self.path / n for n in sorted(self._files) if n.endswith(suffixes) and n not in keep
        ]
        for path in stale:
            try:
                path.unlink(missing_ok=True)
            except OSError as err:
                raise OutputError(f"{self.option}: cannot remove {path} ({_reason(err)})") from None
        self._files.difference_update(p.name for p in stale)
        return stale

    def listing(self) -> dict[str, tuple[int, int]]:
        """Each file's (modification time, size): compare one taken before a library writes."""
        found = {}
        for p in self.path.iterdir():
            if p.is_file() and not p.is_symlink():
                st = p.stat()
                found[p.name] = (st.st_mtime_ns, st.st_size)
        return found

    def record_written(self, before: dict[str, tuple[int, int]]) -> list[Path]:
        """Record every file new or changed since ``before`` (a :meth:`listing`)."""
        written = [
            self.path / name
            for name, stamp in sorted(self.listing().items())
            if before.get(name) != stamp and name != MANIFEST
        ]
        self.record(written)
        return written

    def write_bytes(self, name: str, data: bytes) -> Path:
        (path,) = self.claim(name)
        write_bytes(path, data, self.option)
        self.record([path])
        return path

    def write_text(self, name: str, text: str) -> Path:
        return self.write_bytes(name, text.encode("utf-8"))
