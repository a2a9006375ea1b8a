"""Debian's torch with the fork start method: the parent runs a parallel reduction (GNU libgomp
starts its pool), then forks a multiprocessing child whose first region waits for ever.
Prints "ready CHILD" once the child is started."""
import multiprocessing as mp

import torch

torch.set_num_threads(4)
torch.ones(2000, 2000).sum(dim=0)


def work():
    torch.ones(2000, 2000).sum(dim=0)


if __name__ == "__main__":
    p = mp.get_context("fork").Process(target=work)
    p.start()
    print("ready", p.pid, flush=True)
    p.join()
