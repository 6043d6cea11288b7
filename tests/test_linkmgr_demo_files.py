"""The files ``farlink linkmgr demo`` writes in its ``--dir``: its own are replaced, anyone
else's are refused without ``--force`` (docs/security.md), before anything is started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farlink.linkmgr.demo import claim_demo_files, demo_file_names
from farlink.outputs import MANIFEST, OutputError


def test_a_log_farlink_did_not_write_is_left_alone(tmp_path: Path) -> None:
    # The demo removed every *.sqlite* and *.stderr of its folder to start afresh.
    mine = tmp_path / "air.sqlite"
    mine.write_bytes(b"someone's database")
    notes = tmp_path / "notes.stderr"
    notes.write_text("kept")
    with pytest.raises(OutputError, match=r"--dir: .*air\.sqlite exists and farlink did not"):
        claim_demo_files(tmp_path, force=False)
    assert mine.read_bytes() == b"someone's database"
    assert notes.read_text() == "kept"
    assert not (tmp_path / MANIFEST).exists()


def test_its_own_earlier_run_is_replaced_and_force_replaces_anything(tmp_path: Path) -> None:
    claim_demo_files(tmp_path, force=False)
    listed = json.loads((tmp_path / MANIFEST).read_text())["files"]
    assert set(listed) == set(demo_file_names())
    (tmp_path / "air.sqlite").write_bytes(b"an earlier run's log")
    (tmp_path / "air-daemon.stderr").write_text("an earlier run's words")
    (tmp_path / "air.toml").write_text("an earlier run's configuration")
    claim_demo_files(tmp_path, force=False)
    # Logs and stderr start afresh; configurations are rewritten by the run itself.
    assert not (tmp_path / "air.sqlite").exists()
    assert not (tmp_path / "air-daemon.stderr").exists()
    assert (tmp_path / "air.toml").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "ground.sqlite-wal").write_bytes(b"x")
    claim_demo_files(other, force=True)
    assert not (other / "ground.sqlite-wal").exists()


def test_a_folder_where_a_file_is_meant_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "ground.sqlite").mkdir()
    with pytest.raises(OutputError, match="not a regular file"):
        claim_demo_files(tmp_path, force=True)
