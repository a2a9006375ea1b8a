"""A torchrun job (gloo on CPU) in which one rank stops before the collective: the other ranks
wait for it inside all_reduce. argv[1]: the rank that stops; argv[2]: a file it creates first."""
import os
import sys
import time

import torch
import torch.distributed as dist

STOPS, MARKER = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(8)
for step in range(1_000_000):
    if rank == STOPS and step == 3:
        open(MARKER, "w").close()
        time.sleep(3600)  # the rank that never reaches the collective
    dist.all_reduce(t)
