"""The emulator's and the link manager's Rust sources keep the shape issue 28 gave them: no
function over 120 lines (tools/rust_functions.py) and no import circle (tools/rust_imports.py);
and each reading finds what it should in a small crate made here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ("farlink-emu", "farlink-linkmgr")
MAX_LINES = 120


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclass resolves its annotations through sys.modules.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _crate(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_no_function_of_the_emulator_or_the_link_manager_is_over_120_lines():
    tool = _tool("rust_functions")
    for crate in CRATES:
        fns = tool.crate_functions(ROOT / "crates" / crate)
        assert fns, f"no functions found in crates/{crate}"
        long = [
            f"{f.path.name}:{f.first_line} {f.name} ({f.lines})" for f in fns if f.lines > MAX_LINES
        ]
        assert not long, f"crates/{crate}: functions over {MAX_LINES} lines: {long}"


def test_lengths_count_from_fn_to_the_closing_brace_past_braces_in_strings_and_comments(
    tmp_path: Path,
):
    tool = _tool("rust_functions")
    lib = (
        "/// fn not_code() {\n"
        "pub fn outer(x: impl Fn() -> u8) -> Result<(), String> {\n"
        '    let s = "}}} fn inner_in_string() {";\n'
        "    let c = '}';\n"
        "    // }\n"
        "    /* { */\n"
        "    fn nested<'a>(v: &'a str) -> &'a str {\n"
        "        v\n"
        "    }\n"
        '    let r = r#"{"#;\n'
        "    Ok(())\n"
        "}\n"
        "trait T {\n"
        "    fn declared(&self) -> u8;\n"
        "}\n"
    )
    crate = _crate(tmp_path, {"lib.rs": lib})
    got = {(f.name, f.first_line, f.lines) for f in tool.crate_functions(crate)}
    assert got == {("outer", 2, 11), ("nested", 7, 3)}


def test_the_emulator_and_the_link_manager_have_no_import_circle():
    tool = _tool("rust_imports")
    for crate in CRATES:
        graph = tool.Crate(ROOT / "crates" / crate).arrows()
        assert sum(len(v) for v in graph.values()) > 20, f"crates/{crate}: no imports read"
        circles = [[tool.name(m) for m in c] for c in tool.circles(graph)]
        assert not circles, f"crates/{crate}: import circles {circles}"


def test_a_circle_through_a_re_export_and_a_parent_is_found_and_test_code_is_not(tmp_path):
    tool = _tool("rust_imports")
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
