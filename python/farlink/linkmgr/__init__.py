"""The link manager's Python side: the front of its daemon and simulated modems, readers of its
event log and its web dashboard.

The daemon itself (crates/farlink-linkmgr) writes the event log of docs/linkmgr.md;
:mod:`~farlink.linkmgr.run` starts it and the simulated modems (``farlink linkmgr run``,
``farlink linkmgr modem-sim``); here are
:mod:`~farlink.linkmgr.eventlog` (read-only access), :mod:`~farlink.linkmgr.tracker` (the log
folded into the bundle's state), :mod:`~farlink.linkmgr.uptime`, :mod:`~farlink.linkmgr.export`
(CSV and the XML connection database of seed 000 Figure 7.4), :mod:`~farlink.linkmgr.metrics`,
:mod:`~farlink.linkmgr.dashboard` (the web page, live updates, ``/metrics``), and
:mod:`~farlink.linkmgr.synthetic` (a writer of the same schema, for tests and examples).
"""
