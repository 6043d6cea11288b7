"""Packet captures read back as TCP connections: reading, RTT, timeouts, loss, a fitted path."""
