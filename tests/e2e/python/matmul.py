"""Threads inside numpy (OpenBLAS) and torch matrix products, for dlscope stacks."""
import sys
import threading
import time

import numpy

a = numpy.random.rand(300, 300)


def numpy_loop():
    while True:
        a @ a  # numpy matmul line


def torch_loop():
    import torch
    t = torch.rand(300, 300)
    while True:
        torch.mm(t, t)  # torch matmul line


threading.Thread(target=numpy_loop, daemon=True).start()
if len(sys.argv) > 1:
    threading.Thread(target=torch_loop, daemon=True).start()
    time.sleep(8)  # the import of torch
print("ready", flush=True)
time.sleep(1000)
