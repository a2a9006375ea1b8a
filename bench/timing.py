"""What the benches share: the median wall time of a command run several times."""
import statistics
import subprocess
import time


def timed(argv, runs, ok=None):
    """Median seconds of @runs runs of @argv (output dropped); @ok: the exit codes allowed."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        assert ok is None or p.returncode in ok, (argv, p.returncode)
    return statistics.median(times)
