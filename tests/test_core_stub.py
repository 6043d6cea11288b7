"""The hand-written stub ``python/farlink/_core.pyi`` against the compiled ``farlink._core``.

mypy's stubtest imports the real module and compares every name, signature, class and base
with the stub, so a function added, renamed or given a new parameter in the bindings fails here
until the stub says the same.
"""

import subprocess
import sys
from pathlib import Path

ALLOWLIST = Path(__file__).with_name("core_stub_allowlist.txt")


def test_stub_matches_the_compiled_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "farlink._core", "--allowlist", str(ALLOWLIST)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
