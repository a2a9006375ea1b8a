/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Thread pointers of a live process without stopping it: glibc's thread list is walked in the
 * target's memory with the field offsets glibc publishes for libthread_db (as gdb does, but
 * without libthread_db, so any glibc from 2.33 on is read the same), and on x86-64 a thread's
 * descriptor address is its thread pointer (%fs base), from which its TLS lies at fixed offsets.
 */
#ifndef DLSCOPE_TLS_H
#define DLSCOPE_TLS_H

#include <stdint.h>
#include <sys/types.h>

struct target;
struct libgraph;

/*
 * The thread pointer of thread @tid. Returns 0, -ESRCH when no such thread is listed,
 * -ENOTSUP when the process has no glibc thread list to read (a static or non-glibc program,
 * or a glibc that publishes no field offsets).
 */
int tls__thread_pointer(const struct target *t, const struct libgraph *g, pid_t tid, uint64_t *tp);

/* A thread as glibc lists it. */
struct tls_thread {
	pid_t tid;
	uint64_t descriptor;	/* its struct pthread */
	uint64_t start_routine; /* what pthread_create was given; 0 for the main thread */
};

/*
 * Every thread of glibc's lists in @t, in list order (malloc'd into @out): read without stopping
 * the process, so a thread that starts or ends meanwhile may be missing. Returns 0, -ENOTSUP as
 * tls__thread_pointer, or -ENOMEM.
 */
int tls__threads(const struct target *t, const struct libgraph *g, struct tls_thread **out,
		 size_t *n);

#endif
