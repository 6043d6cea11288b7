"""Call-drop logs of a modem bundle and the fit of the per-member drop rate."""
