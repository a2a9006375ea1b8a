"""A threading.Lock one of the parent's threads holds at fork(); the child, which never execs,
acquires it: a wait that can never end. With "timed", the child's acquire has a timeout, a
wait that ends by itself. Prints "ready CHILD" once the child sleeps in it."""
import os
import sys
import threading
import time

lock = threading.Lock()
held = threading.Event()


def hold():
    with lock:
        held.set()
        time.sleep(1000)


threading.Thread(target=hold, daemon=True).start()
held.wait()
pid = os.fork()
if pid == 0:
    if sys.argv[1:] == ["timed"]:
        lock.acquire(timeout=1000)
    else:
        lock.acquire()
    os._exit(0)
while open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "S":
    time.sleep(0.01)
print("ready", pid, flush=True)
os.waitpid(pid, 0)
