// SPDX-License-Identifier: GPL-2.0
/*
 * The reaper of slow descriptors. A first child, made with CLONE_VM | CLONE_VFORK (no page
 * table to copy; the caller waits for it, well under a millisecond), starts with a copy of the
 * caller's descriptor table: it closes all but the descriptors handed over and a pipe's read
 * end, makes the reaper (the same memory, what is left of the table) and exits. The caller then
 * closes its own copies, which are not the last and so cost nothing, and last the pipe's write
 * end. The reaper, reparented to init, sees the pipe end, exits, and the kernel closes the last
 * copies there: their grace periods are paid off the caller's path.
 *
 * There, CLOSERS tasks sharing the reaper's table close them at once: each close waits in the
 * task that makes it, so their grace periods overlap (one after the other, 16 links took 2.5 s).
 *
 * The children only make system calls, on stacks of their own; every signal is blocked in
 * them (a terminal's Ctrl-C is the caller's alone). The reaper shares the caller's memory:
 * what it works from is never unmapped, since the caller may be gone or still running when
 * it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdreaper.h"

#define REAPER_STACK (32 << 10)
#define CLOSER_STACK (8 << 10)
/* Closes at once, each in a task of its own: their grace periods overlap. */
#define CLOSERS 32

/* The children share the caller's thread pointer: no sanitizer bookkeeping on their stacks. */
#if defined(__SANITIZE_ADDRESS__)
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

/* The descriptors a closer closes: fds[i] for i = first, first + step, ... */
struct closer_job {
	const int *fds;
	size_t n, first, step;
};

/*
 * What the reaper works from, in one mapping of its own that is never unmapped (the caller may
 * have ended, or go on, while the reaper runs): the descriptors it holds, ascending, the
 * closers' jobs, then the stacks.
 */
struct reaper_area {
	size_t size;
	int pipe_end;
	size_t n_fds;
	unsigned n_closers;
	struct closer_job jobs[CLOSERS];
	char *stacks; /* the reaper's, then one per closer */
	int fds[];
};

/* What the middle child reports back. */
struct handover {
	struct reaper_area *area;
	pid_t reaper;
};

static NO_ASAN int closer_main(void *arg)
{
	const struct closer_job *j = arg;

	for (size_t i = j->first; i < j->n; i += j->step)
		syscall(SYS_close, j->fds[i]);
	return 0;
}

/*
 * Waits for the pipe's end, then closes what it holds, in CLOSERS tasks sharing its table (each
 * close's wait is the closing task's), and waits for them.
 */
static NO_ASAN int reaper_main(void *arg)
{
	static const char name[16] = "dlscope-reaper";
	struct reaper_area *a = arg;
	char *stack = a->stacks + REAPER_STACK;
	char byte;

	syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0);
	while (syscall(SYS_read, a->pipe_end, &byte, 1) > 0)
		;
	for (unsigned i = 0; i < a->n_closers; i++) {
		stack += CLOSER_STACK;
		if (clone(closer_main, stack, CLONE_VM | CLONE_FILES | SIGCHLD, &a->jobs[i]) < 0)
			closer_main(&a->jobs[i]);
	}
	while (syscall(SYS_wait4, -1, NULL, 0, NULL) > 0)
		;
	return 0;
}

/* Closes all but the area's descriptors, makes the reaper, and exits (the caller waits). */
static NO_ASAN int middle_main(void *arg)
{
	struct handover *h = arg;
	const struct reaper_area *a = h->area;
	unsigned int from = 0;

	for (size_t i = 0; i < a->n_fds; i++) {
		if ((unsigned int)a->fds[i] > from)
			syscall(SYS_close_range, from, (unsigned int)a->fds[i] - 1, 0);
		from = (unsigned int)a->fds[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
	h->reaper = clone(reaper_main, a->stacks + REAPER_STACK, CLONE_VM | SIGCHLD, h->area);
	return 0;
}

static int by_value(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The reaper's area for @fds and @pipe_end: sorted, repeats and negatives dropped. */
static struct reaper_area *area_new(const int *fds, size_t n, int pipe_end)
{
	size_t head = (sizeof(struct reaper_area) + (n + 1) * sizeof(int) + 4095) & ~(size_t)4095;
	size_t size = head + REAPER_STACK + CLOSERS * CLOSER_STACK, k = 0;
	struct reaper_area *a = mmap(NULL, size, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	if (a == MAP_FAILED)
		return NULL;
	a->size = size;
	a->pipe_end = pipe_end;
	a->stacks = (char *)a + head;
	if (n)
		memcpy(a->fds, fds, n * sizeof(*fds));
	a->fds[n] = pipe_end;
	qsort(a->fds, n + 1, sizeof(*fds), by_value);
	for (size_t i = 0; i <= n; i++)
		if (a->fds[i] >= 0 && (!k || a->fds[k - 1] != a->fds[i]))
			a->fds[k++] = a->fds[i];
	a->n_fds = k;
	a->n_closers = k < CLOSERS ? (unsigned)k : CLOSERS;
	for (unsigned i = 0; i < a->n_closers; i++)
		a->jobs[i] = (struct closer_job){ a->fds, k, i, a->n_closers };
	return a;
}

/*
 * Removing a uprobe write-locks every address space that maps its file (libc: all of them,
 * the next program the user starts included) and takes the kernel's dup_mmap_sem for writing,
 * which the next attach waits for. A reaper left at a collector's nice 19, pinned to a busy
 * CPU, held them for seconds: it runs at nice 0 (never below the caller's) on any CPU, set
 * from here, before it ever runs.
 */
static void reaper_unbind(pid_t pid)
{
	cpu_set_t every;
	int nice_now;

	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	if (!errno && nice_now > 0)
		setpriority(PRIO_PROCESS, (id_t)pid, 0);
	CPU_ZERO(&every);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &every);
	sched_setaffinity(pid, sizeof(every), &every);
}

/* Makes the reaper: 0, or -errno with nothing made (and the area unmapped). */
static int make_reaper(struct reaper_area *a)
{
	struct handover h = { .area = a, .reaper = -1 };
	void *stack = mmap(NULL, REAPER_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	sigset_t all, was;
	pid_t mid = -1;
	int err = 0;

	if (stack == MAP_FAILED) {
		err = -ENOMEM;
	} else {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &was);
		mid = clone(middle_main, (char *)stack + REAPER_STACK,
			    CLONE_VM | CLONE_VFORK | SIGCHLD, &h);
		if (mid < 0)
			err = -errno;
		pthread_sigmask(SIG_SETMASK, &was, NULL);
		while (mid > 0 && waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
		munmap(stack, REAPER_STACK);
	}
	if (!err && h.reaper <= 0)
		err = -EAGAIN;
	if (!err)
		reaper_unbind(h.reaper);
	if (err)
		munmap(a, a->size);
	return err;
}

int fd_reaper__start(const int *fds, size_t n)
{
	struct reaper_area *a;
	int p[2], err;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	a = area_new(fds, n, p[0]);
	err = a ? make_reaper(a) : -ENOMEM;
	close(p[0]);
	if (err) {
		close(p[1]);
		return err;
	}
	return p[1];
}
