"""No import circle in the emulator or the link manager (issue 28), as tools/rust_imports.py
reads their `use` declarations; and the reading finds a circle where there is one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location(
        "rust_imports", ROOT / "tools" / "rust_imports.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rust_imports"] = module
    spec.loader.exec_module(module)
    return module


def test_the_emulator_and_the_link_manager_have_no_import_circle():
    tool = _tool()
    for crate in ("farlink-emu", "farlink-linkmgr"):
        graph = tool.Crate(ROOT / "crates" / crate).arrows()
        assert sum(len(v) for v in graph.values()) > 20, f"crates/{crate}: no imports read"
        circles = [[tool.name(m) for m in c] for c in tool.circles(graph)]
        assert not circles, f"crates/{crate}: import circles {circles}"


def _crate(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_circle_through_a_re_export_and_a_parent_is_found_and_test_code_is_not(tmp_path):
    tool = _tool()
    crate = _crate(
        tmp_path,
        {
            "lib.rs": "mod a;\nmod b;\npub use a::Thing;\n",
            # a -> b through the folder's face of b (b/mod.rs re-exports c's Other).
            "a.rs": "use crate::b::Other;\npub struct Thing;\n",
            "b/mod.rs": "mod c;\npub use c::Other;\n",
            # c -> a through the crate root's re-export; with a -> c, a circle.
            "b/c.rs": "use crate::Thing; // use crate::b;\npub struct Other;\n",
            "d.rs": (
                "#[cfg(test)]\nmod tests {\n    use crate::a::Thing;\n}\n"
                'const S: &str = "use crate::a;";\n'
            ),
        },
    )
    graph = tool.Crate(crate).arrows()
    assert graph[("a",)] == {("b", "c")}
    assert graph[("b", "c")] == {("a",)}
    assert graph[("d",)] == set(), "test code and strings import nothing"
    assert tool.circles(graph) == [[("a",), ("b", "c")]]
