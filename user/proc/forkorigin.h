/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a process came from: its parent, when it started (a fork's time for a child that never
 * exec'd), and whether it still runs its parent's program, read from /proc. A wait on a lock or
 * a pool that came through a fork names that fork.
 */
#ifndef DLSCOPE_FORKORIGIN_H
#define DLSCOPE_FORKORIGIN_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

struct fork_origin {
	pid_t parent; /* 0: none known (its parent exited, or it is init) */
	char parent_comm[64];
	time_t started;	    /* its start (the fork, for a child that did not exec); 0: unknown */
	bool same_program;  /* the parent's executable and command line: no exec since the fork */
	bool parent_exited; /* reparented: the fork's parent is gone */
};

/* 0, or -errno when @pid cannot be read. */
int fork_origin__read(pid_t pid, struct fork_origin *out);
/* "forked from process 812 (python3) at 14:02:11 and never exec'd (the same program)", or ""
 * when no fork is known. */
void fork_origin__describe(const struct fork_origin *fo, char *buf, size_t len);

#endif
