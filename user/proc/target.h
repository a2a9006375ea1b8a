/* SPDX-License-Identifier: GPL-2.0 */
/* A live process being inspected: validation, memory reads, paths as the target sees them. */
#ifndef DLSCOPE_TARGET_H
#define DLSCOPE_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target {
	pid_t pid;
	/*
	 * The thread whose /proc entries and memory are read: pid, or a live thread when the
	 * main thread has exited (pthread_exit) and the others run on.
	 */
	pid_t task;
	char comm[64];
	char state;
	/* The executable's path as the target sees it, without the " (deleted)" suffix. */
	char exe[PATH_MAX];
	int mem_fd; /* /proc/PID/mem, used when process_vm_readv is unavailable */
	/*
	 * The target's root directory and executable, held open: files named through them stay
	 * readable after the process exits (a collector reading a process that just died).
	 */
	int root_fd, exe_fd;
	bool root_is_ours; /* its root and mount namespace are ours: paths need no /proc */
	/* A memory image instead of a process (target__from_image): fuzzing, reader tests. */
	const unsigned char *image;
	size_t image_len;
	uint64_t image_base;
	/* A core file instead of a process (target__from_core): its memory, auxv and files. */
	const struct corefile *core;
	/*
	 * How a reader waits for the process to change (a link map being rewritten): by default
	 * a sleep; a collector's loop lets its other threads have its lock meanwhile, one of
	 * which may be what the process waits for (a hold).
	 */
	void (*sleep)(const struct target *t, long ns);
	void *sleep_arg;
	/* Between pieces of a long read (a link map of hundreds of entries): the same threads
	 * let in, without a wait. NULL: nothing to do. */
	void (*pause)(const struct target *t);
	/* /proc/PID/environ, read at the first target__getenv and kept (NULL: not kept, read
	 * each time): check asked it once an object, 506 reads for 500 objects. So
	 * target__getenv writes here: a target is not to be shared between threads. */
	struct target_env *env;
};

/*
 * Open PID for reading without stopping it. Refuses, with a one-line reason in @why, a PID that
 * does not exist, a zombie, a kernel thread, or one we may not ptrace-read. Returns 0 or -errno.
 */
int target__open(pid_t pid, struct target **out, char *why, size_t whylen);
void target__free(struct target *t);
/*
 * @t, kept open by a reader that reads the same image again: its name, state and task read
 * anew (a thread renamed it, its main thread exited). 0, or -errno as target__open refuses.
 * What it opened stays the image's: whoever keeps @t drops it at the process's exec.
 */
int target__recheck(struct target *t, char *why, size_t whylen);
/*
 * A target with no process behind it: its memory is the @len bytes at @mem, seen at address
 * @base, and every other read fails with -EFAULT. For feeding the readers bytes (fuzzing).
 */
struct target *target__from_image(const void *mem, size_t len, uint64_t base);

struct corefile;
/*
 * A target that is the process a core file holds (the caller keeps @core open while the target
 * lives): its memory is the core's, its executable @exe (NULL: the one the core names), its
 * files are named from this host's root, its environment is unknown, and it has no /proc
 * entry (task -1). NULL when out of memory.
 */
struct target *target__from_core(const struct corefile *core, const char *exe);

/* Read @len bytes at @addr in the target. Returns 0, or -EFAULT/-ESRCH/-EPERM. */
int target__read(const struct target *t, uint64_t addr, void *buf, size_t len);
/*
 * Up to @len bytes at @addr of a live process, as many as are readable from @addr on (a read
 * stops at the first page that is not): how many, or -errno. A core or an image: -ENOTSUP.
 */
ssize_t target__read_some(const struct target *t, uint64_t addr, void *buf, size_t len);
/*
 * Read @n records of @len bytes, the i-th at @addrs[i], into @buf one after the other, in as
 * few system calls as the kernel allows (a list walked before, read again in one go). Returns
 * how many leading records were read whole.
 */
size_t target__read_many(const struct target *t, const uint64_t *addrs, size_t n, void *buf,
			 size_t len);
/* Read a NUL-terminated string of at most @len-1 bytes. Returns its length or -errno. */
int target__read_str(const struct target *t, uint64_t addr, char *buf, size_t len);
/*
 * The strings at @addrs[0..@n) into @bufs[i] (@len bytes each), as target__read_str reads one,
 * in as few system calls as the kernel allows: short ones (a link map's file names) come in
 * one go, a long one or one next to memory that cannot be read is read alone. @res[i] is each
 * one's length or -errno.
 */
void target__read_strs(const struct target *t, const uint64_t *addrs, size_t n, char *const *bufs,
		       size_t len, int *res);

/*
 * Where the host can open a file the target names: @path under the target's root directory
 * (through the held descriptor, so it works after the target exits).
 */
void target__host_path(const struct target *t, const char *path, char *buf, size_t len);
/* Where the host can open the target's executable, even after it exits. */
void target__exe_path(const struct target *t, char *buf, size_t len);
/* Copy the value of @name from the target's initial environment; -ENOENT when unset. */
int target__getenv(const struct target *t, const char *name, char *buf, size_t len);
/* Wait @ns for the process to move on (struct target: sleep). */
void target__sleep(const struct target *t, long ns);
/* A long read's yield point (struct target: pause). */
void target__pause(const struct target *t);
/* True while the process exists and is not a zombie. */
bool target__alive(const struct target *t);

/* Parse a PID argument; returns -EINVAL for anything but a positive decimal number. */
int parse_pid(const char *s, pid_t *pid);
/* Parse a PID argument onto a growing list of room @cap: -EINVAL (not a PID) or -ENOMEM. */
int parse_pid_append(const char *s, pid_t **pids, size_t *n, size_t *cap);

#endif
