"""One window's metrics: its Prometheus scrapes against its raw records (prom), and whether
it held its load (held)."""
