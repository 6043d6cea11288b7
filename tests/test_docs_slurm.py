"""The SLURM instructions of docs/sweeps.md, checked: the documented ``SLURMCluster(...)`` call
is read from the document, built, and its batch script compared with what the text promises.

No SLURM is needed: dask-jobqueue writes the script without submitting it. The test is skipped
only when dask-jobqueue is missing (``pip install -e '.[dev]'`` installs it).
"""

import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent / "docs" / "sweeps.md"


def documented_cluster_call() -> ast.Call:
    """The ``SLURMCluster(...)`` call of the ``slurm_cluster.py`` example in docs/sweeps.md."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (example,) = [b for b in blocks if "SLURMCluster(" in b]
    calls = [
        node
        for node in ast.walk(ast.parse(example))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "SLURMCluster"
    ]
    (call,) = calls
    return call


def test_the_documented_example_names_the_documented_arguments():
    call = documented_cluster_call()
    assert not call.args
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert kwargs["cores"] == kwargs["processes"]  # one thread per worker: one run at a time
    assert set(kwargs) >= {"queue", "account", "cores", "processes", "memory", "walltime"}


def test_documented_slurm_cluster_writes_the_promised_job_script():
    jobqueue = pytest.importorskip("dask_jobqueue")
    kwargs = {k.arg: ast.literal_eval(k.value) for k in documented_cluster_call().keywords}
    # Test-only: no dashboard port, the scheduler on the loopback interface.
    options = {"dashboard_address": None, "host": "127.0.0.1"}
    with jobqueue.SLURMCluster(**kwargs, scheduler_options=options) as cluster:
        script = cluster.job_script()
    directives = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert f"#SBATCH -p {kwargs['queue']}" in directives
    assert f"#SBATCH -A {kwargs['account']}" in directives
    assert f"#SBATCH --cpus-per-task={kwargs['cores']}" in directives
    assert f"#SBATCH -t {kwargs['walltime']}" in directives
    for extra in kwargs["job_extra_directives"]:
        assert f"#SBATCH {extra}" in directives
    assert any(d.startswith("#SBATCH --mem=") for d in directives)
    (command,) = [line for line in script.splitlines() if "distributed.cli.dask_worker" in line]
    words = command.split()
    assert words[0] == kwargs["python"]
    # 32 single-threaded worker processes per job, as the comment in the example says.
    assert words[words.index("--nworkers") + 1] == str(kwargs["processes"])
    assert words[words.index("--nthreads") + 1] == "1"
    assert words[1:3] == ["-m", "distributed.cli.dask_worker"]
    assert words[3].startswith("tcp://127.0.0.1:")  # the cluster's own scheduler
