"""tests/data/ppp_vectors.json is what tools/ppp_vectors.py builds with scapy (the Rust codecs'
independent reference, read by crates/farlink-linkmgr/tests/integration/ppp_vectors.rs)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_committed_vectors_are_the_scripts_output():
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("ppp_vectors", root / "tools" / "ppp_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (root / "tests" / "data" / "ppp_vectors.json").read_text()
    assert committed == module.render(), "run `.venv/bin/python tools/ppp_vectors.py`"


def test_fcs16_check_value():
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("ppp_vectors", root / "tools" / "ppp_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # CRC-16/IBM-SDLC (X.25) check value of "123456789".
    assert module.fcs16(b"123456789") == 0x906E
