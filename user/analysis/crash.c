// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "arch.h"
#include "crash.h"
#include "demangle.h"
#include "elfobj.h"
#include "frame_text.h"
#include "procfs.h"
#include "procmaps.h"
#include "target.h"

#define CRASH_MAX_FRAMES 128

const char *signal__name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "SIG%d", sig);
	return buf;
}

/* Signals whose default action is not to end the process. */
static bool default_spares(int sig)
{
	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU: return true;
	default: return false;
	}
}

/* The hex mask after "@field:\t" in a /proc status file. */
static bool status_mask(const char *status, const char *field, uint64_t *mask)
{
	const char *p = strstr(status, field);

	return p && sscanf(p + strlen(field), ":\t%" SCNx64, mask) == 1;
}

bool crash__signal_kills(pid_t pid, pid_t tid, const siginfo_t *si)
{
	char buf[8192];
	uint64_t ign, cgt, bit;

	if (si->si_signo <= 0 || si->si_signo > 64 || default_spares(si->si_signo))
		return false;
	if (proc__read(pid, tid, "status", buf, sizeof(buf)) < 0 ||
	    !status_mask(buf, "SigIgn", &ign) || !status_mask(buf, "SigCgt", &cgt))
		return false;
	bit = 1ULL << (si->si_signo - 1);
	return !(ign & bit) && !(cgt & bit);
}

struct code_name {
	int signo, code;
	const char *name, *reason;
};

static const struct code_name codes[] = {
	{ SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR", "address not mapped" },
	{ SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR", "no permission for this access to the mapping" },
	{ SIGSEGV, SEGV_BNDERR, "SEGV_BNDERR", "failed address bound checks" },
	{ SIGSEGV, SEGV_PKUERR, "SEGV_PKUERR", "denied by its protection key" },
	{ SIGSEGV, SI_KERNEL, "SI_KERNEL",
	  "general protection fault (a non-canonical address or a privileged instruction); the "
	  "kernel gives no address" },
	{ SIGBUS, BUS_ADRALN, "BUS_ADRALN", "misaligned address" },
	{ SIGBUS, BUS_ADRERR, "BUS_ADRERR",
	  "no such physical address (a mapped file truncated under it?)" },
	{ SIGBUS, BUS_OBJERR, "BUS_OBJERR", "object-specific hardware error" },
	{ SIGBUS, BUS_MCEERR_AR, "BUS_MCEERR_AR", "hardware memory error" },
	{ SIGILL, ILL_ILLOPC, "ILL_ILLOPC", "illegal opcode" },
	{ SIGILL, ILL_ILLOPN, "ILL_ILLOPN", "illegal operand" },
	{ SIGILL, ILL_ILLADR, "ILL_ILLADR", "illegal addressing mode" },
	{ SIGILL, ILL_ILLTRP, "ILL_ILLTRP", "illegal trap" },
	{ SIGILL, ILL_PRVOPC, "ILL_PRVOPC", "privileged opcode" },
	{ SIGILL, ILL_PRVREG, "ILL_PRVREG", "privileged register" },
	{ SIGILL, ILL_COPROC, "ILL_COPROC", "coprocessor error" },
	{ SIGILL, ILL_BADSTK, "ILL_BADSTK", "internal stack error" },
	{ SIGFPE, FPE_INTDIV, "FPE_INTDIV", "integer divide by zero" },
	{ SIGFPE, FPE_INTOVF, "FPE_INTOVF", "integer overflow" },
	{ SIGFPE, FPE_FLTDIV, "FPE_FLTDIV", "floating-point divide by zero" },
	{ SIGFPE, FPE_FLTOVF, "FPE_FLTOVF", "floating-point overflow" },
	{ SIGFPE, FPE_FLTUND, "FPE_FLTUND", "floating-point underflow" },
	{ SIGFPE, FPE_FLTRES, "FPE_FLTRES", "floating-point inexact result" },
	{ SIGFPE, FPE_FLTINV, "FPE_FLTINV", "invalid floating-point operation" },
	{ SIGFPE, FPE_FLTSUB, "FPE_FLTSUB", "subscript out of range" },
	{ SIGTRAP, TRAP_BRKPT, "TRAP_BRKPT", "breakpoint" },
	{ SIGTRAP, TRAP_TRACE, "TRAP_TRACE", "trace trap" },
	{ SIGTRAP, TRAP_HWBKPT, "TRAP_HWBKPT", "hardware breakpoint" },
	{ 0, SI_USER, "SI_USER", "sent with kill()" },
	{ 0, SI_TKILL, "SI_TKILL", "sent with tgkill() (raise, abort, pthread_kill)" },
	{ 0, SI_QUEUE, "SI_QUEUE", "sent with sigqueue()" },
	{ 0, SI_TIMER, "SI_TIMER", "a POSIX timer expired" },
	{ 0, SI_MESGQ, "SI_MESGQ", "a message arrived on a POSIX message queue" },
	{ 0, SI_ASYNCIO, "SI_ASYNCIO", "an asynchronous I/O completed" },
	{ 0, SI_SIGIO, "SI_SIGIO", "I/O is possible (SIGIO)" },
	{ 0, SI_KERNEL, "SI_KERNEL", "sent by the kernel" },
};

static const struct code_name *code_of(int signo, int code)
{
	const struct code_name *generic = NULL;

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		if (codes[i].code != code)
			continue;
		if (codes[i].signo == signo)
			return &codes[i];
		/* Positive codes mean something only for their own signal. */
		if (!codes[i].signo && (code <= 0 || code == SI_KERNEL))
			generic = &codes[i];
	}
	return generic;
}

/* si_addr is a data address for these; for SIGILL, SIGFPE and SIGTRAP it is the pc. */
bool crash__is_fault(const siginfo_t *si)
{
	return (si->si_signo == SIGSEGV || si->si_signo == SIGBUS) && si->si_code > 0 &&
	       si->si_code != SI_KERNEL;
}

static bool sent_by_process(int code)
{
	return code == SI_USER || code == SI_TKILL || code == SI_QUEUE;
}

/*
 * Name @addr: the file mapped there (or whose .bss follows it in an anonymous mapping), and the
 * function (@func) or data object of that file holding it.
 */
static void resolve(pid_t pid, const struct procmaps *maps, uint64_t addr, bool func,
		    struct crash_place *p)
{
	const struct mapping *mp = procmaps__find(maps, addr), *file = mp;
	struct elf_object *o;
	char host[PATH_MAX + 64];
	uint64_t vaddr, off;
	const char *name;

	p->addr = addr;
	if (!mp)
		return;
	p->mapped = true;
	snprintf(p->perms, sizeof(p->perms), "%s", mp->perms);
	if (!mapping__is_file(mp)) {
		file = NULL;
		if (mp->path)
			p->region = strdup(mp->path);
		else if (mp > maps->maps && mapping__is_file(mp - 1) && mp[-1].end == mp->start)
			file = mp - 1; /* .bss past the file's last page */
	}
	if (!file)
		return;
	p->object = strdup(file->path);
	if (file->deleted)
		proc__map_file_path(host, sizeof(host), pid, file->start, file->end);
	else
		proc__file_path(host, sizeof(host), pid, file->path);
	o = elfobj__open(host);
	if (!o)
		return;
	if (!elfobj__offset_to_vaddr(o, addr - file->start + file->offset, &vaddr) &&
	    !elfobj__symbol_at(o, vaddr, func, &name, &off)) {
		char buf[1024];

		demangle(name, buf, sizeof(buf));
		p->symbol = strdup(buf);
		p->offset = off;
	}
	elfobj__free(o);
}

/*
 * The unwinder names functions from debug info too (libc's local symbols are only there): its
 * real (not inlined) frame at the pc names the pc better than the object's symbol tables.
 */
static void name_pc_from_stack(struct crash *c)
{
	const struct thread_stack *st = c->stack->n ? &c->stack->t[0] : NULL;

	for (size_t k = 0; st && k < st->n_frames && st->frames[k].pc == c->pc.addr; k++) {
		const struct stack_frame *f = &st->frames[k];
		char *name;

		if (f->inlined || !f->function || !(name = strdup(f->function)))
			continue;
		free(c->pc.symbol);
		c->pc.symbol = name;
		c->pc.offset = f->offset;
		break;
	}
}

int crash__capture(pid_t pid, pid_t tid, const siginfo_t *si, const siginfo_t *caught,
		   struct crash **out)
{
	const siginfo_t *fault = crash__is_fault(si) ? si : NULL;
	arch_regs regs;
	struct procmaps *maps;
	struct crash *c;
	char why[512];

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = pid;
	c->tid = tid;
	c->signo = si->si_signo;
	c->code = si->si_code;
	c->sender = sent_by_process(si->si_code) ? si->si_pid : 0;
	/* A handler that re-raises (faulthandler) hides the fault: the caught one says where. */
	if (!fault && caught && sent_by_process(si->si_code) && si->si_pid == pid) {
		fault = caught;
		c->caught_signo = caught->si_signo;
		c->caught_code = caught->si_code;
	}
	c->fault = fault != NULL;
	if (proc__read_stat(pid, tid, c->thread, sizeof(c->thread), NULL, NULL))
		snprintf(c->thread, sizeof(c->thread), "?");
	maps = procmaps__read(pid);
	if (maps) {
		if (!arch_regs__read(tid, &regs))
			resolve(pid, maps, arch_regs__pc(&regs), true, &c->pc);
		if (fault)
			resolve(pid, maps, (uint64_t)(uintptr_t)fault->si_addr, false, &c->addr);
		procmaps__free(maps);
	}
	if (stacks__capture_stopped(pid, tid, CRASH_MAX_FRAMES, &c->stack, why, sizeof(why)))
		c->stack_error = strdup(why);
	else
		name_pc_from_stack(c);
	*out = c;
	return 0;
}

static void place__free(struct crash_place *p)
{
	free(p->object);
	free(p->region);
	free(p->symbol);
}

void crash__free(struct crash *c)
{
	if (!c)
		return;
	place__free(&c->pc);
	place__free(&c->addr);
	stacks__free(c->stack);
	free(c->stack_error);
	free(c);
}

/* "crash_here+0x4 in /usr/lib/libfoo.so", "[stack] (rw-p)", "nothing is mapped there". */
static void place__print(const struct crash_place *p, FILE *out)
{
	if (!p->mapped) {
		fprintf(out, "nothing is mapped there");
		return;
	}
	if (p->symbol) {
		fprintf(out, "%s", p->symbol);
		if (p->offset)
			fprintf(out, "+0x%" PRIx64, p->offset);
		fprintf(out, " in ");
	}
	if (p->object)
		fprintf(out, "%s", p->object);
	else if (p->region)
		fprintf(out, "%s", p->region);
	else
		fprintf(out, "anonymous memory");
	fprintf(out, " (%s)", p->perms);
}

void crash__print(const struct crash *c, FILE *out)
{
	const struct code_name *cn = code_of(c->signo, c->code);
	const struct thread_stack *st = c->stack && c->stack->n ? &c->stack->t[0] : NULL;

	fprintf(out, "    thread %d (%s), pc 0x%" PRIx64 ": ", c->tid, c->thread, c->pc.addr);
	place__print(&c->pc, out);
	fputc('\n', out);
	if (c->caught_signo) {
		const struct code_name *ccn = code_of(c->caught_signo, c->caught_code);
		char sig[32];

		fprintf(out, "    after a %s its own handler caught, at address 0x%" PRIx64 ": ",
			signal__name(c->caught_signo, sig, sizeof(sig)), c->addr.addr);
		place__print(&c->addr, out);
		fprintf(out, " (%s: %s)\n", ccn ? ccn->name : "?", ccn ? ccn->reason : "?");
	}
	if (c->fault && !c->caught_signo) {
		fprintf(out, "    address 0x%" PRIx64 ": ", c->addr.addr);
		place__print(&c->addr, out);
		fprintf(out, " (%s: %s)\n", cn ? cn->name : "?", cn ? cn->reason : "?");
	} else if (c->sender == c->pid) {
		fprintf(out, "    %s by the process itself\n", cn ? cn->reason : "sent");
	} else if (c->sender) {
		char comm[64];

		if (proc__read_stat(c->sender, 0, comm, sizeof(comm), NULL, NULL))
			snprintf(comm, sizeof(comm), "exited since");
		fprintf(out, "    %s by process %d (%s)\n", cn ? cn->reason : "sent", c->sender,
			comm);
	} else if (cn) {
		fprintf(out, "    %s (%s)\n", cn->reason, cn->name);
	}
	fprintf(out, "    stack of thread %d:\n", c->tid);
	for (size_t k = 0; st && k < st->n_frames; k++) {
		fputs("    ", out);
		frame_text__fprint(out, &st->frames[k], k ? &st->frames[k - 1] : NULL, k,
				   FRAME_FULL);
		fputc('\n', out);
	}
	if (c->stack_error || (st && st->error))
		fprintf(out, "    (%s)\n", c->stack_error ? c->stack_error : st->error);
}

static json_t *place__to_json(const struct crash_place *p)
{
	char addr[24];

	snprintf(addr, sizeof(addr), "0x%" PRIx64, (uint64_t)p->addr);
	return json_pack("{s:s, s:b, s:o, s:o, s:o, s:o, s:I}", "address", addr, "mapped",
			 p->mapped, "perms", p->mapped ? json_string(p->perms) : json_null(),
			 "object", p->object ? json_string(p->object) : json_null(), "region",
			 p->region ? json_string(p->region) : json_null(), "symbol",
			 p->symbol ? json_string(p->symbol) : json_null(), "offset",
			 (json_int_t)p->offset);
}

json_t *crash__to_json(const struct crash *c)
{
	const struct code_name *cn = code_of(c->signo, c->code);
	const struct thread_stack *st = c->stack && c->stack->n ? &c->stack->t[0] : NULL;
	const char *err = c->stack_error ? c->stack_error : st ? st->error : NULL;
	const struct code_name *ccn = code_of(c->caught_signo, c->caught_code);
	json_t *frames = json_array(), *caught = json_null();
	char sig[32], csig[32];

	for (size_t k = 0; st && k < st->n_frames; k++)
		json_array_append_new(frames, stack_frame__to_json(&st->frames[k]));
	if (c->caught_signo)
		caught = json_pack("{s:s, s:i, s:o, s:o}", "signal",
				   signal__name(c->caught_signo, csig, sizeof(csig)), "code",
				   c->caught_code, "code_name",
				   ccn ? json_string(ccn->name) : json_null(), "reason",
				   ccn ? json_string(ccn->reason) : json_null());
	return json_pack("{s:i, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "tid",
			 c->tid, "thread", c->thread, "signal",
			 signal__name(c->signo, sig, sizeof(sig)), "code", c->code, "code_name",
			 cn ? json_string(cn->name) : json_null(), "reason",
			 cn ? json_string(cn->reason) : json_null(), "sender_pid",
			 c->sender ? json_integer(c->sender) : json_null(), "pc",
			 place__to_json(&c->pc), "fault_address",
			 c->fault ? place__to_json(&c->addr) : json_null(), "caught_fault", caught,
			 "stack", frames, "stack_error", err ? json_string(err) : json_null());
}
