"""The link manager (seed 000 chapter 7, KUMICS): a daemon running a bundle of dial-up modems
with the core's modem supervisor, simulated Iridium modems to run it against, and its event
log. The daemon and the simulator are Rust (``farlink-emu``'s ``linkmgr``); this package is
their front. ``docs/linkmgr.md`` is the guide and the log's schema."""

from farlink.linkmgr.run import run_daemon, run_modem_sim

__all__ = ["run_daemon", "run_modem_sim"]
