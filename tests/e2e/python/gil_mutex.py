"""The GIL-against-mutex deadlock of a C extension (tests/fixtures/gil_mutex_ext.c)."""
import sys
import threading

sys.path.insert(0, sys.argv[1])
import gil_mutex_ext  # noqa: E402

threading.Thread(target=gil_mutex_ext.hold_mutex, name="holder").start()
print("ready", flush=True)
gil_mutex_ext.lock_with_gil()
