"""docs/architecture.md stays true: every path it names exists, every crate and every
subpackage of python/farlink is named, each crate's row names modules it has and the crates it
depends on (its Cargo.toml), and the README points to it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# A repository path: a top-level folder of the repository, then anything up to a space, a
# backtick, a parenthesis or a comma.
PATH = re.compile(r"(?<![\w./-])((?:crates|python|tests|bench|tools|fuzz|docs)/[\w./-]*)")


def _text() -> str:
    return DOC.read_text()


def _named_paths(text: str) -> set[str]:
    return {m.group(1).rstrip(".") for m in PATH.finditer(text)}


def _crate_rows(text: str) -> dict[str, list[str]]:
    """The crates table: crate folder name -> its cells."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `crates/(farlink-[\w-]+)/` \|", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip("|").split("|")]
    return rows


def test_every_path_it_names_exists():
    named = _named_paths(_text())
    assert len(named) > 30, "the page names the crates' and the package's folders"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_crate_and_subpackage_is_named():
    named = _named_paths(_text())
    crates = {
        f"crates/{p.name}/" for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists()
    }
    packages = {
        f"python/farlink/{p.name}/"
        for p in (ROOT / "python" / "farlink").iterdir()
        if (p / "__init__.py").exists() or p.name == "scenarios"
    }
    assert not (crates | packages) - named, sorted((crates | packages) - named)
    assert set(_crate_rows(_text())) == {c.split("/")[1] for c in crates}


def test_each_crate_row_names_its_own_modules_and_its_dependencies():
    for crate, (_, what, uses) in _crate_rows(_text()).items():
        base = ROOT / "crates" / crate
        for name in re.findall(r"`([\w/]+(?:\.rs|/))`", what):
            assert (base / name).exists() or (base / "src" / name).exists(), (
                f"crates/{crate}: the architecture names {name}, which it does not have"
            )
        manifest = tomllib.loads((base / "Cargo.toml").read_text())
        deps = set(manifest.get("dependencies", {}))
        for target in manifest.get("target", {}).values():
            deps |= set(target.get("dependencies", {}))
        ours = {d for d in deps if d.startswith("farlink-")}
        said = (
            set()
            if uses == "nothing of farlink"
            else {"farlink-" + u.strip().split()[0] for u in uses.split(",")}
        )
        assert said == ours, f"crates/{crate} uses {sorted(ours)}, the page says {uses!r}"


def test_the_readme_points_to_it():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/architecture.md)" in readme
    assert "## Layout" not in readme, "the layout lives in docs/architecture.md now"
