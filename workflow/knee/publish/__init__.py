"""Publishing: figures, README, tables, the RO-Crate, campaign pages and the audit that
recomputes them. Imports analysis and below, never measurement: figures, README and audit
cannot boot a server."""
