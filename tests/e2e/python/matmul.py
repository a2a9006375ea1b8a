"""Threads inside numpy (OpenBLAS) and torch matrix products, for dlscope stacks."""
import sys
import threading
import time

import numpy

a = numpy.random.rand(300, 300)
# Set once a thread has done its first product: it is in its loop from then on.
in_loop = {"numpy": threading.Event(), "torch": threading.Event()}


def numpy_loop():
    while True:
        a @ a  # numpy matmul line
        in_loop["numpy"].set()


def torch_loop():
    import torch
    t = torch.rand(300, 300)
    while True:
        torch.mm(t, t)  # torch matmul line
        in_loop["torch"].set()


threading.Thread(target=numpy_loop, daemon=True).start()
in_loop["numpy"].wait()
if len(sys.argv) > 1:
    threading.Thread(target=torch_loop, daemon=True).start()
    in_loop["torch"].wait()  # after the import of torch, however long it takes
print("ready", flush=True)
time.sleep(1000)
