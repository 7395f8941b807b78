"""The instruments: each runs one window of traffic and returns its raw points."""

from knee.instruments import depth, fixture, probe, sweep

REGISTRY = {"sweep": sweep.run, "fixture": fixture.run, "depth": depth.run, "probe": probe.run}
