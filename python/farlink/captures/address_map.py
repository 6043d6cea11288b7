"""The address map a simulated capture carries beside it (``<capture>.addresses.json``): which
node an IP address stands for and which flow a 4-tuple is (docs/captures.md). Used to label a
capture's connections with the scenario's flow names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any


def map_path(capture: str | Path) -> Path:
    """Where the address map of ``capture`` lies: ``R-D.pcap`` → ``R-D.addresses.json``."""
    p = Path(capture)
    return p.with_name(f"{p.stem}.addresses.json")


def read_address_map(capture: str | Path) -> dict[str, Any] | None:
    """The address map beside ``capture``, or None when there is none or it is unreadable
    (a capture is analysed all the same, its connections named by address)."""
    try:
        doc = json.loads(map_path(capture).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("flows"), list) else None


def flow_names(address_map: dict[str, Any]) -> dict[str, str]:
    """Connection name as :mod:`farlink.captures.analysis` writes it (``src:port->dst:port``, data
    sender first) → the flow's name."""
    names = {}
    for f in address_map["flows"]:
        try:
            s, r = f["sender"], f["receiver"]
            names[f"{s['address']}:{s['port']}->{r['address']}:{r['port']}"] = str(f["name"])
        except (KeyError, TypeError):
            continue
    return names


def label_connections(connections: list[Any], capture: str | Path) -> list[Any]:
    """``connections`` with each one the address map names renamed after its flow."""
    label = connection_labeler(capture)
    return [label(c) for c in connections]


def connection_labeler(capture: str | Path) -> Callable[[Any], Any]:
    """A function renaming one connection after its flow where the address map beside
    ``capture`` names it (the map read once, for connections analysed one at a time)."""
    address_map = read_address_map(capture)
    names = {} if address_map is None else flow_names(address_map)
    return lambda c: replace(c, name=names[c.name]) if c.name in names else c
