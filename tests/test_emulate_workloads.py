"""Programs as the emulator's workload: a command in the sender's namespace against the
counting sink or a server in the receiver's, its exit status as farlink's, an interactive
shell fed from a here-string, and the clean-up of whatever the programs left running. These
make network namespaces and TUN devices (CI runs as root); without CAP_NET_ADMIN or
/dev/net/tun they are skipped, saying which."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import FARLINK_ARGV, REAL_TIME, needs_namespaces

NETNS = Path("/run/netns")
PY = sys.executable


pytestmark = [REAL_TIME, needs_namespaces("emulator")]


def farlink(*args: str, stdin: str | None = None, timeout_s: float = 120, env=None):
    return subprocess.run(
        [*FARLINK_ARGV, *args], input=stdin, capture_output=True, text=True, timeout=timeout_s,
        env=env,
    )  # fmt: skip


def namespaces_of(pid: int) -> list[str]:
    prefix = f"farlink-{pid:x}"
    return sorted(n.name for n in NETNS.glob("farlink-*") if n.name.startswith(prefix))


def processes_running(marker: str) -> list[int]:
    """Processes whose command line starts with `marker` (to see that none outlived a run)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline.startswith(marker):
            found.append(int(entry.name))
    return found


def last_json(stdout: str) -> dict:
    """The result document farlink printed after whatever the command printed."""
    return json.loads(stdout[stdout.index("\n{") + 1 :] if not stdout.startswith("{") else stdout)


def test_a_command_moves_bytes_through_the_path_and_the_sink_counts_them(tmp_path):
    # bash's /dev/tcp: the shell writes, exits, and the kernel sends the rest on its own time.
    send = "head -c 200000 /dev/zero > /dev/tcp/$FARLINK_PEER/$FARLINK_PORT"
    run = farlink("emulate", "stpd-wireless", "--json", "--out", str(tmp_path),
                  "--", "bash", "-c", send)  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = last_json(run.stdout)
    (flow,) = doc["flows"]
    assert flow["delivered_bytes"] == 200_000, flow
    # From the command's start: 200 kB through 1.5 Mbit/s take more than 1.07 s.
    assert 0 < flow["goodput_bps"] < 1.5e6, flow
    assert doc["command"]["exit_status"] == 0 and doc["command"]["ended_by"] == "exit"
    assert doc["command"]["peer"].startswith("10.0.")
    # Every byte crossed the emulated bottleneck: 200 kB in MSS-sized packets, and more.
    bottleneck = next(link for link in doc["links"] if link["name"] == "R-D")
    assert bottleneck["fwd"]["delivered_bytes"] >= 200_000
    assert doc["interrupted"] is False


def test_the_commands_exit_status_becomes_farlinks():
    client = (
        "import os, socket, sys; "
        "s = socket.create_connection((os.environ['FARLINK_PEER'], "
        "int(os.environ['FARLINK_PORT'])), timeout=30); "
        "s.sendall(b'x' * 5000); s.close(); sys.exit(7)"
    )
    run = farlink("emulate", "stpd-wireless", "--json", "--", PY, "-c", client)
    assert run.returncode == 7, run.stderr
    doc = last_json(run.stdout)
    assert doc["command"]["exit_status"] == 7
    assert doc["flows"][0]["delivered_bytes"] == 5000


def test_a_command_that_cannot_start_is_one_line_and_exit_2():
    run = farlink("emulate", "stpd-wireless", "--", "/nonexistent/farlink-client")
    assert run.returncode == 2
    assert run.stderr.startswith("farlink: error:") and run.stderr.count("\n") == 1
    assert "/nonexistent/farlink-client" in run.stderr


def test_a_server_in_the_receivers_namespace_serves_the_client(tmp_path):
    (tmp_path / "blob").write_bytes(bytes(range(256)) * 400)
    server = f"exec {PY} -m http.server $FARLINK_PORT --bind $FARLINK_PEER -d {tmp_path}"
    client = (
        "import os, urllib.request; "
        "url = f\"http://{os.environ['FARLINK_PEER']}:{os.environ['FARLINK_PORT']}/blob\"; "
        "body = urllib.request.urlopen(url, timeout=60).read(); "
        f"open({str(tmp_path / 'got')!r}, 'wb').write(body)"
    )
    run = farlink("emulate", "stpd-wireless", "--json", "--out", str(tmp_path / "run"),
                  "--server", server, "--", PY, "-c", client)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "got").read_bytes() == (tmp_path / "blob").read_bytes()
    doc = last_json(run.stdout)
    assert doc["command"]["server"] == server
    # The reply crossed the path from the receiver to the sender: the reverse direction.
    bottleneck = next(link for link in doc["links"] if link["name"] == "R-D")
    assert bottleneck["rev"]["delivered_bytes"] >= 102_400


def test_a_shell_on_the_live_path_reads_its_commands_from_stdin():
    send = (
        "import os, socket; "
        "s = socket.create_connection((os.environ['FARLINK_PEER'], "
        "int(os.environ['FARLINK_PORT'])), timeout=30); s.sendall(b'y' * 3000); s.close()"
    )
    script = f'echo "peer=$FARLINK_PEER"\n{PY} -c "{send}"\nexit 5\n'
    env = {**os.environ, "SHELL": "/bin/sh"}
    run = farlink("emulate", "stpd-wireless", "--shell", "--json", stdin=script, env=env)
    assert run.returncode == 5, run.stderr
    # With --json, what the shell prints goes to standard error: standard output is the document's.
    assert "peer=10.0." in run.stderr
    doc = last_json(run.stdout)
    assert doc["command"]["argv"] == ["/bin/sh"]
    assert doc["flows"][0]["delivered_bytes"] == 3000


def test_what_the_programs_left_running_is_stopped_when_the_run_ends():
    marker = "98.7654321"
    # The command starts a process of its own and exits; the server does the same.
    server = f"sleep {marker} & exec {PY} -m http.server $FARLINK_PORT --bind $FARLINK_PEER"
    run = farlink("emulate", "stpd-wireless", "--server", server,
                  "--", "sh", "-c", f"sleep {marker} & exit 3")  # fmt: skip
    assert run.returncode == 3, run.stderr
    assert processes_running(f"sleep {marker}") == []


def test_ctrl_c_ends_the_command_and_removes_the_namespaces():
    marker = "97.6543210"
    proc = subprocess.Popen([*FARLINK_ARGV, "emulate", "stpd-wireless", "--json", "--",
                             "sleep", marker], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    made: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not processes_running(f"sleep {marker}"):
            time.sleep(0.05)
        made = namespaces_of(proc.pid)
        assert made and processes_running(f"sleep {marker}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["command"]["ended_by"] == "interrupt"
    assert not any((NETNS / n).exists() for n in made)
    assert processes_running(f"sleep {marker}") == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--server", "true"], "--server"),
        (["--shell", "--", "true"], "--shell"),
    ],
)
def test_a_workload_asked_for_twice_or_a_server_without_a_client_is_refused(args, says):
    run = farlink("emulate", "stpd-wireless", *args)
    assert run.returncode == 2
    assert run.stderr.startswith(f"farlink: error: {says}") and run.stderr.count("\n") == 1


def simulated_lost_ordinals(result, link: int) -> tuple[list[int], int]:
    """The arrival numbers, at link `link`'s forward loss model, of the packets it corrupted in a
    simulation, and how many arrived. With no queue overflow anywhere and no handshake, the
    packets reaching it are the sender's segments in the order sent (the seq trace); a
    corrupted one is the last send of its sequence number before the drop."""
    seq = result.trace("seq")
    drops = result.trace("drops")
    assert not any(drops["cause"] == 0), "a queue overflowed: the arrivals are not the sends"
    sent_t, sent_seq = list(seq["time_ns"]), list(seq["seq"])
    lost = []
    for t, s, ln, fwd, cause in zip(
        drops["time_ns"], drops["seq"], drops["link"], drops["forward"], drops["cause"],
        strict=True,
    ):  # fmt: skip
        if ln != link or not fwd or cause != 1:
            continue
        k = max(i for i in range(len(sent_t)) if sent_seq[i] == s and sent_t[i] <= t)
        lost.append(k)
    return sorted(lost), len(sent_t)


def test_lcg16807_loses_the_same_packet_numbers_in_the_emulator_as_in_a_simulation():
    """Seed 003 §5.3.3: the emulator's LCG16807 error generator drops the same arrival numbers
    on a link as the simulator's does for the same seed, whatever TCP offers the packets."""
    from farlink import simulate
    from farlink.emulate import emulate

    sets = [
        'links[1].fwd.loss={model="lcg16807", rate=0.05, seed=11}',
        "links[1].queue_pkts=1000",
        'flows[0].tcp.receive_buffer="40KB"',
        "flows[0].tcp.handshake=false",
    ]
    emu = emulate("stpd-wireless", size="120KB", duration="30s", sets=sets,
                  record_deliveries=True)  # fmt: skip
    fwd = next(link for link in emu.summary["links"] if link["name"] == "R-D")["fwd"]
    emu_lost = fwd["lost_ordinals"]
    emu_arrivals = fwd["delivered_pkts"] + fwd["drops"]["corruption"]
    sim = simulate("stpd-wireless", size="120KB", duration="30s",
                   sets=[*sets, "trace={seq=true, drops=true}"])  # fmt: skip
    sim_lost, sim_arrivals = simulated_lost_ordinals(sim, link=1)
    n = min(emu_arrivals, sim_arrivals)
    assert n > 100 and len([k for k in sim_lost if k < n]) >= 3
    assert [k for k in emu_lost if k < n] == [k for k in sim_lost if k < n]


def test_processes_a_killed_run_left_in_its_namespaces_are_stopped_at_the_next_start():
    marker = "96.5432101"
    # The command dies with farlink (its parent-death signal); what it started in the
    # background does not, and lives on in the namespace until the next run removes it.
    proc = subprocess.Popen([*FARLINK_ARGV, "emulate", "stpd-wireless", "--", "sh", "-c",
                             f"sleep {marker} & sleep 600.0123"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    made: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not processes_running(f"sleep {marker}"):
            time.sleep(0.05)
        made = namespaces_of(proc.pid)
        assert made and processes_running(f"sleep {marker}")
        run_lock = Path("/run/farlink") / f"{made[0].split('-')[1]}.lock"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # Another farlink starting meanwhile (the link manager's tests run beside these)
        # would clean the killed run up too: the test holds the run's lock, as a live run
        # does, until its own next start.
        with run_lock.open("a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            time.sleep(0.5)
            assert processes_running(f"sleep {marker}"), "the background process outlives farlink"
        again = farlink("emulate", "stpd-wireless", "--", "true")
        assert again.returncode == 0, again.stderr
        assert processes_running(f"sleep {marker}") == []
        assert not any((NETNS / n).exists() for n in made)
    finally:
        proc.kill()
        for pid in processes_running(f"sleep {marker}") + processes_running("sleep 600.0123"):
            os.kill(pid, signal.SIGKILL)
        for name in made:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
