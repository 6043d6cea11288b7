"""The import circles of a Rust crate: files (modules) whose `use` declarations name each other
in a loop (issue 28; tests/test_rust_structure.py holds the emulator and the link manager to
none).

A module imports another when one of its `use` declarations names it, by `crate::a::b`,
`super::...` or a child's name (`use child::f`); a name that the module named only re-exports
(`pub use x::Name`) is followed to the module that defines it. A `pub use` itself is the
crate's or a folder's face, not an import, and `mod x;` only declares a child. Test code
(modules under `#[cfg(test)]`), comments and strings are left out (tools/rust_functions.py's
`code_only`).

Run: .venv/bin/python tools/rust_imports.py crates/farlink-emu crates/farlink-linkmgr
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

Module = tuple[str, ...]

_spec = importlib.util.spec_from_file_location(
    "rust_functions", Path(__file__).resolve().parent / "rust_functions.py"
)
assert _spec is not None and _spec.loader is not None
_functions = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("rust_functions", _functions)
_spec.loader.exec_module(_functions)
code_only = _functions.code_only

# A `use`, and whether it is a re-export (`pub use`, `pub(crate) use`).
USE = re.compile(r"(\bpub(?:\([\w ]+\))?\s+)?\buse\s+([^;]+);")


def module_of(src: Path, path: Path) -> Module:
    parts = path.relative_to(src).with_suffix("").parts
    if parts in (("lib",), ("main",)):
        return ()
    return parts[:-1] if parts[-1] == "mod" else parts


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([\w ]+\))?\s+)?mod\s+(\w+)\s*([;{])")


def test_children(code: str) -> set[str]:
    """The names of the file modules declared under `#[cfg(test)]` (`mod tests;`)."""
    return {m.group(1) for m in TEST_MOD.finditer(code) if m.group(2) == ";"}


def without_tests(code: str) -> str:
    """The code with every inline module under `#[cfg(test)]` blanked."""
    while m := next((t for t in TEST_MOD.finditer(code) if t.group(2) == "{"), None):
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : j + 1]) + code[j + 1 :]
    return code


def expand(declaration: str) -> list[tuple[list[str], str]]:
    """What one `use` names: `a::{b, c::{d as e}}` -> [([a, b], b), ([a, c, d], e)]: each
    path and the name it is known by here."""
    flat = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", declaration))
    out = []
    for item in _paths(flat):
        path, _, alias = item.partition("@")
        parts = path.split("::")
        out.append((parts, alias or parts[-1]))
    return out


def _paths(tree: str) -> list[str]:
    """`a::{b,c::{d,e}}` -> [a::b, a::c::d, a::c::e]."""
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    head, inner = tree[:brace], tree[brace + 1 : tree.rindex("}")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner + ","):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            if inner[start:i]:
                items.append(inner[start:i])
            start = i + 1
    return [head + path for item in items for path in _paths(item)]


def absolute(me: Module, parts: list[str], modules: set[Module]) -> list[str] | None:
    """The path from the crate root, or None where it does not start at a module of ours."""
    if parts[0] == "crate":
        return parts[1:]
    if parts[0] in ("super", "self"):
        here = list(me)
        while parts and parts[0] in ("super", "self"):
            if parts.pop(0) == "super":
                if not here:
                    return None
                here.pop()
        return here + parts
    if (*me, parts[0]) in modules:
        return [*me, *parts]
    return None


class Crate:
    def __init__(self, crate: Path):
        src = crate / "src"
        files = {module_of(src, p): p for p in sorted(src.rglob("*.rs"))}
        raw = {m: code_only(p.read_text()) for m, p in files.items()}
        tests = {(*m, child) for m, code in raw.items() for child in test_children(code)}
        # A test module's own children are tests too.
        self.files = {m: p for m, p in files.items() if not any(m[: len(t)] == t for t in tests)}
        self.modules = set(self.files)
        self.code = {m: without_tests(raw[m]) for m in self.modules}
        self.reexports: dict[Module, dict[str, list[str]]] = {m: {} for m in self.modules}
        for m, code in self.code.items():
            for use in (u for u in USE.finditer(code) if u.group(1)):
                for parts, name in expand(use.group(2)):
                    target = absolute(m, parts, self.modules)
                    if target is not None and name not in ("*", "self"):
                        self.reexports[m][name] = target

    def resolve(self, path: list[str], seen: int = 0) -> Module | None:
        """The module that defines what `path` names: its longest module prefix, through
        re-exports."""
        for k in range(len(path), -1, -1):
            prefix = tuple(path[:k])
            if prefix in self.modules:
                rest = path[k:]
                if rest and rest[0] in self.reexports[prefix] and seen < 8:
                    return self.resolve(self.reexports[prefix][rest[0]] + rest[1:], seen + 1)
                return prefix
        return None

    def arrows(self) -> dict[Module, set[Module]]:
        graph: dict[Module, set[Module]] = {m: set() for m in self.modules}
        for m, code in self.code.items():
            for use in (u for u in USE.finditer(code) if not u.group(1)):
                for parts, _ in expand(use.group(2)):
                    target = absolute(m, parts, self.modules)
                    to = None if target is None else self.resolve(target)
                    if to is not None and to != m:
                        graph[m].add(to)
        return graph


def circles(graph: dict[Module, set[Module]]) -> list[list[Module]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    on: set[Module] = set()
    out: list[list[Module]] = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(m: Module) -> str:
    return "::".join(("crate", *m))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("crates", nargs="+", type=Path)
    args = p.parse_args(argv)
    found = 0
    for crate in args.crates:
        if not (crate / "src").is_dir():
            print(f"rust_imports: {crate}: no src/ folder", file=sys.stderr)
            return 2
        graph = Crate(crate).arrows()
        comps = circles(graph)
        arrows = sum(len(v) for v in graph.values())
        print(f"{crate}: {len(graph)} modules, {arrows} arrows, {len(comps)} circles")
        for comp in comps:
            print("  circle: " + ", ".join(name(m) for m in comp))
        found += len(comps)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
