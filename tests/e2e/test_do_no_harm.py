"""What watching costs the target and the processes beside it, whatever happens to dlscope
(docs/reliability.md; issue: do no harm)."""
import re

from harness import Fixture, Skip, dlscope, fixture_path, is_root


def need_root():
    if not is_root():
        raise Skip("BPF tests need root")


def test_attach_in_the_middle_of_loader_calls_guesses_no_depth():
    # The target takes the loader lock thousands of times a second and starts a parallel
    # region from main every 1,000 rounds: each attach lands inside some dlopen. A return
    # whose entry came before the probes must not leave main "inside dlopen" (a false
    # loader-lock hazard, every later dlclose held).
    need_root()
    with Fixture(["dlopen_spin", fixture_path("libplain.so")]) as fx:
        for _ in range(8):
            p = dlscope("watch", "--hot", "-p", fx.pid, "--duration", "0.7", timeout=60)
            assert p.returncode == 0 and "loader-lock-hazard" not in p.stdout, \
                p.stdout[-3000:] + p.stderr
            assert "arrivals held" not in p.stderr, p.stderr
