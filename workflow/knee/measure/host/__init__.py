"""The host a session measures on, read beside its windows: the GPUs through NVML (gpu), the
CPUs' speed on a fixed piece of work (speed), the kernel's counters around each window
(facts), and where the engine's processes listen (listening)."""
