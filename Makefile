# The two commands of the README: `make demo` and `make test`. Both create .venv and build the
# Rust core on a fresh machine, and do nothing more than needed when already set up.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-installed
CORE_STAMP := $(VENV)/.core-built
# maturin's build backend runs `maturin` by name, so the venv's bin goes first on PATH.
IN_VENV := VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH
RUST_SOURCES := Cargo.toml $(wildcard Cargo.lock) $(shell find crates -name '*.rs' -o -name 'Cargo.toml')

.PHONY: demo test setup system-deps rust-test python-test lint bench validate validate-ns3 \
	validate-captures validate-captures-heavy validate-fit-loop leo-figure leo-compare bench-emu validate-emu emulate-mptcp-drop validate-mptcp compare-emu-tbf bench-linkmgr validate-linkmgr clean

setup: system-deps $(CORE_STAMP)

# Debian packages the real-capture tests drive (tests/realcap.py): tcpdump on an interface,
# tshark as the reference dissector, iptables for drops, ethtool for offloads, iproute2 for
# namespaces and tbf, `tc` for the emulator's check that the host's qdiscs are left alone;
# chromium and its driver for the link manager's dashboard in a real browser (Selenium); iperf3,
# the program the emulator's docs and tests run across the links (`emulate --server 'iperf3 -s'`).
# Installed only as root and only when a tool is missing, so a second run does nothing; without
# root the tests that need them skip and say why.
SYSTEM_TOOLS := tshark:tshark tcpdump:tcpdump iptables:iptables ethtool:ethtool ip:iproute2 \
	tc:iproute2 nstat:iproute2 ss:iproute2 chromium:chromium chromedriver:chromium-driver \
	iperf3:iperf3 mptcpize:mptcpize
system-deps:
	@missing=$$(for t in $(SYSTEM_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 \
		|| echo $${t#*:}; done | sort -u | tr '\n' ' '); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
		echo "setup: not root or no apt-get; the real-capture tests will skip (missing: $$missing)"; \
		exit 0; fi; \
	echo "setup: installing $$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $$missing >/dev/null

$(DEPS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet 'maturin>=1.9,<2'
	$(IN_VENV) $(PY) -m pip install --quiet --no-build-isolation -e '.[dev]'
	touch $@

$(CORE_STAMP): $(DEPS_STAMP) $(RUST_SOURCES)
	$(IN_VENV) maturin develop --release --quiet
	touch $@

demo: setup
	$(VENV)/bin/farlink demo

rust-test:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace --quiet

# The Rust tests that run traffic in real time (#[ignore]d, so `cargo test` leaves them out):
# the emulator's, one at a time after the other emulations, and the link manager's data plane,
# with its other tests (python-test).
RUST_EMULATIONS := cargo test -p farlink-emu --test emulate --quiet -- --ignored --test-threads=1
RUST_DATA_PLANE := cargo test -p farlink-linkmgr --test integration linkmgr_dataplane:: --quiet -- --ignored \
	--skip bench_ --test-threads=1

lint: setup
	$(VENV)/bin/ruff check python tests bench tools
	$(VENV)/bin/ruff format --check python tests bench tools

# Four pytest processes side by side: the emulations that measure time (marked real_time: one
# at a time, then the Rust ones), the emulations checked for what they carry and print, not for
# their timing (real_time too: the documented commands that emulate, and the modules of
# COUNTED_EMULATIONS; one at a time beside the others), the link manager's tests (wall_clock:
# they mostly sleep; then its Rust data plane) and the rest, at nice 10 so that the emulations'
# receivers are not kept waiting (tests/support.py says which is which). The emulations spend
# most of their time waiting on the links' clocks, so the two emulation processes overlap (about
# 400 s one after the other on 2 cores). The others' output follows the first's; the target
# fails if any does.
COUNTED_EMULATIONS := tests/test_docs_run.py tests/test_documented_defaults.py \
	tests/test_emulate.py tests/test_emulate_workloads.py tests/test_send.py tests/test_compare.py
python-test: setup
	@{ $(VENV)/bin/pytest -q -p no:cacheprovider -m "not slow and real_time" --durations=10 \
		$(addprefix --ignore=,$(COUNTED_EMULATIONS)) && $(RUST_EMULATIONS); } >.pytest-real-time.log 2>&1 & \
	real_time=$$!; \
	$(VENV)/bin/pytest -q -p no:cacheprovider -m "not slow and real_time" --durations=5 \
		$(COUNTED_EMULATIONS) >.pytest-counted.log 2>&1 & counted=$$!; \
	{ $(VENV)/bin/pytest -q -p no:cacheprovider -m "not slow and wall_clock" --durations=5 \
		&& $(RUST_DATA_PLANE); } >.pytest-wall-clock.log 2>&1 & wall_clock=$$!; \
	nice -n 10 $(VENV)/bin/pytest -q -m "not slow and not real_time and not wall_clock" \
		--durations=10; \
	others=$$?; wait $$real_time; real=$$?; wait $$counted; counted=$$?; \
	wait $$wall_clock; wall=$$?; \
	echo "--- the emulations that measure time (pytest -m real_time):"; cat .pytest-real-time.log; \
	echo "--- the emulations checked for what they carry (pytest -m real_time $(COUNTED_EMULATIONS)):"; \
	cat .pytest-counted.log; \
	echo "--- the link manager (pytest -m wall_clock):"; cat .pytest-wall-clock.log; \
	exit $$(( others || real || counted || wall ))

# The Rust checks and the lint, then the Python tests. Beside the emulations the compiler
# cost them their timing: twice in six runs a 12 Mbit/s trace carried 11.55 and 11.63 Mbit/s
# (tests/test_schedules_emu.py, 3 % allowed). Beside the set-up's release build (make -j2) it
# saved nothing: the two builds share the 2 cores (the set-up took 248 s).
test: setup rust-test lint python-test

bench: setup
	$(PY) bench/bench_models.py
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_traces.py
	$(PY) bench/bench_short_flows.py
	$(PY) bench/bench_aqm.py
	cargo bench -p farlink-core --bench queue --bench tcp_ack_path -- --quick

# The emulator's clock: departure-time error at 10 and 100 Mbit/s (root: namespaces, TUN).
bench-emu: setup
	$(PY) bench/bench_emu.py
	$(PY) bench/bench_emu_throughput.py

# Linux TCP (reno, cubic, bbr) through the emulator beside farlink's in the simulator, and the far
# links under kernel TCP: writes its section of docs/validation.md. Root; about an hour and a half.
validate-emu: setup
	$(PY) bench/validate_emu.py $(VALIDATE_EMU_ARGS)

# Issue 32's check: a verified 1 MB transfer by the kernel's Multipath TCP over iridium-4's four
# members, with a call drop during the transfer and the member's subflow opened again after the
# redial (crates/farlink-emu/tests/mptcp.rs). Root and net.mptcp.enabled; about 15 minutes.
emulate-mptcp-drop:
	cargo test -p farlink-emu --test mptcp -- --ignored --nocapture

# docs/multipath.md's validation: farlink's Multipath TCP against the kernel's, and MLPPP beside
# both, over bundles sped up 20 times (bench/validate_mptcp.py). Root and net.mptcp.enabled;
# about 25 minutes of emulation. Comparisons kept in farlink-out/validate-mptcp are not run again.
validate-mptcp: setup
	nice -n 10 $(PY) bench/validate_mptcp.py $(VALIDATE_MPTCP_ARGS)

# Kernel reno, cubic, bbr through the emulator beside a real tbf bottleneck of the same rate,
# queue and loss (root; about 25 min; COMPARE_TBF_ARGS="--duration 5 --reps 1" for a quick one):
# writes its table in docs/emulator.md.
compare-emu-tbf: setup
	$(PY) bench/compare_tbf.py --write $(COMPARE_TBF_ARGS)

# The link manager's data plane: kernel TCP across 8 bonded members paced at 2400 bit/s between
# two namespaces, without and with a call drop mid-fragment (root: namespaces, TUN; minutes).
# Its figures are in docs/linkmgr.md.
bench-linkmgr:
	cargo test --release -p farlink-linkmgr --test integration -- --ignored --nocapture \
		linkmgr_dataplane::bench_eight_iridium_members

# The link manager for an hour: daemons, simulated modems and a TCP transfer across 8 bonded
# members; the log's uptime and fitted beta beside the configured and simulated ones. Writes its
# table into docs/linkmgr.md. Root (namespaces, TUN); about 65 minutes.
validate-linkmgr: setup
	$(PY) bench/validate_linkmgr.py $(VALIDATE_LINKMGR_ARGS)

# The engine beside ns-3 on seed 003's wireless path; reads bench/ns3/results (make ns3-reference)
# and writes docs/validation.md.
validate-ns3: setup
	$(PY) bench/validate_ns3.py

# farlink's queue disciplines beside ns-3's traffic-control queue discs (issue 29): reads
# bench/ns3/results/ns3_aqm.json (make ns3-aqm), runs farlink's simulator on the same cells
# (seconds) and writes its section of docs/validation.md.
.PHONY: validate-aqm-ns3
validate-aqm-ns3: setup
	$(PY) bench/validate_aqm_ns3.py

# farlink's own senders on the wire to the kernel's receiver: every controller through
# stpd-wireless (p = 0, 1e-2) and iridium-4, and farlink reno/cubic/bbr beside the kernel's;
# writes the tables of docs/wire.md. Needs root (namespaces, TUN). WIRE_ARGS="--size 1MB" etc.
.PHONY: validate-wire
validate-wire: setup
	$(PY) bench/validate_wire.py $(WIRE_ARGS)

# farlink's CUBIC beside the kernel's at 100 Mbit/s x 100 ms, lossless, and farlink's sender's
# ACK-to-send latency. Root. BENCH_WIRE_ARGS="--duration 10 --rounds 3" etc.
.PHONY: bench-wire
bench-wire: setup
	$(PY) bench/bench_wire.py $(BENCH_WIRE_ARGS)

validate: setup
	$(VENV)/bin/pytest -q -m slow

# Real kernel TCP (Reno, CUBIC, BBR) in network namespaces, captured, beside tshark and the
# kernel's counters: writes the agreement table of docs/captures.md. Needs root.
validate-captures: setup
	$(PY) tools/validate_captures.py

# The heavy cases eight times more: the kernel's own spread beside the fitted flows' (captures.md).
validate-captures-heavy: setup
	$(PY) tools/validate_captures.py --only heavy --repeat 24

# The loop a capture must close: kernel reno, cubic, bbr through the emulator (stpd-wireless at
# p = 0, 1e-2, 3e-2, stpd-geo-t1, iridium-4), both ends captured, each capture fitted and the fit
# simulated; writes its table in docs/captures.md. Root (namespaces, TUN); about 15 minutes.
validate-fit-loop: setup
	$(PY) tools/validate_fit_loop.py $(FIT_LOOP_ARGS)

# docs/leo.md's figure: RTT over 10 minutes of both `farlink leo` presets.
leo-figure: setup
	$(PY) tools/leo_figure.py docs/leo-rtt.png

# docs/leo.md's comparison: farlink's reno, cubic, cubic-linux, bbr in the simulator and kernel
# cubic, bbr in the emulator across 10-minute starlink-like and iridium-leo schedules; writes
# its table in docs/leo.md and docs/leo-compare.png. Root (namespaces, TUN); the four emulator
# runs are real time, about 41 minutes. Runs kept in farlink-out/leo-compare/600s are not run again.
leo-compare: setup
	$(PY) tools/leo_compare.py $(LEO_COMPARE_ARGS)

clean:
	rm -rf $(VENV) target farlink-out

# ns-3 reference for the simulation engine (bench/ns3/README.md). Its own venv, never part of
# `make test`. PyPI serves ns3 3.44 only as the post-release 3.44.post0 (`==3.44` matches nothing).
NS3_VENV := .venv-ns3
NS3_PY := $(NS3_VENV)/bin/python
NS3_STAMP := $(NS3_VENV)/.ns3-installed
NS3_VERSION := 3.44.post0

.PHONY: ns3-env ns3-reference

ns3-env: $(NS3_STAMP)

$(NS3_STAMP):
	test -x $(NS3_PY) || $(PYTHON) -m venv $(NS3_VENV)
	echo '*' > $(NS3_VENV)/.gitignore
	$(NS3_PY) -m pip install --quiet 'ns3==$(NS3_VERSION)'
	$(NS3_PY) -c 'import importlib.metadata as m; print("ns3", m.version("ns3"))'
	touch $@

ns3-reference: $(NS3_STAMP)
	$(NS3_PY) bench/ns3/sweep.py $(NS3_ARGS)

# Issue 30's competing traffic in ns-3 (bench/ns3/traffic.py; bench/ns3/README.md): UDP on-off
# beside a CUBIC flow, and Poisson arrivals of short NewReno flows at 50 % and 80 % load, on a
# 10 Mbit/s, 50 ms drop-tail bottleneck; 5 runs of each, one process at a time, niced: about
# 25 minutes on a busy machine. Writes bench/ns3/results/ns3_traffic.json.
# NS3_TRAFFIC_ARGS="--runs 2 --duration 50 --arrivals 50" for a short one.
.PHONY: ns3-traffic validate-traffic-ns3
ns3-traffic: $(NS3_STAMP)
	nice -n 10 $(NS3_PY) bench/ns3/traffic.py --grid --jobs 1 $(NS3_TRAFFIC_ARGS)

# farlink's simulator on the same scenarios (20 seeds each, about a minute), beside ns-3's runs
# of `make ns3-traffic`: writes its section of docs/validation.md. VALIDATE_TRAFFIC_ARGS="--seeds 5".
validate-traffic-ns3: setup
	nice -n 10 $(PY) bench/validate_traffic_ns3.py $(VALIDATE_TRAFFIC_ARGS)

# ns-3's RED, CoDel, FQ-CoDel, PIE and FIFO queue discs at the AQM dumbbell's bottleneck, one
# and four CUBIC flows, ECN off and on: 18 runs of 40 s, one at a time (bench/ns3/README.md);
# writes bench/ns3/results/ns3_aqm.json. About 3 minutes of CPU (12 on the shared 2-core machine).
.PHONY: ns3-aqm
ns3-aqm: $(NS3_STAMP)
	nice -n 10 $(NS3_PY) bench/ns3/aqm.py --grid --jobs 1 $(NS3_AQM_ARGS)

# Fuzzing of the scenario parser, the TCP receiver's segment handling and the unit parsers
# (fuzz/README.md): cargo-fuzz with a nightly toolchain, each target for FUZZ_SECONDS, one job.
# New inputs go to fuzz/corpus-work/ (ignored); the seeds in fuzz/corpus/ are only read.
# Then the command line's fuzzer (tests/test_cli_fuzz.py) for FUZZ_CLI_SECONDS over up to
# FUZZ_CLI_CASES mutated presets from seed FUZZ_CLI_SEED; a case that fails is written into its
# corpus, tests/data/fuzz_corpus/, which `make test` runs. Then the real-systems surfaces (event
# logs, link-manager configurations, pcapng, many connections, raw HTTP to the dashboard) from
# the same seed, which a failure names. Never part of `make test` (its short form is).
FUZZ_SECONDS ?= 60
FUZZ_TOOLCHAIN ?= nightly
FUZZ_TARGETS := scenario_json receiver_segments units hdlc_decoder at_dialogue wire_parse gso_split
FUZZ_CLI_CASES ?= 2000
FUZZ_CLI_SECONDS ?= 600
FUZZ_CLI_SEED ?= $(shell date +%s)
# The real-systems surfaces (tests/test_surface_fuzz.py): cases per surface, raw HTTP requests.
FUZZ_SURFACE_CASES ?= 100
FUZZ_SURFACE_REQUESTS ?= 1000

.PHONY: fuzz fuzz-cli

fuzz: fuzz-cli
	cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus-work/$$t && \
		cargo +$(FUZZ_TOOLCHAIN) fuzz run $$t fuzz/corpus-work/$$t fuzz/corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 || exit 1; \
	done

fuzz-cli: setup
	FARLINK_FUZZ_CASES=$(FUZZ_CLI_CASES) FARLINK_FUZZ_SECONDS=$(FUZZ_CLI_SECONDS) \
	FARLINK_FUZZ_SEED=$(FUZZ_CLI_SEED) FARLINK_FUZZ_SAVE=1 \
		$(VENV)/bin/pytest -q -rxX --timeout=0 tests/test_cli_fuzz.py
	FARLINK_FUZZ_SEED=$(FUZZ_CLI_SEED) FARLINK_FUZZ_SURFACE_CASES=$(FUZZ_SURFACE_CASES) \
	FARLINK_FUZZ_SURFACE_REQUESTS=$(FUZZ_SURFACE_REQUESTS) \
		$(VENV)/bin/pytest -q -rxX --timeout=0 tests/test_surface_fuzz.py
