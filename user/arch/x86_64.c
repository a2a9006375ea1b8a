// SPDX-License-Identifier: GPL-2.0
/* x86-64: see arch.h. */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "arch.h"

uint64_t arch_regs__pc(const arch_regs *r)
{
	return r->rip;
}

uint64_t arch_regs__sp(const arch_regs *r)
{
	return r->rsp;
}

void arch_regs__set_pc_sp(arch_regs *r, uint64_t pc, uint64_t sp)
{
	r->rip = pc;
	r->rsp = sp;
}

long arch_regs__syscall(const arch_regs *r, uint64_t args[6])
{
	long ret = (long)r->rax;

	/*
	 * In a system call when stopped (ptrace, a fatal signal): orig_rax holds its number and
	 * rax the restart code the interrupted wait returns (-EINTR, -ERESTARTSYS ..
	 * -ERESTART_RESTARTBLOCK), or -ENOSYS when stopped at its entry.
	 */
	if ((long)r->orig_rax < 0 || (ret != -4 && ret != -38 && (ret < -516 || ret > -512)))
		return -1;
	args[0] = r->rdi;
	args[1] = r->rsi;
	args[2] = r->rdx;
	args[3] = r->r10;
	args[4] = r->r8;
	args[5] = r->r9;
	return (long)r->orig_rax;
}

uint64_t arch_regs__thread_pointer(const arch_regs *r)
{
	return r->fs_base;
}

void arch_regs__dwarf(const arch_regs *r, uint64_t out[ARCH_DWARF_REGS])
{
	/* The psABI's DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then rip. */
	const uint64_t v[ARCH_DWARF_REGS] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi,
					      r->rbp, r->rsp, r->r8,  r->r9,  r->r10, r->r11,
					      r->r12, r->r13, r->r14, r->r15, r->rip };

	memcpy(out, v, sizeof(v));
}

static const struct {
	long nr;
	const char *name;
} blocking_syscalls[] = {
	{ SYS_read, "read" },
	{ SYS_write, "write" },
	{ SYS_poll, "poll" },
	{ SYS_select, "select" },
	{ SYS_pause, "pause" },
	{ SYS_nanosleep, "nanosleep" },
	{ SYS_accept, "accept" },
	{ SYS_recvfrom, "recvfrom" },
	{ SYS_recvmsg, "recvmsg" },
	{ SYS_wait4, "wait4" },
	{ SYS_rt_sigtimedwait, "rt_sigtimedwait" },
	{ SYS_rt_sigsuspend, "rt_sigsuspend" },
	{ SYS_futex, "futex" },
	{ SYS_clock_nanosleep, "clock_nanosleep" },
	{ SYS_epoll_wait, "epoll_wait" },
	{ SYS_waitid, "waitid" },
	{ SYS_pselect6, "pselect6" },
	{ SYS_ppoll, "ppoll" },
	{ SYS_epoll_pwait, "epoll_pwait" },
};

const char *arch_syscall_name(long nr)
{
	for (size_t i = 0; i < sizeof(blocking_syscalls) / sizeof(blocking_syscalls[0]); i++)
		if (blocking_syscalls[i].nr == nr)
			return blocking_syscalls[i].name;
	return NULL;
}

long arch_syscall_futex(void)
{
	return SYS_futex;
}

bool arch_follows_call(const unsigned char before[8])
{
#define AT(n) before[8 - (n)]
	if (AT(5) == 0xe8) /* call rel32 */
		return true;
	if (AT(2) == 0xff && (AT(1) & 0xf8) == 0xd0) /* call *%reg */
		return true;
	if (AT(3) == 0xff && (AT(2) & 0xf8) == 0x50) /* call *disp8(%reg) */
		return true;
	if (AT(3) == 0xff && AT(2) == 0x14) /* call *(%reg,%reg) via SIB */
		return true;
	if (AT(4) == 0xff && AT(3) == 0x54) /* call *disp8 via SIB */
		return true;
	if (AT(6) == 0xff && ((AT(5) & 0xf8) == 0x90 || AT(5) == 0x15)) /* disp32, rip */
		return true;
	if (AT(7) == 0xff && AT(6) == 0x94) /* call *disp32 via SIB */
		return true;
#undef AT
	return false;
}

/* Where the branch at @at (@len bytes of opcode, then a displacement of @disp bytes) lands. */
static uint64_t branch_target(const unsigned char *code, size_t at, size_t len, size_t disp,
			      uint64_t vaddr)
{
	int32_t rel32;
	int8_t rel8;

	if (disp == 1) {
		memcpy(&rel8, code + at + len, 1);
		return vaddr + at + len + 1 + (uint64_t)(int64_t)rel8;
	}
	memcpy(&rel32, code + at + len, 4);
	return vaddr + at + len + 4 + (uint64_t)(int64_t)rel32;
}

bool arch_direct_call_target(const unsigned char before[8], uint64_t ret, uint64_t *target)
{
	if (before[3] != 0xe8) /* call rel32: e8 and 4 bytes, then the return address */
		return false;
	/* The 8 bytes end at @ret: they start at ret - 8. */
	*target = branch_target(before, 3, 1, 4, ret - 8);
	return true;
}

bool arch_direct_calls_to(const unsigned char *code, size_t len, uint64_t vaddr, uint64_t target,
			  uint64_t *sites, size_t max, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i + 2 <= len; i++) {
		unsigned char b = code[i];

		/* call rel32, or jmp rel32 (a tail call): it always lands there. */
		if ((b == 0xe8 || b == 0xe9) && i + 5 <= len &&
		    branch_target(code, i, 1, 4, vaddr) == target) {
			if (*n < max)
				sites[*n] = vaddr + i;
			(*n)++;
			continue;
		}
		/* A conditional one (jcc rel8, jcc rel32) may not; a jmp rel8 is too short a
		 * pattern to tell from other bytes. */
		if (((b == 0xeb || (b & 0xf0) == 0x70) &&
		     branch_target(code, i, 1, 1, vaddr) == target) ||
		    (b == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= len &&
		     branch_target(code, i, 2, 4, vaddr) == target))
			return false;
	}
	return true;
}

bool arch_is_ret(unsigned char byte)
{
	return byte == 0xc3;
}

/* An endbr64 (CET) opens many functions; the body follows it. */
static const unsigned char *skip_endbr(const unsigned char *p, size_t *len)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

	if (*len >= sizeof(endbr64) && !memcmp(p, endbr64, sizeof(endbr64))) {
		*len -= sizeof(endbr64);
		return p + sizeof(endbr64);
	}
	return p;
}

static int32_t rel32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The stack protector's check at @p: sub or xor %fs:0x28 into a 64-bit register (*@reg), 9
 * bytes. */
static bool canary_check(const unsigned char *p, size_t len, unsigned int *reg)
{
	static const unsigned char disp[] = { 0x25, 0x28, 0x00, 0x00, 0x00 };

	if (len < 9 || p[0] != 0x64 || (p[1] & 0xfb) != 0x48 || (p[2] != 0x2b && p[2] != 0x33) ||
	    (p[3] & 0xc7) != 0x04 || memcmp(p + 4, disp, sizeof(disp)))
		return false;
	*reg = ((p[3] >> 3) & 7) | ((p[1] & 4) << 1);
	return true;
}

/* The largest frame an epilogue releases, or reads a slot of, in one instruction. */
#define EPILOGUE_FRAME_MAX 0x10000

/* What the epilogue after the check did: where the value comes from, registers popped. */
struct epilogue {
	int32_t sp;	     /* rsp's move since the check */
	unsigned int popped; /* the registers popped since, by bit */
	bool moved, in_slot;
	unsigned int reg;
	int32_t slot;
};

/* One instruction of the epilogue at @p: its length, or 0 when it is none of its kinds. */
static size_t epilogue_step(const unsigned char *p, size_t len, struct epilogue *e)
{
	unsigned int rex = len && (p[0] & 0xf0) == 0x40 ? p[0] : 0, src;
	const unsigned char *q = p + (rex != 0);
	size_t n = len - (rex != 0);

	if (!n)
		return 0;
	/* pop r64 */
	if (q[0] >= 0x58 && q[0] <= 0x5f && (!rex || rex == 0x41)) {
		src = (q[0] - 0x58) | (rex ? 8 : 0);
		if (src == 0 || src == 4)
			return 0;
		e->popped |= 1u << src;
		e->sp += 8;
		return (rex != 0) + 1;
	}
	if (!(rex & 8) || n < 2)
		return 0;
	/* add $imm8 / $imm32, %rsp: a frame's release, positive and at most EPILOGUE_FRAME_MAX
	 * (so that no sum of them overflows) */
	if (rex == 0x48 && q[0] == 0x83 && q[1] == 0xc4 && n >= 3 && (int8_t)q[2] > 0) {
		e->sp += (int8_t)q[2];
		return 4;
	}
	if (rex == 0x48 && q[0] == 0x81 && q[1] == 0xc4 && n >= 6 && rel32(q + 2) > 0 &&
	    rel32(q + 2) <= EPILOGUE_FRAME_MAX) {
		e->sp += rel32(q + 2);
		return 7;
	}
	/* mov %r64, %rax (89 /r, the source in reg; 8b /r, in rm) */
	if ((q[0] == 0x89 && (q[1] & 0xc7) == 0xc0) || (q[0] == 0x8b && (q[1] & 0xf8) == 0xc0)) {
		src = q[0] == 0x89 ? ((q[1] >> 3) & 7) | ((rex & 4) << 1) :
				     (q[1] & 7) | ((rex & 1) << 3);
		if ((q[0] == 0x89 && (rex & 1)) || (q[0] == 0x8b && (rex & 4)) || src == 4 ||
		    (e->popped & (1u << src)))
			return 0;
		*e = (struct epilogue){
			.sp = e->sp, .popped = e->popped, .moved = true, .reg = src
		};
		return 3;
	}
	/* mov (%rsp), %rax; mov disp8(%rsp), %rax; mov disp32(%rsp), %rax */
	if (rex == 0x48 && q[0] == 0x8b && n >= 3 && q[2] == 0x24) {
		int32_t at = e->sp;
		size_t l = 0;

		if (q[1] == 0x04)
			l = 4;
		else if (q[1] == 0x44 && n >= 4 && (int8_t)q[3] >= 0)
			at += (int8_t)q[3], l = 5;
		else if (q[1] == 0x84 && n >= 7 && rel32(q + 3) >= 0 &&
			 rel32(q + 3) <= EPILOGUE_FRAME_MAX)
			at += rel32(q + 3), l = 8;
		if (l)
			*e = (struct epilogue){ .sp = e->sp,
						.popped = e->popped,
						.moved = true,
						.in_slot = true,
						.slot = at };
		return l;
	}
	return 0;
}

/* Whether a direct jump or conditional branch anywhere in @code may land in (@lo, @hi]. */
static bool branch_lands_in(const unsigned char *code, size_t len, uint64_t vaddr, uint64_t lo,
			    uint64_t hi)
{
	for (size_t i = 0; i + 2 <= len; i++) {
		unsigned char b = code[i];
		uint64_t t = 0;

		if (b == 0xeb || (b & 0xf0) == 0x70)
			t = branch_target(code, i, 1, 1, vaddr);
		else if (b == 0xe9 && i + 5 <= len)
			t = branch_target(code, i, 1, 4, vaddr);
		else if (b == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= len)
			t = branch_target(code, i, 2, 4, vaddr);
		if (t > lo && t <= hi)
			return true;
	}
	return false;
}

bool arch_early_exit(const unsigned char *code, size_t len, uint64_t vaddr, uint64_t ret_at,
		     struct arch_early_exit *out)
{
	size_t ret = ret_at - vaddr;

	if (ret_at < vaddr || ret >= len || code[ret] != 0xc3)
		return false;
	/* The check, its jne and an epilogue of a few instructions: within 48 bytes. */
	for (size_t at = ret > 48 ? ret - 48 : 0; at < ret; at++) {
		struct epilogue e = { 0 };
		unsigned int canary;
		size_t i = at + 9, jne, step;

		if (!canary_check(code + at, ret - at, &canary))
			continue;
		if (i + 2 <= ret && code[i] == 0x75)
			jne = i, i += 2;
		else if (i + 6 <= ret && code[i] == 0x0f && code[i + 1] == 0x85)
			jne = i, i += 6;
		else
			continue;
		while (i < ret && (step = epilogue_step(code + i, ret - i, &e)))
			i += step;
		/* Exactly up to the ret; the value not the check's difference. */
		if (i != ret || (!e.moved && canary == 0) ||
		    (e.moved && !e.in_slot && e.reg == canary))
			continue;
		if (branch_lands_in(code, len, vaddr, vaddr + jne, ret_at))
			return false;
		*out = (struct arch_early_exit){ .at = vaddr + jne,
						 .value_reg = e.moved ? e.reg : 0,
						 .in_slot = e.in_slot,
						 .slot = e.slot };
		return true;
	}
	return false;
}

int arch_decode_return_constant(const unsigned char *code, size_t len, uint64_t entry, int64_t *imm,
				uint64_t *vaddr)
{
	const unsigned char *p = skip_endbr(code, &len);

	if (len >= 6 && p[0] == 0xb8 && p[5] == 0xc3) { /* mov $imm32, %eax; ret */
		*imm = rel32(p + 1);
		return 1;
	}
	if (len >= 8 && p[0] == 0x48 && p[1] == 0x8d && p[2] == 0x05 &&
	    p[7] == 0xc3) { /* lea rel(%rip), %rax; ret */
		*vaddr = entry + (uint64_t)(p + 7 - code) + (uint64_t)(int64_t)rel32(p + 3);
		return 2;
	}
	if (len >= 8 && p[0] == 0x48 && p[1] == 0x8b && p[2] == 0x05 &&
	    p[7] == 0xc3) { /* mov rel(%rip), %rax; ret */
		*vaddr = entry + (uint64_t)(p + 7 - code) + (uint64_t)(int64_t)rel32(p + 3);
		return 3;
	}
	return -ENOENT;
}

bool arch_decode_two_stores(const unsigned char *code, size_t len, uint64_t entry, uint64_t *first,
			    uint64_t *second)
{
	const unsigned char *p = skip_endbr(code, &len);

	/* 48 8b 05 rel32; 48 89 07; 48 8b 05 rel32; 48 89 06; c3 */
	if (len < 21 || memcmp(p, "\x48\x8b\x05", 3) || memcmp(p + 7, "\x48\x89\x07", 3) ||
	    memcmp(p + 10, "\x48\x8b\x05", 3) || memcmp(p + 17, "\x48\x89\x06", 3) || p[20] != 0xc3)
		return false;
	*first = entry + (uint64_t)(p + 7 - code) + (uint64_t)(int64_t)rel32(p + 3);
	*second = entry + (uint64_t)(p + 17 - code) + (uint64_t)(int64_t)rel32(p + 13);
	return true;
}

bool arch_decode_libgomp_max_threads(const unsigned char *code, size_t len, uint64_t entry,
				     struct arch_libgomp_icv *out)
{
	const unsigned char *p = skip_endbr(code, &len), *end = p + len;

	/* mov GOT(%rip), %rax */
	if (end - p < 7 || memcmp(p, "\x48\x8b\x05", 3))
		return false;
	out->got_slot = entry + (uint64_t)(p + 7 - code) + (uint64_t)(int64_t)rel32(p + 3);
	p += 7;
	/* mov %fs:disp(%rax), %rdx */
	if (end - p >= 5 && !memcmp(p, "\x64\x48\x8b\x50", 4)) {
		out->task_off = (int8_t)p[4];
		p += 5;
	} else if (end - p >= 8 && !memcmp(p, "\x64\x48\x8b\x90", 4)) {
		out->task_off = rel32(p + 4);
		p += 8;
	} else {
		return false;
	}
	/* test %rdx, %rdx; lea disp(%rdx), %rax */
	if (end - p < 3 || memcmp(p, "\x48\x85\xd2", 3))
		return false;
	p += 3;
	if (end - p >= 4 && !memcmp(p, "\x48\x8d\x42", 3)) {
		out->icv_off = (int8_t)p[3];
		p += 4;
	} else if (end - p >= 7 && !memcmp(p, "\x48\x8d\x82", 3)) {
		out->icv_off = rel32(p + 3);
		p += 7;
	} else {
		return false;
	}
	/* lea gomp_global_icv(%rip), %rdx; cmove %rdx, %rax; mov (%rax), %eax; ret */
	if (end - p < 14 || memcmp(p, "\x48\x8d\x15", 3) ||
	    memcmp(p + 7, "\x48\x0f\x44\xc2\x8b\x00\xc3", 7))
		return false;
	out->global = entry + (uint64_t)(p + 7 - code) + (uint64_t)(int64_t)rel32(p + 3);
	return true;
}

int arch_regs__read(pid_t tid, arch_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) ? -errno : 0;
}

int arch_fpregs__read(pid_t tid, arch_fpregs *f)
{
	return ptrace(PTRACE_GETFPREGS, tid, NULL, f) ? -errno : 0;
}

size_t arch_xstate__read(pid_t tid, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) ? 0 : iov.iov_len;
}

unsigned int arch_xstate_note(void)
{
	return NT_X86_XSTATE;
}

unsigned int arch_elf_machine(void)
{
	return EM_X86_64;
}

const char *arch_elf_machine_name(void)
{
	return "x86-64";
}

int arch_tp_of_descriptor(uint64_t pd, uint64_t *tp)
{
	*tp = pd;
	return 0;
}
