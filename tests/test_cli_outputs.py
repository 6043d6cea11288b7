"""What farlink writes and where: safe names, nothing outside the output folder, and no file
farlink did not write replaced without --force (the folder's .farlink-manifest.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from farlink.cli.app import main
from farlink.outputs import MANIFEST, MAX_NAME_BYTES, OutputError, OutputFolder, safe_name
from support import run

PRESET_FILE = Path(__file__).parents[1] / "python/farlink/scenarios/stpd-wireless.toml"


def named(tmp_path: Path, name_toml: str) -> Path:
    text = PRESET_FILE.read_text().replace('name = "stpd-wireless"', f"name = {name_toml}", 1)
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "text",
    ["../../../escape", "a/b", "..", ".", "a\x00b", "x" * 300, "\u00e9" * 200, "", "/etc/passwd",
     "C:\\temp\\x", ".hidden", "a\nb", "~"],
)  # fmt: skip
def test_safe_name_is_one_bounded_component(text):
    name = safe_name(text)
    assert name and "/" not in name and "\\" not in name
    assert name not in (".", "..") and not name.startswith(".")
    assert all(ch.isprintable() for ch in name)
    assert len(name.encode()) <= MAX_NAME_BYTES


def test_safe_name_keeps_ordinary_names_and_tells_long_ones_apart():
    assert safe_name("stpd-wireless") == "stpd-wireless"
    assert safe_name("x" * 300) != safe_name("x" * 301)


@pytest.mark.parametrize(
    ("name_toml", "expected"),
    [('"../../../escape"', "escape"), ('"' + "x" * 300 + '"', None), ('"a/b"', "a-b")],
)
def test_a_scenario_name_writes_inside_farlink_out_only(
    capsys, tmp_path, monkeypatch, name_toml, expected
):
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    scenario = named(tmp_path, name_toml)
    code, _, err = run(capsys, "simulate", str(scenario), "--duration", "1s")
    assert code == 0, err
    outside = files_under(tmp_path) - files_under(work / "farlink-out") - {scenario}
    assert outside == set()
    (folder,) = (work / "farlink-out" / "sim").iterdir()
    assert expected is None or folder.name == expected
    assert (folder / "summary.json").is_file()


def test_simulate_does_not_replace_a_file_it_did_not_write(capsys, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    mine = out / "summary.json"
    mine.write_text("my notes")
    code, _, err = run(capsys, "simulate", "stpd-wireless", "--duration", "1s", "--out", str(out))
    assert code == 2 and err.count("\n") == 1 and "--force" in err, err
    assert mine.read_text() == "my notes"
    assert not list(out.glob("*.parquet")), "nothing is written when one file is refused"
    code, _, err = run(
        capsys, "simulate", "stpd-wireless", "--duration", "1s", "--out", str(out), "--force"
    )
    assert code == 0, err
    assert json.loads(mine.read_text())["seed"] == 1


def test_simulate_replaces_its_own_files(capsys, tmp_path):
    out = tmp_path / "run"
    for _ in range(2):
        code, _, err = run(
            capsys, "simulate", "stpd-wireless", "--duration", "1s", "--out", str(out)
        )
        assert code == 0, err
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert "summary.json" in listed
    assert {p.name for p in out.iterdir()} - {MANIFEST} == set(listed)


def test_simulate_json_without_out_writes_no_trace(capsys, tmp_path, monkeypatch):
    # --json prints the document: the preset's traces are neither recorded nor written unless
    # --out names a folder; the document is the one a run with its traces gives.
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "simulate", "stpd-wireless", "--duration", "20s", "--json")
    assert code == 0, err
    folder = tmp_path / "farlink-out" / "sim" / "stpd-wireless"
    assert {p.name for p in folder.iterdir()} == {"summary.json", MANIFEST}
    code, traced, err = run(
        capsys, "simulate", "stpd-wireless", "--duration", "20s", "--json", "--out", "t"
    )
    assert code == 0, err
    assert {p.name for p in (tmp_path / "t").glob("*.parquet")} >= {"cwnd.parquet", "seq.parquet"}
    quiet, full = json.loads(out), json.loads(traced)
    for doc in (quiet, full):
        del doc["wall_time_s"]
    assert quiet == full
    # --interval's traces stay in memory.
    code, out, err = run(
        capsys, "simulate", "stpd-wireless", "--duration", "20s", "--json", "--interval", "5s"
    )
    assert code == 0, err
    assert len(json.loads(out)["intervals"]) == 4
    assert not list(folder.glob("*.parquet"))


def test_a_pcap_named_after_a_link_stays_in_the_folder(capsys, tmp_path):
    text = PRESET_FILE.read_text().replace('"R-D"', '"../../R-D"')
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    out = tmp_path / "o" / "p"
    code, _, err = run(
        capsys, "simulate", str(scenario), "--duration", "1s", "--pcap", "--out", str(out)
    )
    if code == 2:  # the core may refuse such a link name: then nothing is written at all
        assert not out.exists() or not any(out.iterdir()), err
        return
    assert code == 0, err
    assert files_under(tmp_path / "o") == files_under(out)
    assert (out / "R-D.pcap").is_file()


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("capture")
    argv = ["simulate", "stpd-wireless", "--duration", "5s", "--pcap", "--out", str(folder)]
    assert main(argv) == 0
    return folder / "R-D.pcap"


def test_fit_out_does_not_overwrite_a_file_it_did_not_write(capsys, tmp_path, capture):
    target = tmp_path / "notes.toml"
    target.write_text("# my own scenario\n")
    code, _, err = run(capsys, "fit", str(capture), "--out", str(target))
    assert code == 2 and err.count("\n") == 1 and "--force" in err, err
    assert target.read_text() == "# my own scenario\n"
    code, _, err = run(capsys, "fit", str(capture), "--out", str(target), "--force")
    assert code == 0, err
    assert target.read_text() != "# my own scenario\n"
    # Now farlink's own: replaced again without --force.
    code, _, err = run(capsys, "fit", str(capture), "--out", str(target))
    assert code == 0, err


def test_analyze_refuses_a_folder_it_did_not_make(capsys, tmp_path, capture):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    code, _, err = run(capsys, "analyze", str(capture), "--out", str(out))
    assert code == 2 and err.count("\n") == 1 and "--force" in err, err
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]


def test_reproduce_records_what_it_wrote(capsys, tmp_path):
    code, _, err = run(capsys, "reproduce", "zaghloul-table-6.1", "--out", str(tmp_path))
    assert code == 0, err
    folder = tmp_path / "reproduce"
    listed = set(json.loads((folder / MANIFEST).read_text())["files"])
    assert "zaghloul-table-6.1.json" in listed
    assert {p.name for p in folder.iterdir()} - {MANIFEST} == listed


def test_claim_refuses_names_that_leave_the_folder(tmp_path):
    folder = OutputFolder(tmp_path)
    for bad in ("../x", "a/b", "..", MANIFEST):
        with pytest.raises(OutputError):
            folder.claim(bad)
