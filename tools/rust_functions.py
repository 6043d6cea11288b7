"""Lists a Rust crate's functions by length, longest first: the check that no function of the
emulator or the link manager grows past 120 lines (issue 28; tests/test_rust_structure.py).

A function runs from its `fn` line to the brace that closes its body, both counted; a
declaration without a body (a trait's) is not a function here. Comments, strings and
character literals are skipped when braces are matched, so a `{` in a format string or a
doc comment does not count.

Run: .venv/bin/python tools/rust_functions.py crates/farlink-emu crates/farlink-linkmgr [--over 80]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Function:
    path: Path
    name: str
    first_line: int
    lines: int


def code_only(text: str) -> str:
    """The text with comments, strings and character literals blanked (newlines kept), so that
    braces and `fn` are found in code alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif m := re.match(r'b?r(#*)"', text[i:]):
            end = text.find('"' + m.group(1), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif m := re.match(r"b?'(\\.[^']*|[^\\'])'", text[i:]):
            # A character literal ('{', '\n', '\u{7b}'); a lifetime ('a) has no closing quote.
            out.append(" " * m.end())
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path: Path) -> list[Function]:
    code = code_only(path.read_text())
    found = []
    for m in FN.finditer(code):
        # The body opens at the first `{` after the signature, unless a `;` ends it first.
        depth_paren = 0
        i = m.end()
        while i < len(code):
            ch = code[i]
            if ch in "([<":
                depth_paren += 1
            elif ch in ")]>" and depth_paren:
                depth_paren -= 1
            elif ch == ";" and depth_paren == 0:
                break
            elif ch == "{" and depth_paren == 0:
                break
            i += 1
        if i >= len(code) or code[i] != "{":
            continue
        depth, j = 0, i
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, j) + 1
        found.append(Function(path, m.group(1), first, last - first + 1))
    return found


def crate_functions(crate: Path) -> list[Function]:
    """Every function of the crate's sources (src/, not its tests or examples)."""
    fns = [f for p in sorted((crate / "src").rglob("*.rs")) for f in functions(p)]
    return sorted(fns, key=lambda f: (-f.lines, str(f.path), f.first_line))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("crates", nargs="+", type=Path)
    p.add_argument("--over", type=int, default=80, help="list functions longer than this")
    args = p.parse_args(argv)
    for crate in args.crates:
        if not (crate / "src").is_dir():
            print(f"rust_functions: {crate}: no src/ folder", file=sys.stderr)
            return 2
        for f in crate_functions(crate):
            if f.lines > args.over:
                print(f"{f.lines:5d}  {f.path}:{f.first_line}  {f.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
