// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "permission.h"
#include "procfs.h"

#define CAP_SYS_PTRACE_BIT 19
#define PF_EXITING 0x00000004

/* The text after "@field:" in a /proc status file, or NULL. */
static const char *field(const char *status, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ':')
			return p + n + 1;
	return NULL;
}

static bool ids4(const char *status, const char *name, unsigned int ids[4])
{
	const char *p = field(status, name);

	return p && sscanf(p, "%u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]) == 4;
}

static int read_status(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	n = proc__read_small(path, buf, len);
	return n < 0 ? (int)n : 0;
}

static pid_t parent_of(pid_t pid)
{
	char buf[4096];
	const char *p;

	if (read_status(pid, buf, sizeof(buf)) || !(p = field(buf, "PPid")))
		return 0;
	return (pid_t)strtol(p, NULL, 10);
}

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

int permission__can_trace(char *why, size_t len)
{
	char buf[8192], self[PATH_MAX];
	const char *p;
	uint64_t eff = 0;
	bool bpf, perfmon;

	if (!read_status(0, buf, sizeof(buf)) && (p = field(buf, "CapEff")))
		eff = strtoull(p, NULL, 16);
	if (eff & (1ULL << CAP_SYS_ADMIN_BIT))
		return 0;
	bpf = eff & (1ULL << CAP_BPF_BIT);
	perfmon = eff & (1ULL << CAP_PERFMON_BIT);
	if (bpf && perfmon)
		return 0;
	if (!realpath("/proc/self/exe", self))
		snprintf(self, sizeof(self), "dlscope");
	snprintf(why, len,
		 "loading BPF programs and attaching uprobes needs CAP_BPF and CAP_PERFMON, and "
		 "this dlscope has %s; run it as root, or give the binary those capabilities "
		 "(sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep %s: CAP_SYS_PTRACE also lets "
		 "it read other users' processes)",
		 bpf	 ? "CAP_BPF alone" :
		 perfmon ? "CAP_PERFMON alone" :
			   "neither",
		 self);
	return -EPERM;
}

int permission__facts(pid_t pid, struct permission_facts *f)
{
	char buf[8192];
	const char *p;
	unsigned long flags = 0;
	uint64_t cap = 0;
	struct stat st;
	FILE *yf;

	memset(f, 0, sizeof(*f));
	f->pid = pid;
	f->yama = -1;
	if (!read_status(0, buf, sizeof(buf))) {
		ids4(buf, "Uid", f->uid);
		ids4(buf, "Gid", f->gid);
		if ((p = field(buf, "CapEff")))
			cap = strtoull(p, NULL, 16);
		if ((p = field(buf, "CapPrm")))
			f->cap_prm = strtoull(p, NULL, 16);
	}
	f->cap_eff = cap;
	f->cap_sys_ptrace = cap & (1ULL << CAP_SYS_PTRACE_BIT);
	yf = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (yf) {
		if (fscanf(yf, "%d", &f->yama) != 1)
			f->yama = -1;
		fclose(yf);
	}
	if (read_status(pid, buf, sizeof(buf)))
		return -ESRCH;
	if ((p = field(buf, "CapPrm")))
		f->t_cap_prm = strtoull(p, NULL, 16);
	if ((p = field(buf, "State")))
		f->state = p[strspn(p, " \t")];
	ids4(buf, "Uid", f->t_uid);
	ids4(buf, "Gid", f->t_gid);
	if ((p = field(buf, "TracerPid")))
		f->tracer = (pid_t)strtol(p, NULL, 10);
	if (f->tracer &&
	    proc__read_stat(f->tracer, 0, f->tracer_comm, sizeof(f->tracer_comm), NULL, NULL))
		snprintf(f->tracer_comm, sizeof(f->tracer_comm), "?");
	if (!proc__read_stat(pid, 0, NULL, 0, NULL, &flags))
		f->exiting = flags & PF_EXITING;
	/* The files under /proc/PID (not the directory) belong to root when it is not dumpable. */
	snprintf(buf, sizeof(buf), "/proc/%d/status", pid);
	f->proc_owner = stat(buf, &st) ? f->t_uid[1] : st.st_uid;
	/* Yama's relation: dlscope is an ancestor of the target. */
	for (pid_t a = parent_of(pid), self = getpid(), n = 0; a > 1 && n < 4096;
	     a = parent_of(a), n++)
		if (a == self) {
			f->descendant = true;
			break;
		}
	return 0;
}

/* The kernel's rule: the real, effective and saved IDs of the target all equal the caller's. */
static bool same_credentials(const struct permission_facts *f)
{
	for (int k = 0; k < 3; k++)
		if (f->t_uid[k] != f->uid[0] || f->t_uid[k] != f->uid[3] ||
		    f->t_gid[k] != f->gid[0] || f->t_gid[k] != f->gid[3])
			return false;
	return true;
}

/* What to do when CAP_SYS_PTRACE would have let dlscope in. */
static const char *cap_remedy(const struct permission_facts *f)
{
	if (f->uid[1] == 0)
		return "dlscope runs as root but without CAP_SYS_PTRACE (a container or a capability "
		       "bounding set dropped it): grant it (docker run --cap-add=SYS_PTRACE)";
	return "run dlscope as root (or with CAP_SYS_PTRACE)";
}

/* Why the target's credentials keep out a dlscope without CAP_SYS_PTRACE (not all its own). */
static void credentials_reason(const struct permission_facts *f, char *buf, size_t len)
{
	char who[96], me[96];

	if (f->t_uid[0] != f->uid[0] && f->uid[1] == 0)
		snprintf(buf, len,
			 "it belongs to another user, %s, and dlscope runs as root but "
			 "without CAP_SYS_PTRACE (a container or a capability bounding set "
			 "dropped it): grant it (docker run --cap-add=SYS_PTRACE), or run "
			 "dlscope as that user",
			 account__describe(f->t_uid[0], who, sizeof(who)));
	else if (f->t_uid[0] != f->uid[0])
		snprintf(buf, len,
			 "it belongs to another user, %s, and dlscope runs as %s; run dlscope "
			 "as root (or with CAP_SYS_PTRACE) or as that user",
			 account__describe(f->t_uid[0], who, sizeof(who)),
			 account__describe(f->uid[0], me, sizeof(me)));
	else if (f->t_uid[1] != f->uid[0] || f->t_uid[2] != f->uid[0])
		snprintf(buf, len,
			 "it runs with another user's credentials (effective uid %u, saved "
			 "uid %u: a set-user-ID program); %s",
			 (unsigned)f->t_uid[1], (unsigned)f->t_uid[2], cap_remedy(f));
	else
		snprintf(buf, len,
			 "its groups differ from dlscope's (real, effective, saved gid %u, "
			 "%u, %u: a set-group-ID program, or dlscope's own differ); %s",
			 (unsigned)f->t_gid[0], (unsigned)f->t_gid[1], (unsigned)f->t_gid[2],
			 cap_remedy(f));
}

/* Why Yama's ptrace_scope refuses @mode to dlscope, in @buf; false when it does not. */
static bool yama_reason(const struct permission_facts *f, enum ptrace_access mode, char *buf,
			size_t len)
{
	if (mode == ACCESS_READ)
		return false;
	if (f->yama == 3) {
		snprintf(
			buf, len,
			"kernel.yama.ptrace_scope is 3: no process may be traced or read, not even "
			"by root, until the next boot");
		return true;
	}
	if (f->yama == 2 && !f->cap_sys_ptrace) {
		snprintf(
			buf, len,
			"kernel.yama.ptrace_scope is 2: only a process with CAP_SYS_PTRACE may trace "
			"or read another; %s",
			cap_remedy(f));
		return true;
	}
	if (f->yama == 1 && !f->cap_sys_ptrace && !f->descendant) {
		snprintf(buf, len,
			 "kernel.yama.ptrace_scope is 1: only its ancestors (or a tracer it names "
			 "with PR_SET_PTRACER) may trace or read it; start it under dlscope "
			 "(check -- CMD), or %s",
			 cap_remedy(f));
		return true;
	}
	return false;
}

void permission__reason(const struct permission_facts *f, enum ptrace_access mode, char *buf,
			size_t len)
{
	if (!f->state) {
		snprintf(buf, len, "it has exited");
		return;
	}
	if (f->state == 'Z' || f->state == 'X' || f->exiting) {
		snprintf(buf, len, "it is exiting (state %c): its memory is being torn down",
			 f->state);
		return;
	}
	if (mode == ACCESS_SEIZE && f->tracer && f->tracer != getpid()) {
		snprintf(buf, len,
			 "it is already traced by process %d (%s), and a process has one tracer at "
			 "a time; detach that one (quit strace or gdb) and try again",
			 f->tracer, f->tracer_comm);
		return;
	}
	if (!f->cap_sys_ptrace && !same_credentials(f)) {
		credentials_reason(f, buf, len);
		return;
	}
	if (!f->cap_sys_ptrace && f->proc_owner != f->t_uid[1]) {
		snprintf(buf, len,
			 "it is not dumpable (it called prctl(PR_SET_DUMPABLE, 0), or it runs a "
			 "set-user-ID or unreadable executable), so only a process with "
			 "CAP_SYS_PTRACE may read it, even as its own user; %s",
			 cap_remedy(f));
		return;
	}
	/* The capability module: the target's permitted set must be within dlscope's. */
	if (!f->cap_sys_ptrace &&
	    (f->t_cap_prm & ~(mode == ACCESS_READ ? f->cap_eff : f->cap_prm))) {
		snprintf(buf, len,
			 "it holds capabilities that dlscope lacks (its permitted set 0x%" PRIx64
			 ", dlscope's 0x%" PRIx64
			 "), and only a process with CAP_SYS_PTRACE may read "
			 "a more privileged one; %s",
			 f->t_cap_prm, mode == ACCESS_READ ? f->cap_eff : f->cap_prm,
			 cap_remedy(f));
		return;
	}
	if (yama_reason(f, mode, buf, len))
		return;
	snprintf(buf, len,
		 "dlscope sees no reason in its credentials, the target's or Yama: a security "
		 "module (SELinux, AppArmor) refused, the target is in another user namespace%s",
		 f->t_uid[1] == 0 && !f->cap_sys_ptrace ?
			 ", or it is a root process that is not dumpable" :
			 "");
}

void permission__explain(pid_t pid, enum ptrace_access mode, char *buf, size_t len)
{
	struct permission_facts f;

	/* ptrace refuses a process its own tracee: no credential or setting changes that. */
	if (pid == getpid())
		snprintf(buf, len,
			 "it is this dlscope itself, which cannot stop itself (run "
			 "dlscope on it from another process)");
	else if (permission__facts(pid, &f))
		snprintf(buf, len, "it has exited");
	else
		permission__reason(&f, mode, buf, len);
}
