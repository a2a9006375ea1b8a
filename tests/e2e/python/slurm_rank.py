"""One task of a Slurm job in which the last rank never reaches the collective the others wait
in. argv[1]: how the ranks meet (mpi: mpi4py's Barrier; gloo: torch.distributed's all_reduce;
torchrun: the same, in ranks torchrun started;
plain: no library, the others block reading a pipe nobody writes); argv[2]: how the last rank
stays away (sleep, or spin in a Python loop); argv[3]: a folder where each rank creates
ready.RANK just before it waits or stays away. SLURM_RANK_ODD_LIB: a library the last rank alone
loads, and the last rank alone runs with OMP_NUM_THREADS=1 (it starts itself again with it), as
a rank started from another environment would. SLURM_RANK_LATE_LIB: a library the last rank
loads once the file DIR/go exists (a load a watch started after the job sees).
SLURM_RANK_HELPER: each rank starts a child of its own first (as a DataLoader worker: it
inherits the rank's variables and is no rank)."""
import os
import sys
import time

HOW, AWAY, DIR = sys.argv[1], sys.argv[2], sys.argv[3]
ODD_LIB = os.environ.get("SLURM_RANK_ODD_LIB")


def stay_away():
    late = os.environ.get("SLURM_RANK_LATE_LIB")
    if late:
        while not os.path.exists(os.path.join(DIR, "go")):
            time.sleep(0.05)
        import ctypes
        ctypes.CDLL(late)
        open(os.path.join(DIR, "loaded"), "w").close()
    if AWAY == "sleep":
        time.sleep(3600)
    x = 0
    while True:
        x += 1


def ready(rank):
    open(os.path.join(DIR, f"ready.{rank}"), "w").close()


def odd_one_out():
    """The last rank of a job with SLURM_RANK_ODD_LIB: another environment, one more library."""
    if not ODD_LIB or os.environ["SLURM_PROCID"] != str(int(os.environ["SLURM_NTASKS"]) - 1):
        return
    if os.environ.get("OMP_NUM_THREADS") != "1":
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  dict(os.environ, OMP_NUM_THREADS="1"))
    import ctypes
    ctypes.CDLL(ODD_LIB)


odd_one_out()
if os.environ.get("SLURM_RANK_HELPER"):
    import subprocess
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])


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
elif HOW == "torchrun":
    # A rank torchrun started (srun torchrun on each node): its rank and world are torchrun's.
    import torch
    import torch.distributed as dist
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
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
