"""`farlink reproduce ID` shows its verdict: tolerance and within-tolerance columns, what each
published number is, the spread across seeds, and where the JSON went."""

from __future__ import annotations

import json

import pytest

from farlink import reproduce as registry
from farlink.cli.app import main
from farlink.reproduce import PUBLISHED_KINDS, Reproduction, Row
from farlink.reproduce.terminal import print_verdict


def test_the_terminal_table_has_every_column_of_the_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["reproduce", "zaghloul-table-6.1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for column in ("tolerance", "within", "published is", "seeds"):
        assert column in out
    assert "±1%" in out and "predicted" in out
    assert "verdict: 4 of 4 checked rows within tolerance" in out
    path = tmp_path / "reproduce" / "zaghloul-table-6.1.json"
    assert f"json: {path}" in out
    rows = json.loads(path.read_text())["rows"]
    assert {r["published_kind"] for r in rows} == {"predicted"}


def test_every_reproduction_says_what_its_published_numbers_are():
    for entry in registry.entries():
        assert entry.published in PUBLISHED_KINDS, entry.id


def test_a_row_over_seeds_keeps_their_mean_and_spread(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    row = Row.over_seeds("x", "s", 10.0, [9.0, 11.0, 13.0], 0.5, "measured")
    assert row.ours == pytest.approx(11.0)
    assert (row.seeds, row.spread) == (3, (9.0, 13.0))
    assert row.to_dict()["seed_spread"] == [9.0, 13.0]
    rep = Reproduction(rows=[row], id="t", title="t", source="s")
    print_verdict(rep)
    out = capsys.readouterr().out
    assert "3: 9-13" in out and "measured" in out and "±50%" in out
