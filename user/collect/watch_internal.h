/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The collector's parts (user/collect), what they share: struct watch, the state of one run,
 * and each part's entry points. watch.c dispatches events to them; nothing outside
 * user/collect includes this.
 *
 *   probes.c        the BPF object: load, the uprobes of each object's roles, their links
 *   records.c       what a kernel record leaves for user space to read (strings)
 *   sampling.c      the stacks events carry, unwound and named from the model (read-only)
 *   reported.c      what of each process's objects has been reported
 *   live_findings.c the live detectors' hooks, and their findings to the sinks
 *   pyprocs.c       the CPython interpreters of watched processes, for the kernel
 *   proctable.c     the watched processes and their models, following the events
 *   stuck.c         threads sampled stuck inside dlopen or dlsym
 *   hot.c           --hot: the activity counts, busy pools and oversubscription
 *   spawn.c         the command: started held, its end, ended with the run
 *   reader.c        the rings: the holds' reader thread, time order, the drain
 *   watch.c         the dispatcher and the run
 */
#ifndef DLSCOPE_WATCH_INTERNAL_H
#define DLSCOPE_WATCH_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "detector.h"
#include "dlwatch.h"
#include "event.h"
#include "horizon.h"
#include "libgraph.h"
#include "pystate.h"
#include "sink.h"
#include "unwind.h"
#include "watch.h"

struct bpf_program;
struct ring_buffer;
struct elf_object;

/* Frames of a stack carried by an event: CPython's are about 180 bytes each, and the copy
 * holds at least 28 KiB. */
#define EVENT_MAX_FRAMES 256

/*
 * An event as the dispatcher handles it: typed (event.h), decoded from a kernel record or made
 * here (a thread sampled stuck inside dlopen), with what only the collector needs.
 */
struct watch_event {
	struct event ev;
	char comm[16];		      /* the thread's name as it set it (findings carry it so) */
	const struct dlw_event *raw;  /* the kernel's record (registers, stack); NULL: made here */
	size_t size;		      /* its size */
	const struct dlw_pystack *py; /* a dlopen's Python stack, after the stack's bytes */
};

struct proc_state {
	pid_t pid;
	struct libgraph *g;
	struct procmaps *maps;
	/* Opened for reading, kept between reads of one image where each call is read (watch's:
	 * no settle_ms), to spare the dozen /proc look-ups of an open at each dlopen; for the
	 * first TARGETS_KEPT_MAX processes that have one. */
	struct target *t;
	/*
	 * The model is read from the process, which runs ahead of the event stream: objects it
	 * already has are reported only when the event that brought them (its exec, the dlopen
	 * that returned them) is handled, so each arrival carries the right time and stack.
	 * What has been reported is marked on g's objects (reported.c).
	 */
	bool seen_all; /* attached to a running process: what it had before is not news */
	/* Its exec (no stack): the cause of start-up objects first seen after it. */
	struct watch_event start;
	struct sample_unwinder *uw; /* its objects' CFI and symbols, for the stacks events carry */
	uint64_t uw_used;	    /* when uw last unwound (w->uw_clock), for UNWINDERS_MAX */
	/* Its CPython interpreter, once found among its objects: the kernel then reads the
	 * Python stack of each dlopen. */
	bool python;
	struct py_interp py;
	struct py_code_cache *codes; /* the code objects its dlopens' frames named */
	bool py_preset;	      /* found in the command's file before it ran: kept at its exec */
	bool py_unknown_said; /* a Python whose frames are not known: said once */
	bool loader_said;     /* it started under a loader not probed yet: said once */
	bool oversubscribed;  /* --hot: its live oversubscription finding was reported */
	bool nested_said;     /* --hot: its live blas-in-parallel finding was reported */
	bool dlerror_noted;   /* the kernel knows where its failed dlopens leave their error */
	/*
	 * Its pools' sizes seen so far (the most threads of each): a scan sees only the threads
	 * blocked at that moment, so each second that two pools are busy adds one, up to
	 * POOL_SCANS.
	 */
	struct pool_seen {
		const char *runtime;
		int most;
	} pools[8];
	size_t n_pools;
	unsigned int pool_scans;
	/*
	 * Reported objects gone from its last snapshot, not said yet: the process runs ahead of
	 * the stream, so a snapshot read at one dlclose's record has lost the objects of later
	 * ones too. Each is said with the dlclose whose handle (a link_map) is it, or one it
	 * needed; what no dlclose claims, at its exec or exit (proctable.c: unloads).
	 */
	struct gone_obj {
		uint64_t lm_addr;
		char *path;
		uint64_t *needs; /* the link_maps of what it needed, to go with it */
		size_t n_needs;
		unsigned int snapshot; /* the refresh that found it gone: link_maps are reused */
		uint64_t loaded_at;    /* when it was reported: no dlclose before can unload it */
		bool said;
	} * gone;
	size_t n_gone, cap_gone;
	unsigned int refreshes;
	/* watch_opts.settle_ms: its last read, and calls since whose objects are not judged. */
	uint64_t read_at;
	uint64_t read_started; /* when that read began: what the holds met since is newer */
	bool unsettled;
	/* What each handle a dlopen returned is, by the stream: the model may have read a
	 * later load at that link_map. */
	struct handle_path {
		uint64_t handle;
		char *path;
	} * opened;
	size_t n_opened, cap_opened;
};

/*
 * The collector's state, grouped by the part that owns it (as the kernel's struct rq groups
 * cfs, rt and dl): the part's file is named beside each group. What no one part owns (the
 * options, caches, the BPF object, the processes, the event being handled) is at the top.
 */
struct watch {
	const struct watch_opts *o;
	struct elf_cache *cache; /* every process's files, analysed once */
	struct pkg_cache *pkgs;	 /* the package databases of each root, read as objects need */
	struct watch_stats *st;
	struct dlwatch_bpf *skel;
	struct proc_state *procs; /* proctable.c */
	size_t n_procs, cap_procs;
	size_t n_targets_kept; /* procs[].t held open: three descriptors each, TARGETS_KEPT_MAX */
	uint64_t uw_clock;
	unsigned long long t0;

	/* The two rings (reader.c, records.c): the holds' first, then every other event. */
	struct {
		struct ring_buffer *rb;
		struct ring_buffer *hrb; /* the holds (DLW_HOLD), read before any other event */
		int epfd;		 /* both rings' */
		void *pos;		 /* the event ring's positions (two pages) */
		size_t page_size;
	} ring;

	/* The uprobes (probes.c). */
	struct {
		/* The files probed, by process when only the watched processes pay. */
		struct attached_file *files;
		size_t n_files;
		size_t cap_files;
		/*
		 * A fixed set of processes (-p, -- CMD, without --follow, --comm or --job): every
		 * uprobe goes into their address spaces only (uprobe_multi's PID filter), and no
		 * other process that maps the same file takes a trap. attach_pid: the process the
		 * probes being attached now are for (0: every process).
		 */
		bool pid_filter;
		pid_t attach_pid;
		int *links; /* uprobe_multi links (fds) */
		size_t n_links;
		size_t cap_links;
		size_t n_probes; /* the uprobes in them */
		/* Processes whose new image's loader had no probe at its exec, until the exec
		 * is read (probes__probe_exec_loader). */
		struct late_loader *late;
		size_t n_late, cap_late;
	} probes;

	/* --hot (hot.c, activity.c): the kernel's counts, read each second, and the runtimes
	 * that ran regions in the interval being read, per process. */
	struct {
		struct activity_counts *counts;
		unsigned long long last_activity;
		struct busy_pool {
			pid_t pid;
			const char *runtime;
			const char *kind; /* "openmp" or "blas" */
			unsigned long long n;
			pid_t starters[8];
			unsigned long long starter_n[8]; /* what each started in the interval */
			size_t n_starters;
		} busy[32];
		size_t n_busy;
	} hot;

	/* The loop (watch.c): its reads, and the last one after it. */
	struct {
		unsigned long long last_counts; /* watch_opts.live_counts: when st's were last set */
		unsigned long long batch_at;	/* watch_opts.batch_ms: when the last read began */
		unsigned long long last_scan;
		/* When the batch being read must give the loop back (deadline, signals, the
		 * command). */
		unsigned long long batch_end;
		bool draining;	      /* the last read, after the loop */
		bool drain_all;	      /* the targets ended by themselves: that read takes all */
		bool counting;	      /* past that read: what is left is counted, not handled */
		unsigned int drained; /* events handled by that read */
	} loop;

	/* The command (spawn.c). */
	struct {
		pid_t pid;
		bool done;
	} command;

	/*
	 * The holds' reader (reader.c): a thread at real-time priority that waits on the holds'
	 * ring and answers them under @lock, which the loop holds but while it waits and between
	 * two records. Priority-inheriting: a loop started at nice 19 that holds it when a hold
	 * comes runs at the reader's priority until it lets go.
	 */
	struct {
		pthread_mutex_t lock;
		pthread_t thread;
		/* Readers waiting for @lock (reader__let_holds_in); a hold being answered. */
		int holds_waiting;
		bool in_hold;
		/* The heartbeat (beat), which lets the BPF holds know the collector answers. */
		pthread_t beat;
		bool beat_on, beat_stop;
		int wake;      /* an eventfd: the reader's stop, without waiting out its poll */
		int reaper_fd; /* closed last: the reaper of the links ends (probes__stop) */
		bool on, stop;
	} reader;

	/* What each process's holds have met (holds.c), under @lock (taken after reader.lock,
	 * never before it): the reader answers a hold that met nothing new with it alone. */
	struct {
		pthread_mutex_t lock;
		struct hold_proc *procs;
		size_t n_procs, cap_procs;
	} holds;

	/* Forks of processes whose GNU libgomp pool had threads, said once the child has not
	 * exec'd (forkwatch.c); the last pool count, reused by a parent forking again. */
	struct {
		struct fork_pending {
			pid_t parent, child;
			int threads;
			unsigned long long t;
			char runtime[256];
			char comm[16];
		} pending[16];
		size_t n;
		struct {
			pid_t pid;
			unsigned long long t;
			int threads;
			char runtime[256];
		} pool_count;
	} forks;

	/* Time order (order.h, horizon.h): the horizon the sinks were given, the latest record
	 * read, the calls that hold it back. */
	struct {
		unsigned long long horizon, last_read;
		struct horizon hz;
	} order;

	/* Calls stuck in the loader (stuck.c): one report per dlopen. */
	struct {
		struct stuck {
			pid_t tid;
			unsigned long long since; /* the dlopen's start */
		} calls[64];
		size_t n;
	} stuck;

	/* The event being handled and the stack it carries, unwound once when first needed. */
	struct {
		const struct watch_event *we;
		const unsigned char *stack;
		size_t len;
		bool done;
		bool fresh;    /* the model was read again for this event */
		bool settling; /* a call left for the process's next read (settle_ms) */
		struct thread_stack ts;
		char python[640]; /* its Python stack in short: "`import numpy` at train.py:3" */
	} cur;
};

/* The longest the loop reads events before it checks its deadline, signals and command. */
#define BATCH_NS (50ULL * 1000 * 1000)
#define BATCH_OVER (-ECANCELED)
/* The least the last read handles, whatever the time: a storm's rest is counted, not a run's. */
#define DRAIN_MIN_EVENTS 256

/* The caller's stop flag: the collector installs no signal handler of its own. */
/* Processes that become targets at their exec, by name (--comm) or all (the agent). */
static inline bool watch__by_exec(const struct watch_opts *o)
{
	return o->comm || o->every_process;
}

static inline bool stopping(const struct watch *w)
{
	return w->o->stop && *w->o->stop;
}

/* Call @cb of every sink that has one. */
#define SINKS(w, cb, ...)                                          \
	do {                                                       \
		for (size_t i_ = 0; i_ < (w)->o->n_sinks; i_++) {  \
			struct event_sink *s_ = (w)->o->sinks[i_]; \
			if (s_->cb)                                \
				s_->cb(s_, ##__VA_ARGS__);         \
		}                                                  \
	} while (0)

static inline unsigned long long mono_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static inline struct proc_state *proctable__find(struct watch *w, pid_t pid)
{
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	return NULL;
}

/* probes.c */
/* A loader not probed when the process exec'd into it: its window unwatched. */
struct late_loader {
	pid_t pid;
	unsigned long long exec_ns;
	unsigned long long probed_ns; /* 0: it could not be (gone before) */
	bool own;		      /* a static program, its own loader */
	char loader[PATH_MAX];
};
int probes__check_capabilities(char *why, size_t len);
/* The BPF object configured from the options, loaded, its tracepoints attached. */
int probes__load(struct watch *w, char *why, size_t whylen);
void probes__attach_object(struct watch *w, pid_t pid, const struct lg_object *o);
/* Tell the kernel where process @pid's failed dlopens leave their error, when @o is glibc's
 * C library (2.34 or later, where dlerror's state is its TLS): true once told. */
bool probes__note_dlerror(struct watch *w, pid_t pid, const struct lg_object *o);
void probes__attach_own_libc(struct watch *w, pid_t pid);
/* Whether loader @o's r_brk was probed already, so that what it loads is held for the probes. */
bool probes__loader_probed(struct watch *w, pid_t pid, const struct lg_object *o);
/* Whether @o is its process's loader: its interpreter, or a static glibc program with dlopen. */
bool probes__is_loader(const struct lg_object *o);
/* @o's file has no probe to put in place, after probes__attach_object(@w, @pid, @o): it needs
 * none in this watch, or they are all in place (in every process, or in @pid's address space
 * with the PID filter). Its next dlopens there go unheld. */
void probes__note_no_probes(struct watch *w, pid_t pid, const struct lg_object *o);
/* Probe the loader the command @argv0 (process @pid, held before its exec) will run, when it
 * is not ours: a musl program's ld-musl, a program built for another glibc's loader. */
void probes__attach_command_loader(struct watch *w, pid_t pid, const char *argv0);
/* Process @pid's new image (exec'd at @exec_ns; @first_ino: the inode of the file its first
 * instruction is in, 0 unknown): its loader probed now when it has no probes yet. */
void probes__probe_exec_loader(struct watch *w, pid_t pid, uint64_t first_ino,
			       unsigned long long exec_ns);
/* Whether @pid's exec at @exec_ns was under a loader not probed yet: then *@out (taken). */
bool probes__late_loader(struct watch *w, pid_t pid, unsigned long long exec_ns,
			 struct late_loader *out);
void probes__detach_all(struct watch *w);
/* @waiting: called while it waits for the programs in progress (a held thread's among them). */
void probes__stop(struct watch *w, void (*waiting)(struct watch *w));
void probes__count_lost(struct watch *w, struct watch_stats *st);

/* holds.c: a hold's probes, the objects new since the process's last hold */
struct linkmap;
/* Under @lock: @walked (taken), the walk holds__answer_known made, or NULL to walk.
 * @unloads: the process's unloads at the hold (DLW_HOLD arg2). */
void holds__answer(struct watch *w, pid_t pid, uint64_t unloads, struct linkmap *walked);
/* A hold answered without @lock: true when its process's link map has nothing new since its
 * last hold (nothing to probe); false: holds__answer, under @lock, given *@walked (the new
 * entries it met, or NULL when it could not walk). */
bool holds__answer_known(struct watch *w, pid_t pid, uint64_t unloads, struct linkmap **walked);
void holds__forget(struct watch *w, pid_t pid);
/*
 * For a process gone before the loop read it again: the graph its first hold read (the
 * caller's now) when @old is empty or that read came after @ended, else @old with the objects
 * later holds met after @started added (CLOCK_MONOTONIC ns: the loop's last read began and
 * ended then); NULL when neither has anything newer.
 */
struct libgraph *holds__take_graph(struct watch *w, pid_t pid, const struct libgraph *old,
				   uint64_t started, uint64_t ended);
/* The loop read the process, starting at @before: what the holds kept of it until then goes. */
void holds__drop_graph(struct watch *w, pid_t pid, uint64_t before);
void holds__free_all(struct watch *w);

/* proctable.c: the gone objects no event claimed, dropped with the process */
void proctable__forget_gone(struct proc_state *ps);

/* forkwatch.c: a fork while a fork-unsafe pool has threads */
void forkwatch__on_fork(struct watch *w, const struct proc_state *ps, const struct event *ev);
void forkwatch__tick(struct watch *w, unsigned long long now);

/* records.c */
void records__read_str(pid_t pid, uint64_t addr, char *buf, size_t len);
const struct dlw_event *records__with_str(const struct dlw_event *e, size_t size,
					  struct dlw_event *copy);

/* sampling.c: naming never changes the model (see watch.c: name_stack) */
bool sampling__unwind(struct watch *w, struct proc_state *ps, const struct dlw_event *e);
const struct thread_stack *sampling__event_stack(struct watch *w, struct proc_state *ps,
						 const struct watch_event *we);
bool sampling__stack_of(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			struct event_stack *out);
void sampling__name_signal(struct watch *w, struct proc_state *ps, struct watch_event *we);

/* reported.c */
bool reported__same_load(const struct lg_object *a, const struct lg_object *b);
/* @o of @g reported (o->reported), with every object of @g that is the same load. */
void reported__mark(struct libgraph *g, const struct lg_object *o, uint64_t t);
/* ... no longer: gone from the process (the objects of an old snapshot). */
void reported__forget(struct libgraph *g, const struct lg_object *o);
void reported__carry(const struct libgraph *old, struct libgraph *g);

/* live_findings.c */
struct live_ctx live_findings__ctx(struct watch *w, struct proc_state *ps);
void live_findings__report(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			   struct findings *fs);
void live_findings__on_object(struct watch *w, struct proc_state *ps,
			      const struct watch_event *cause, const struct lg_object *o);
void live_findings__on_event(struct watch *w, struct proc_state *ps, const struct event *ev,
			     struct findings *fs);
bool live_findings__loader_lock(const struct proc_state *ps, uint64_t uaddr);
void live_findings__check_running(struct watch *w, struct proc_state *ps);
bool proctable__settling(struct watch *w, struct proc_state *ps, const struct event *ev);
void proctable__settle(struct watch *w);

/* pyprocs.c */
void pyprocs__find(struct watch *w, struct proc_state *ps);
void pyprocs__forget(struct watch *w, struct proc_state *ps, pid_t pid);
void pyprocs__of_command(struct watch *w, struct proc_state *ps, const char *argv0);

/* proctable.c */
int proctable__refresh(struct watch *w, struct proc_state *ps);
/* Whether dlopen or dlclose @we changed nothing a read of @ps would find (no read needed). */
bool proctable__unchanged(const struct proc_state *ps, const struct watch_event *we);
int proctable__add_empty(struct watch *w, pid_t pid, const char *comm, bool kernel_knows);
int proctable__add(struct watch *w, pid_t pid, pid_t parent);
void proctable__drop(struct watch *w, pid_t pid);
void proctable__drop_exited(struct watch *w, pid_t pid);
struct proc_state *proctable__follow(struct watch *w, struct proc_state *ps,
				     const struct watch_event *we);
void proctable__add_by_comm(struct watch *w, const char *comm);
/* The processes to watch, the command started (held until @release_fd is written), by name. */
int proctable__add_targets(struct watch *w, int *release_fd, char *why, size_t whylen);
void proctable__free_all(struct watch *w);

/* stuck.c: each event found handed to @dispatch */
void stuck__scan(struct watch *w, void (*dispatch)(struct watch *w, struct watch_event *we));

/* hot.c: --hot: the kernel's counts, read every ACTIVITY_NS and sent as activity records */
#define ACTIVITY_NS 1000000000ULL
void hot__read_activity(struct watch *w, unsigned long long t, bool last);

/* spawn.c */
pid_t spawn__held(char **argv, const int *stdio, int *release_fd);
/* The file execvp runs for @argv0 (a path, or searched on PATH), resolved: 0 or -ENOENT. */
int spawn__resolve(const char *argv0, char *out, size_t len);
bool spawn__targets_done(struct watch *w);
void spawn__end_command(struct watch *w);

/* reader.c */
int reader__open_rings(struct watch *w, int (*on_event)(void *ctx, void *data, size_t size),
		       char *why, size_t whylen);
void reader__start(struct watch *w);
/* The holds' ring read by the loop, while no reader thread reads it. */
void reader__consume_holds(struct watch *w);
/* The loop lets a waiting hold's reader have @lock, between two pieces of its work. */
void reader__let_holds_in(struct watch *w);
/* The loop's work that touches nothing the reader does (a process's /proc files) done
 * without @lock: a hold is answered meanwhile. true: let go, to be taken back by relock. */
bool reader__unlock(struct watch *w);
void reader__relock(struct watch *w, bool unlocked);
/* @t's reads wait for the process (linkmap retries) with @lock let go. */
void reader__sleep_unlocked(struct watch *w, struct target *t);
void reader__stop(struct watch *w);
void reader__look(struct watch *w);
void reader__release_ordered(struct watch *w, bool batch_over);
void reader__close_rings(struct watch *w);
void reader__drain(struct watch *w);

#endif
