/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event collector of dlscope watch/record: loads bpf/dlwatch.bpf.c, attaches the loader,
 * OpenMP/BLAS and GPU-loader probes to the objects of the watched processes (and to runtimes
 * they load later), keeps each process's library graph current and runs the live detectors.
 */
#ifndef DLSCOPE_WATCH_H
#define DLSCOPE_WATCH_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "sink.h"

struct watch_opts {
	pid_t *pids;
	size_t n_pids, cap_pids;
	char **command; /* -- CMD ARGS, or NULL */
	/*
	 * The command's stdin, stdout and stderr, and it runs in a session of its own, with no
	 * controlling terminal (the TUI's screen is not its to write on, not even by /dev/tty);
	 * NULL: it inherits ours.
	 */
	const int *command_stdio;
	const char *comm; /* every process with this comm, running or exec'ed later */
	/* The agent's: every process (of this PID namespace), running or exec'ed later, as
	 * --comm matches a name. */
	bool every_process;
	/* With comm or every_process: only the processes of this cgroup v2 directory or below,
	 * running (its cgroup.procs) or exec'ed in it later. */
	const char *cgroup;
	/* With comm or every_process: only the processes whose initial environment holds this
	 * entry, NAME=VALUE (--slurm-job: SLURM_JOB_ID=ID), running or at their exec. */
	const char *env_entry;
	/* And, when not NULL, this one too (SLURMD_NODENAME=NODE), checked in user space on the
	 * running processes and at each exec the kernel's filter let in. */
	const char *env_node;
	/* Each process found running is judged as check would judge it (no thread read), its
	 * findings live ones of that moment. */
	bool check_running;
	/* st's live counts (processes, lost) refreshed each second, for a sink's tick. */
	bool live_counts;
	/*
	 * A process's model is read again at most once per settle_ms: the dlopens and dlcloses
	 * in between are judged together at the next read, their objects reported then, with
	 * no one call's stack (the agent's, so that a process loading a library a thousand
	 * times a second costs it a read a second). 0: at each call, as watch does.
	 */
	unsigned int settle_ms;
	/* No thread held until the probes of what it loaded are in place (the agent's): a runtime
	 * loaded later may make its first calls before its probes are attached. */
	bool no_holds;
	/*
	 * No sink writes in time order (the agent's): the calls in progress are not looked at
	 * before each read to know how far the records are complete (a walk of the kernel's
	 * call table, which a thousand calls a second made a third of the collector's time).
	 */
	bool unordered;
	/* Events carry no stack, their registers only (the agent's): what a thousand dlopens a
	 * second of 32 KiB each would take from the targets and the ring. */
	bool no_stacks;
	/* The stream read at most every batch_ms (the agent's): events wait in the ring meanwhile
	 * (each wake-up costs a context switch, a thousand a second on a busy node); 0: at once. */
	unsigned int batch_ms;
	bool follow;	       /* children as they fork */
	bool hot;	       /* also the per-region OpenMP/BLAS entry points */
	bool dlsym;	       /* each dlsym/dlvsym with its result: a probe on its ret too */
	double duration_s;     /* 0: until the targets exit or *stop is set */
	unsigned int futex_ms; /* report futex waits at least this long; 0: no futex tracepoints */
	unsigned int ring_mb;  /* the ring buffer's size in MiB (a power of two); 0: 16 */
	/*
	 * Where the header, events, objects, findings and summary go (user/sink.h): watch's
	 * text, a trace file, the TUI. Called on the collector's thread.
	 */
	struct event_sink *const *sinks;
	size_t n_sinks;
	/*
	 * Set non-zero (from another thread or a signal handler) to end the run. The collector
	 * installs no signal handler: signals are the caller's (the CLI's, the TUI's).
	 */
	volatile sig_atomic_t *stop;
};

/*
 * Run until the targets are gone, the duration is up, or *o->stop is set. Returns 0 or -errno
 * with a one-line reason in @why (missing capability, no such process, ...).
 */
int watch__run(const struct watch_opts *o, struct watch_stats *st, char *why, size_t whylen);

/*
 * The collector's logic without BPF, for tests: raw records (struct dlw_event, as the ring
 * buffer delivers them) are fed to the same dispatcher watch__run uses; no probe is attached.
 */
struct watch;
struct watch *watch__offline_new(const struct watch_opts *o, struct watch_stats *st);
/* Watch @pid from its exec on (as a command is watched). 0 or -errno. */
int watch__offline_add(struct watch *w, pid_t pid, const char *comm);
void watch__offline_feed(struct watch *w, const void *raw, size_t size);
/* The summary to the sinks, and everything freed. */
void watch__offline_end(struct watch *w);

#endif
