/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Why the kernel refused dlscope another process: the same checks as the kernel's
 * __ptrace_may_access and Yama, in its order, from what /proc shows. A permission error then
 * names the real reason (another user, no CAP_SYS_PTRACE, non-dumpable, Yama, another tracer,
 * exiting) instead of guessing.
 */
#ifndef DLSCOPE_PERMISSION_H
#define DLSCOPE_PERMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ptrace_access {
	ACCESS_READ,   /* /proc/PID/exe, maps (PTRACE_MODE_READ): Yama does not apply */
	ACCESS_ATTACH, /* /proc/PID/mem, process_vm_readv (PTRACE_MODE_ATTACH): Yama applies */
	ACCESS_SEIZE,  /* PTRACE_SEIZE: also refused while another tracer holds it */
};

/* What the checks look at: dlscope's credentials and the target's, as /proc shows them. */
struct permission_facts {
	uid_t uid[4]; /* dlscope: real, effective, saved, filesystem */
	gid_t gid[4];
	bool cap_sys_ptrace;	   /* in dlscope's effective set */
	uint64_t cap_eff, cap_prm; /* dlscope's effective and permitted capabilities */
	int yama;		   /* kernel.yama.ptrace_scope, -1 without Yama */
	pid_t pid;
	char state;	/* the target's, 0 when it is gone */
	bool exiting;	/* PF_EXITING */
	uid_t t_uid[4]; /* the target: real, effective, saved, filesystem */
	gid_t t_gid[4];
	uint64_t t_cap_prm; /* the target's permitted capabilities */
	uid_t proc_owner;   /* of /proc/PID: root, not its euid, when it is not dumpable */
	pid_t tracer;	    /* TracerPid, 0 when none */
	char tracer_comm[64];
	bool descendant; /* of dlscope (Yama's ptrace_scope 1 lets ancestors trace) */
};

/* Read the facts for @pid. Returns 0, or -ESRCH when it is gone. */
int permission__facts(pid_t pid, struct permission_facts *f);
/* The reason from @f as one clause with what to do ("it belongs to user ...; run ..."). */
void permission__reason(const struct permission_facts *f, enum ptrace_access mode, char *buf,
			size_t len);
/*
 * Whether dlscope may load its BPF programs and attach uprobes: CAP_BPF and CAP_PERFMON in its
 * effective set (or CAP_SYS_ADMIN, which holds both), as root has them or a binary given them
 * with setcap. 0, or -EPERM with the missing ones named and what to do in @why.
 */
int permission__can_trace(char *why, size_t len);

/* Both: why @pid was refused just now. */
void permission__explain(pid_t pid, enum ptrace_access mode, char *buf, size_t len);

#endif
