"""No function of the emulator or the link manager runs over 120 lines (issue 28), as
tools/rust_functions.py measures them; and the measure itself finds what it should."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 120


def _tool():
    spec = importlib.util.spec_from_file_location(
        "rust_functions", ROOT / "tools" / "rust_functions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclass resolves its annotations through sys.modules.
    sys.modules["rust_functions"] = module
    spec.loader.exec_module(module)
    return module


def test_no_function_of_the_emulator_or_the_link_manager_is_over_120_lines():
    tool = _tool()
    for crate in ("farlink-emu", "farlink-linkmgr"):
        fns = tool.crate_functions(ROOT / "crates" / crate)
        assert fns, f"no functions found in crates/{crate}"
        long = [
            f"{f.path.name}:{f.first_line} {f.name} ({f.lines})" for f in fns if f.lines > MAX_LINES
        ]
        assert not long, f"crates/{crate}: functions over {MAX_LINES} lines: {long}"


def test_lengths_count_from_fn_to_the_closing_brace_past_braces_in_strings_and_comments(
    tmp_path: Path,
):
    tool = _tool()
    src = tmp_path / "src"
    src.mkdir()
    (src / "lib.rs").write_text(
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
    got = {(f.name, f.first_line, f.lines) for f in tool.crate_functions(tmp_path)}
    assert got == {("outer", 2, 11), ("nested", 7, 3)}
