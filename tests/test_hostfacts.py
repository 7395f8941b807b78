"""Host facts around a window: shares from /proc/stat deltas, CPU pressure, foreign load."""

from knee import hostfacts


def fake_proc(tmp_path, name, cpu1_busy, cpu1_idle, psi_us, load="0.50"):
    d = tmp_path / name
    (d / "pressure").mkdir(parents=True)
    # user nice system idle iowait irq softirq steal
    (d / "stat").write_text(
        f"cpu  {100 + 2 * cpu1_busy} 0 0 {cpu1_idle} 0 0 0 2\n"
        f"cpu0 {100 + cpu1_busy} 0 0 0 0 0 0 2\n"
        f"cpu1 {cpu1_busy} 0 0 {cpu1_idle} 0 0 0 0\nintr 1 2 3\n")
    (d / "loadavg").write_text(f"{load} 0.4 0.3 1/100 123\n")
    (d / "pressure" / "cpu").write_text(f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi_us}\n"
                                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    return d


def test_window_shares_pressure_and_foreign_load(tmp_path):
    before = hostfacts.snapshot(fake_proc(tmp_path, "a", 0, 0, 1_000_000), tmp_path)
    after = hostfacts.snapshot(fake_proc(tmp_path, "b", 80, 20, 1_500_000, "1.50"), tmp_path)
    # a 1 s window in which the load generator itself used 0.3 s of CPU
    before.update(t=10.0, self_cpu_s=2.0)
    after.update(t=11.0, self_cpu_s=2.3)
    w = hostfacts.window(before, after, client_cpus=[1])
    assert w["cpus"]["cpu1"] == {"busy": 0.8, "steal": 0.0, "iowait": 0.0}
    assert w["cpus"]["cpu0"]["busy"] == 1.0 and w["cpus"]["cpu"]["busy"] == 0.8889
    assert w["cpu_pressure"] == 0.5 and w["load1_after"] == 1.5
    assert w["client_cpus_foreign_busy"] == 0.5  # 80 % busy, 30 % of it the client's own


def test_unreadable_proc_says_so(tmp_path):
    assert hostfacts.snapshot(tmp_path / "missing") is None
    assert hostfacts.window(None, None) == {"readable": False}


def test_busy_host_windows_are_flagged_in_the_comparison():
    from knee import compare

    def session(foreign, steal):
        host = {"readable": True, "client_cpus_foreign_busy": foreign,
                "cpus": {"cpu0": {"busy": 1.0, "steal": steal, "iowait": 0.0}}}
        return {"raw": {"sweep": {"host": host}, "fixture": {}}}
    flags = compare.host_flags({(1, "control"): session(0.95, 0.0),
                                (1, "candidate"): session(0.02, 0.05)})
    assert flags == ["1-candidate/sweep: the hypervisor stole 5.0% of a CPU during the window",
                     "1-control/sweep: the load generator's CPUs were 95% busy with other work "
                     "during the window"]


def test_cpu_speed_is_measured_per_cpu_and_leaves_the_affinity_as_it_was():
    import os

    home = os.sched_getaffinity(0)
    speed = hostfacts.cpu_speed(sorted(home))
    assert set(speed) == {f"cpu{c}" for c in home} and all(v > 0 for v in speed.values())
    assert os.sched_getaffinity(0) == home
    assert hostfacts.cpu_speed(None) == {}
