// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope's event stream: uprobes on the dynamic loader's API, the OpenMP/BLAS entry points
 * and the GPU module loaders, raw tracepoints for exec/fork/exit, fatal signals and long futex
 * waits. Only processes in the targets map are reported; per-thread state (inside dlopen, and
 * how many parallel regions it started) stays in the kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "dlwatch.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool follow_children = false;
/* --comm: a process that execs a program with this comm becomes a target, in the kernel. */
const volatile bool comm_mode = false;
const volatile char comm_filter[16] = {};
/* The agent: with comm_mode, every process that execs becomes a target, whatever its name. */
const volatile bool comm_any = false;
/* Threads held at the consistent link map until the new objects' probes are in place; the
 * agent holds none (what it judges is read from the model, not from the first calls). */
const volatile bool hold_arrivals = true;
/* Events carry the stack above their sp for unwinding; the agent's carry registers only. */
const volatile bool copy_stacks = true;
/* The agent's --cgroup: with comm_mode, only a process that execs inside target_cgroup. */
const volatile bool cgroup_filter = false;
/* --slurm-job without the job's cgroup: with comm_mode, only a process whose environment holds
 * the entry env_filter ("SLURM_JOB_ID=42", its NUL included in env_filter_len) at its exec. */
const volatile bool env_filter_on = false;
const volatile char env_filter[DLW_ENV_ENTRY_MAX] = {};
const volatile unsigned int env_filter_len = 0;

/* The parts, each at its seam; later ones use what earlier ones define. */
#include "dlwatch/ring.bpf.h"
#include "dlwatch/python.bpf.h"
#include "dlwatch/loader.bpf.h"
#include "dlwatch/runtimes.bpf.h"
#include "dlwatch/gpu.bpf.h"
#include "dlwatch/holds.bpf.h"
#include "dlwatch/lifecycle.bpf.h"
#include "dlwatch/futex.bpf.h"
