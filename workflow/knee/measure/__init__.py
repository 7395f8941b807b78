"""Measurement: the runtimes that boot an engine, the client that loads it, the host and GPU
samplers, the compile cache and the session that runs the instruments in one boot. The only
layer that starts a process or opens a connection."""
