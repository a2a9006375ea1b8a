"""One task of a Slurm job in which the last rank never reaches the collective the others wait
in. argv[1]: how the ranks meet (mpi: mpi4py's Barrier; gloo: torch.distributed's all_reduce;
plain: no library, the others block reading a pipe nobody writes); argv[2]: how the last rank
stays away (sleep, or spin in a Python loop); argv[3]: a folder where each rank creates
ready.RANK just before it waits or stays away."""
import os
import sys
import time

HOW, AWAY, DIR = sys.argv[1], sys.argv[2], sys.argv[3]


def stay_away():
    if AWAY == "sleep":
        time.sleep(3600)
    x = 0
    while True:
        x += 1


def ready(rank):
    open(os.path.join(DIR, f"ready.{rank}"), "w").close()


if HOW == "mpi":
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    ready(rank)
    if rank == size - 1:
        stay_away()
    comm.Barrier()
elif HOW == "gloo":
    import torch
    import torch.distributed as dist
    rank, size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", rank=rank, world_size=size)
    ready(rank)
    if rank == size - 1:
        stay_away()
    dist.all_reduce(torch.ones(8))
else:
    rank, size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    r, w = os.pipe()
    ready(rank)
    if rank == size - 1:
        stay_away()
    os.read(r, 1)
