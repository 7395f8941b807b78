"""Host facts around a window: shares from /proc/stat deltas, CPU pressure, foreign load."""

from knee.measure.host import facts as hostfacts


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
    from knee.analyze import hostfigures

    def session(foreign, steal):
        host = {"readable": True, "client_cpus_foreign_busy": foreign,
                "cpus": {"cpu0": {"busy": 1.0, "steal": steal, "iowait": 0.0}}}
        return {"raw": {"sweep": {"host": host}, "fixture": {}}}
    flags = hostfigures.host_flags({(1, "control"): session(0.95, 0.0),
                                (1, "candidate"): session(0.02, 0.05)})
    assert flags == ["1-candidate/sweep: the hypervisor stole 5.0% of a CPU during the window",
                     "1-control/sweep: the load generator's CPUs were 95% busy with other work "
                     "during the window"]


def test_cpu_speed_is_sampled_per_cpu_and_leaves_the_affinity_as_it_was():
    import os

    from knee.measure.host import speed as hostspeed

    home = os.sched_getaffinity(0)
    speed = hostspeed.sample(sorted(home))
    assert set(speed) == {f"cpu{c}" for c in home} and all(v > 0 for v in speed.values())
    assert os.sched_getaffinity(0) == home
    # a CPU this process may not use is left out, not an error
    assert set(hostspeed.sample([*sorted(home), 4095])) == {f"cpu{c}" for c in home}
    assert os.sched_getaffinity(0) == home


def test_speed_summary_keeps_only_the_window_and_reads_the_sampler_lines():
    from knee.measure.host import speed as hostspeed

    samples = hostspeed.parse("9.9 cpu0 99.0\n10.0 cpu0 10.0\n10.25 cpu1 30.0\n10.5 cpu0 20.0\n"
                              "10.75 cpu0 30.0\n11.5 cpu0 1.0\npartial")
    assert len(samples) == 6  # the cut-off last line is left out
    s = hostspeed.summary(samples, 10.0, 11.0)
    assert s["cpu0"]["median"] == 20.0 and s["cpu0"]["samples"] == 3
    assert s["cpu0"]["p10"] < 20.0 < s["cpu0"]["p90"] <= 30.0 + 1e-9
    assert s["cpu1"] == {"median": 30.0, "p10": 30.0, "p90": 30.0, "samples": 1}


def test_the_speed_series_keeps_each_round_of_the_window_aligned_over_cpus():
    from knee.measure.host import speed as hostspeed

    samples = hostspeed.parse("9.9 cpu0 99.0\n10.0 cpu0 10.0\n10.0 cpu1 11.0\n10.25 cpu1 30.0\n"
                              "10.5 cpu0 20.0\n10.5 cpu1 21.5\n11.5 cpu0 1.0\n")
    assert hostspeed.series(samples, 10.0, 11.0) == {
        "t_ms": [0, 250, 500],
        "speed": {"cpu0": [10.0, None, 20.0], "cpu1": [11.0, 30.0, 21.5]}}
    assert hostspeed.series(samples, 20.0, 21.0) == {"t_ms": [], "speed": {}}


def test_each_recorded_point_keeps_the_span_of_the_loop_it_recorded(monkeypatch):
    import time

    from knee.measure import client
    from knee.measure.runtime.target import Target

    def loop(*_a, **_k):
        time.sleep(0.02)
        return {"wall_s": 0.02, "records": []}

    monkeypatch.setattr(client, "run", loop)
    served = type("Served", (), {"base_url": "http://127.0.0.1:1", "metrics_url": ""})()
    target = Target(served, {"name": "m", "path": "p"}, 0, 1.0, "completions")
    target.send(["warm"], {}, warmup=True)  # a warm-up loop records no point
    before = time.monotonic()
    result = target.send(["a", "b"], {}, 2)
    monkeypatch.setattr("knee.core.prompts.point_record", lambda res, **f: {"point": f["point"]})
    monkeypatch.setattr("knee.measure.progress.point_line", lambda sid, rec: "")
    record = target.record(result, point=2, instrument="sweep", prompt_set=["a", "b"],
                           sampling={})
    (point, (t0, t1)), = target.spans
    assert point is record and before <= t0 < t1 <= time.monotonic() and t1 - t0 >= 0.02


def test_the_sampler_samples_while_the_block_runs_and_stops_after_it():
    import time

    from knee.measure.host import speed as hostspeed

    with hostspeed.Sampler([0], interval=0.05) as sampler:
        t0 = time.monotonic()
        time.sleep(0.6)
        t1 = time.monotonic()
    assert sampler.proc.poll() is not None
    during = sampler.during(t0, t1)["cpu0"]
    assert during["samples"] >= 5 and during["median"] > 0
    assert all(t <= time.monotonic() for t, _, _ in sampler.samples)


def test_the_engine_processes_cpu_share_over_a_window(tmp_path):
    import os

    tick = os.sysconf("SC_CLK_TCK")

    def proc(name, pids):
        for pid, (comm, pgrp, ticks, threads) in pids.items():
            d = tmp_path / name / str(pid)
            d.mkdir(parents=True)
            # pid (comm) state ppid pgrp ... utime(14) stime(15) ... num_threads(20)
            fields = ["S", "1", str(pgrp)] + ["0"] * 8 + [str(ticks), "0"] + ["0"] * 4
            fields += [str(threads)] + ["0"] * 20
            (d / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
        return tmp_path / name

    before = hostfacts.group_cpu(100, proc("a", {100: ("python3", 100, 0, 4),
                                                 101: ("VLLM::Engine Core", 100, tick, 9),
                                                 200: ("other", 200, 0, 1)}))
    after = hostfacts.group_cpu(100, proc("b", {100: ("python3", 100, tick // 2, 4),
                                                101: ("VLLM::Engine Core", 100, 3 * tick, 9),
                                                200: ("other", 200, 50 * tick, 1)}))
    assert set(after) == {"100", "101"}  # another process group is not the engine's
    w = hostfacts.group_window(before, after, 2.0)
    assert w == [{"pid": 100, "name": "python3", "threads": 4, "cpu_share": 0.25},
                 {"pid": 101, "name": "VLLM::Engine Core", "threads": 9, "cpu_share": 1.0}]
    assert hostfacts.group_cpu(None) == {}
