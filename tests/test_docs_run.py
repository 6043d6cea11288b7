"""Every command and code block of README.md and docs/*.md, run as a reader would run it.

A fenced block is run according to its kind:

- a block of ``farlink`` command lines (``\\`` continues a line, ``#`` starts a comment): each
  command in order, in one fresh folder, each must exit 0;
- a ``python`` block: as one script in that folder;
- a ``toml`` block: parsed; one marked ``<!-- docs-run: scenario -->`` is a complete scenario,
  and ``farlink simulate`` runs it.

The line before a fence may mark it: ``<!-- docs-run: not run: REASON -->`` (a synopsis, output,
equations, a script for a cluster) or ``<!-- docs-run: slow: REASON -->`` (run with ``-m slow``).
Any other block that is not made of ``farlink`` commands fails the test until it is marked.
A marked block of ``farlink`` commands is still run, as short variants of its commands (a
shorter run, loopback, two modems), by tests/test_documented_defaults.py, which fails for a
command it has no variant for.
The folder holds what the documents refer to by name: ``drops.csv`` (a call-drop log),
``trace.pcap`` (a capture of a short simulation) and ``events.sqlite`` (a synthetic link-manager
event log).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import clock_marks

ROOT = Path(__file__).parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"<!--\s*docs-run:\s*(not run|slow|scenario)\s*(?::\s*(.*?))?\s*-->", re.S)
BIN = Path(sys.executable).parent
TIME_LIMIT_S = 300


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    language: str
    body: str
    mark: str | None
    reason: str | None

    @property
    def id(self) -> str:
        return f"{self.document.name}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
            mark = MARK.search(before)
            found.append(
                Block(
                    document,
                    text[: match.start()].count("\n") + 1,
                    match[1],
                    match[2],
                    mark[1] if mark else None,
                    mark[2] if mark else None,
                )
            )
    return found


def commands(body: str) -> list[list[str]] | None:
    """The block's command lines as argument lists, or None if any line is not a command."""
    joined = re.sub(r"\\\n", " ", body)
    found, pending = [], ""
    for line in joined.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending = f"{pending}\n{line}" if pending else line
        try:
            argv = shlex.split(pending, comments=True)
        except ValueError:  # a quoted argument goes on over the next line
            continue
        pending = ""
        if not argv or argv[0] != "farlink":
            return None
        found.append(argv)
    return None if pending else found


def _params() -> list:
    params = []
    for block in blocks():
        marks = clock_marks(block.body)
        if block.mark == "not run":
            marks.append(pytest.mark.skip(reason=f"not run: {block.reason}"))
        elif block.mark == "slow":
            marks.append(pytest.mark.slow)
        params.append(pytest.param(block, id=block.id, marks=marks))
    return params


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    """The files the documents name: a call-drop log, a capture and an event log."""
    return make_fixtures(tmp_path_factory.mktemp("docs-fixtures"))


def make_fixtures(folder: Path) -> Path:
    """Writes into ``folder`` the files the documents name (tests/test_documented_defaults.py
    gives the skipped blocks' commands the same)."""
    drops = ["modem,time"] + [
        f"{modem},{t}" for modem in ("Kansas", "Iowa") for t in range(600, 60_000, 1_700)
    ]
    (folder / "drops.csv").write_text("\n".join(drops) + "\n")
    run = folder / "run"
    done = subprocess.run(
        [str(BIN / "farlink"), "simulate", "stpd-wireless", "--duration", "10s", "--pcap",
         "--out", str(run)],
        capture_output=True, text=True, timeout=TIME_LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shutil.copy(run / "R-D.pcap", folder / "trace.pcap")
    shutil.rmtree(run)
    from farlink.linkmgr.synthetic import SyntheticBundle, synthetic_log

    synthetic_log(folder / "events.sqlite", SyntheticBundle(duration_s=12 * 3600), seed=1)
    return folder


def _workdir(tmp_path: Path, fixtures: Path) -> Path:
    for path in fixtures.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def _run(argv: list[str], cwd: Path, block: Block) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIME_LIMIT_S
    )
    assert done.returncode == 0, (
        f"{block.id}: {shlex.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}"
    )


def _toml(block: Block, cwd: Path) -> None:
    try:
        doc = tomllib.loads(block.body)
    except tomllib.TOMLDecodeError as err:
        pytest.fail(f"{block.id}: not TOML: {err}")
    if block.mark == "scenario":
        path = cwd / "scenario.toml"
        path.write_text(block.body, encoding="utf-8")
        _run(["farlink", "simulate", str(path), "--json", "--out", str(cwd / "out")], cwd, block)
        assert doc.get("name"), f"{block.id}: the complete scenario has a name"


@pytest.mark.parametrize("block", _params())
def test_documented_block_runs(block, tmp_path, fixtures):
    cwd = _workdir(tmp_path, fixtures)
    if block.language == "toml":
        _toml(block, cwd)
        return
    if block.language == "python":
        script = cwd / "block.py"
        script.write_text(block.body, encoding="utf-8")
        _run([sys.executable, str(script)], cwd, block)
        return
    argvs = commands(block.body)
    assert argvs, (
        f"{block.id}: not a block of farlink commands; mark it <!-- docs-run: not run: REASON --> "
        "or <!-- docs-run: slow: REASON -->"
    )
    for argv in argvs:
        _run(argv, cwd, block)


def test_the_scenario_reference_holds_one_complete_scenario_using_every_section():
    # Other pages hold scenarios of their own subject (schedules, traffic); the reference
    # holds one, complete.
    scenario_blocks = [
        b for b in blocks() if b.mark == "scenario" and b.document.name == "scenarios.md"
    ]
    assert len(scenario_blocks) == 1, [b.id for b in scenario_blocks]
    doc = tomllib.loads(scenario_blocks[0].body)
    sections = {"name", "description", "seed", "duration", "nodes", "links", "flows",
                "lossy_link", "trace", "pcap"}  # fmt: skip
    assert sections <= set(doc), sections - set(doc)
    links = doc["links"]
    assert any("bundle" in link for link in links), "a bundle"
    assert any("rlp" in link for link in links), "a radio hop"
    assert any("arq" in link.get("bundle", {}) for link in links), "a bundle with ARQ"
    assert any("relays" in flow for flow in doc["flows"]), "a split connection"


def test_every_marked_block_says_why():
    for block in blocks():
        if block.mark in ("not run", "slow"):
            assert block.reason, f"{block.id}: a {block.mark} mark needs a reason"
