// SPDX-License-Identifier: GPL-2.0
/* The reason given for a refused ptrace access, one rule of the kernel at a time. */
#include <string.h>
#include <unistd.h>

#include "permission.h"
#include "tap.h"

/* dlscope as uid 1000 with no capabilities; the target its own dumpable, untraced process. */
static struct permission_facts base(void)
{
	struct permission_facts f = {
		.uid = { 1000, 1000, 1000, 1000 },
		.gid = { 1000, 1000, 1000, 1000 },
		.yama = -1,
		.pid = 4242,
		.state = 'S',
		.t_uid = { 1000, 1000, 1000, 1000 },
		.t_gid = { 1000, 1000, 1000, 1000 },
		.proc_owner = 1000,
	};
	return f;
}

static bool says(const struct permission_facts *f, enum ptrace_access mode, const char *what)
{
	char buf[1024];

	permission__reason(f, mode, buf, sizeof(buf));
	return strstr(buf, what) != NULL;
}

int main(void)
{
	struct permission_facts f;

	f = base();
	f.t_uid[0] = f.t_uid[1] = f.t_uid[2] = f.t_uid[3] = 0;
	CHECK(says(&f, ACCESS_READ, "belongs to another user, root (uid 0), and dlscope runs as "),
	      "another user, named");
	f.cap_sys_ptrace = true;
	f.proc_owner = 0;
	CHECK(says(&f, ACCESS_ATTACH, "sees no reason"), "CAP_SYS_PTRACE passes the uid rule");

	f = base();
	f.uid[0] = f.uid[1] = f.uid[2] = f.uid[3] = 0;
	f.gid[0] = f.gid[1] = f.gid[2] = f.gid[3] = 0;
	CHECK(says(&f, ACCESS_READ, "dlscope runs as root but without CAP_SYS_PTRACE"),
	      "root without the capability");

	f = base();
	f.t_uid[1] = f.t_uid[2] = 0; /* a set-user-ID root program started by uid 1000 */
	f.proc_owner = 0;
	CHECK(says(&f, ACCESS_READ, "set-user-ID program"), "its own user, other credentials");

	f = base();
	f.t_gid[1] = 42;
	CHECK(says(&f, ACCESS_READ, "set-group-ID"), "other groups");

	f = base();
	f.proc_owner = 0;
	CHECK(says(&f, ACCESS_READ, "it is not dumpable"), "non-dumpable, own user");
	f.cap_sys_ptrace = true;
	CHECK(!says(&f, ACCESS_READ, "dumpable"), "non-dumpable is fine with CAP_SYS_PTRACE");

	f = base();
	f.t_cap_prm = 1ULL << 21;
	CHECK(says(&f, ACCESS_ATTACH, "holds capabilities that dlscope lacks"),
	      "a more privileged target");
	f.cap_prm = f.cap_eff = 1ULL << 21;
	CHECK(says(&f, ACCESS_ATTACH, "sees no reason"), "capabilities within dlscope's");

	f = base();
	f.tracer = 777;
	strcpy(f.tracer_comm, "strace");
	CHECK(says(&f, ACCESS_SEIZE, "already traced by process 777 (strace)"), "another tracer");
	CHECK(says(&f, ACCESS_ATTACH, "sees no reason"), "a tracer does not stop memory reads");
	f.tracer = getpid();
	CHECK(!says(&f, ACCESS_SEIZE, "already traced"), "dlscope itself is no other tracer");

	f = base();
	f.exiting = true;
	CHECK(says(&f, ACCESS_SEIZE, "it is exiting"), "exiting");
	f = base();
	f.state = 'Z';
	CHECK(says(&f, ACCESS_READ, "it is exiting (state Z)"), "zombie");
	f.state = 0;
	CHECK(says(&f, ACCESS_READ, "it has exited"), "gone");

	f = base();
	f.yama = 1;
	CHECK(says(&f, ACCESS_ATTACH, "ptrace_scope is 1: only its ancestors"), "Yama 1");
	CHECK(says(&f, ACCESS_READ, "sees no reason"), "Yama does not govern reads");
	f.descendant = true;
	CHECK(says(&f, ACCESS_ATTACH, "sees no reason"), "Yama 1 lets an ancestor in");
	f.yama = 2;
	CHECK(says(&f, ACCESS_SEIZE, "ptrace_scope is 2: only a process with CAP_SYS_PTRACE"),
	      "Yama 2");
	f.cap_sys_ptrace = true;
	CHECK(says(&f, ACCESS_SEIZE, "sees no reason"), "Yama 2 with the capability");
	f.yama = 3;
	CHECK(says(&f, ACCESS_SEIZE, "ptrace_scope is 3: no process may be traced"),
	      "Yama 3 even with the capability");
	return tap_done();
}
