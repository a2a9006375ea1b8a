"""Threads in known Python places, for dlscope stacks: sleeping a few calls deep, blocked on a
threading.Lock, blocked on an RLock another thread holds. SIGUSR1 makes faulthandler write
every thread's frames to the file named by argv[1]: the interpreter's own account."""
import faulthandler
import signal
import sys
import threading
import time

dump = open(sys.argv[1], "w")
faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
lock = threading.Lock()
lock.acquire()
rlock = threading.RLock()
holding = threading.Event()


def nap():
    time.sleep(1000)


class Worker:
    def run(self):
        nap()


def wait_lock():
    with lock:
        pass


def hold_rlock():
    with rlock:
        holding.set()
        time.sleep(1000)


def wait_rlock():
    holding.wait()
    rlock.acquire()


for fn in (Worker().run, wait_lock, hold_rlock, wait_rlock):
    threading.Thread(target=fn, name=fn.__name__, daemon=True).start()
holding.wait()
threading.main_thread().name = "Main-\u00fc"  # read live, and not ASCII
print("ready", flush=True)
time.sleep(1000)
