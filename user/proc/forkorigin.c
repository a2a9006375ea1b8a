// SPDX-License-Identifier: GPL-2.0
/* A process's parent and whether it still runs its parent's program (forkorigin.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forkorigin.h"
#include "procfs.h"

/* The boot's wall-clock time: "btime" of /proc/stat. */
static time_t boot_time(void)
{
	char buf[8192], *b;
	long long t;

	if (proc__read_small("/proc/stat", buf, sizeof(buf)) < 0)
		return 0;
	b = strstr(buf, "\nbtime ");
	return b && sscanf(b + 7, "%lld", &t) == 1 ? (time_t)t : 0;
}

static bool same_exe(pid_t a, pid_t b)
{
	char pa[64], pb[64];
	struct stat sa, sb;

	snprintf(pa, sizeof(pa), "/proc/%d/exe", a);
	snprintf(pb, sizeof(pb), "/proc/%d/exe", b);
	return !stat(pa, &sa) && !stat(pb, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int fork_origin__read(pid_t pid, struct fork_origin *out)
{
	unsigned long long start;
	pid_t ppid = 0;
	char *a, *b;
	int err;

	memset(out, 0, sizeof(*out));
	err = proc__ppid_start(pid, NULL, &ppid, &start);
	if (err)
		return err;
	if (boot_time())
		out->started =
			boot_time() + (time_t)(start / (unsigned long long)sysconf(_SC_CLK_TCK));
	/* Init, or reparented to init or a subreaper: the fork's parent is gone. */
	if (ppid <= 1 ||
	    proc__read_stat(ppid, 0, out->parent_comm, sizeof(out->parent_comm), NULL, NULL)) {
		out->parent_exited = ppid == 1;
		return 0;
	}
	out->parent = ppid;
	a = proc__cmdline(pid);
	b = proc__cmdline(ppid);
	out->same_program = a && b && !strcmp(a, b) && same_exe(pid, ppid);
	free(a);
	free(b);
	return 0;
}

void fork_origin__describe(const struct fork_origin *fo, char *buf, size_t len)
{
	char when[32] = "";
	struct tm tm;

	buf[0] = '\0';
	if (!fo->parent)
		return;
	if (fo->started && localtime_r(&fo->started, &tm))
		strftime(when, sizeof(when), " at %H:%M:%S", &tm);
	snprintf(buf, len, "forked from process %d (%s)%s%s", fo->parent, fo->parent_comm, when,
		 fo->same_program ? " and never exec'd (its parent's program and command line)" :
				    "");
}
