/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Thread pointers of a live process without stopping it: glibc's libthread_db walks the
 * thread list in the target's memory (as gdb does), and on x86-64 a thread's descriptor
 * address is its thread pointer (%fs base), from which its TLS lies at fixed offsets.
 */
#ifndef DLSCOPE_TLS_H
#define DLSCOPE_TLS_H

#include <stdint.h>
#include <sys/types.h>

struct target;
struct libgraph;

/*
 * The thread pointer of thread @tid. Returns 0, -ESRCH when no such thread is listed,
 * -ENOTSUP when libthread_db cannot read this process (a static or non-glibc program, or a
 * glibc other than the one libthread_db belongs to: the usual case in a container).
 */
int tls__thread_pointer(const struct target *t, const struct libgraph *g, pid_t tid, uint64_t *tp);

#endif
