// SPDX-License-Identifier: GPL-2.0
/*
 * The machine layer's decoders on instruction bytes as GCC and glibc emit them, and on bytes
 * that only look alike; the real libgomp's omp_get_max_threads, read from its file; and the
 * calls to _dl_debug_state in the real loader.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "arch.h"
#include "elfobj.h"
#include "tap.h"

/* The 8 bytes before a return address, ending with @insn. */
static bool follows(const char *insn, size_t len)
{
	unsigned char b[8] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };

	memcpy(b + 8 - len, insn, len);
	return arch_follows_call(b);
}

/* The direct calls to 0x1000 in a made-up code block at 0x2000, or -1 when a jump reaches it. */
static long calls_to_0x1000(const unsigned char *code, size_t len, uint64_t *sites)
{
	size_t n = 0;

	return arch_direct_calls_to(code, len, 0x2000, 0x1000, sites, 4, &n) ? (long)n : -1;
}

/* The loader's calls to _dl_debug_state: each one a call rel32 to it, read back from the file. */
static void loader_calls(void)
{
	const char *ld = "/lib64/ld-linux-x86-64.so.2";
	struct elf_object *o = elfobj__open(ld);
	uint64_t vaddrs[32], offs[32], fn = 0;
	bool each = true;
	size_t n = 0;

	CHECK(o && !elfobj__func_code(o, "_dl_debug_state", (unsigned char[1]){ 0 }, 1, &fn) &&
		      !elfobj__calls_to(o, NULL, "_dl_debug_state", vaddrs, offs, 32, &n) && n >= 2,
	      "the loader calls _dl_debug_state from two places or more");
	for (size_t i = 0; i < n; i++) {
		unsigned char b[8] = { 0 };
		uint64_t target = 0;

		/* The 8 bytes before the return address: the call's 5 at their end. */
		each &= !elfobj__read_vaddr(o, vaddrs[i] - 3, b, 8) &&
			arch_direct_call_target(b, vaddrs[i] + 5, &target) && target == fn;
	}
	CHECK(n && each, "each place is a call to it");
	CHECK(o && elfobj__calls_to(o, NULL, "_dl_debug_state", vaddrs, offs, 1, &n) == -E2BIG &&
		      !n,
	      "more calls than room: none is given (the function is probed instead)");
	elfobj__free(o);
}

/* arch_early_exit on @code at 0x3000, its ret at @ret: the probe's offset, or -1. */
static long early_exit(const unsigned char *code, size_t len, size_t ret, struct arch_early_exit *e)
{
	return arch_early_exit(code, len, 0x3000, 0x3000 + ret, e) ? (long)(e->at - 0x3000) : -1;
}

/* The epilogues of dlopen and dlsym in the glibc releases of Debian 11 to unstable, as they
 * are compiled there, and shapes that must be refused. */
static void early_exits(void)
{
	struct arch_early_exit e = { 0 };
	/* 2.36, 2.41 dlopen: mov 0x28(%rsp),%rax; sub %fs:0x28,%rax; jne +9; add $0x30,%rsp;
	 * mov %rbx,%rax; pop %rbx; ret; call (the failure) */
	static const unsigned char bookworm[] = { 0x48, 0x8b, 0x44, 0x24, 0x28, 0x64, 0x48, 0x2b,
						  0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x75, 0x09,
						  0x48, 0x83, 0xc4, 0x30, 0x48, 0x89, 0xd8, 0x5b,
						  0xc3, 0xe8, 0x00, 0x00, 0x00, 0x00 };
	/* 2.31 libdl, 2.35 dlopen: mov 0x28(%rsp),%rcx; sub %fs:0x28,%rcx; jne; add $0x38,%rsp;
	 * ret: the value stays in rax */
	static const unsigned char bullseye[] = { 0x48, 0x8b, 0x4c, 0x24, 0x28, 0x64, 0x48,
						  0x2b, 0x0c, 0x25, 0x28, 0x00, 0x00, 0x00,
						  0x75, 0x34, 0x48, 0x83, 0xc4, 0x38, 0xc3 };
	/* 2.43 dlsym: sub %fs:0x28,%rax; jne; mov (%rsp),%rax; add $0x48,%rsp; ret */
	static const unsigned char sid[] = { 0x64, 0x48, 0x2b, 0x04, 0x25, 0x28, 0x00,
					     0x00, 0x00, 0x75, 0x09, 0x48, 0x8b, 0x04,
					     0x24, 0x48, 0x83, 0xc4, 0x48, 0xc3 };
	/* 2.31 dlsym: sub %fs:0x28,%rax; jne rel32; add $0x38,%rsp; mov %r12,%rax; pop %rbx;
	 * pop %r12; ret */
	static const unsigned char r12[] = { 0x64, 0x48, 0x2b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00,
					     0x0f, 0x85, 0x30, 0x00, 0x00, 0x00, 0x48, 0x83, 0xc4,
					     0x38, 0x4c, 0x89, 0xe0, 0x5b, 0x41, 0x5c, 0xc3 };
	unsigned char c[64];

	CHECK(early_exit(bookworm, sizeof(bookworm), 24, &e) == 14 && !e.in_slot &&
		      e.value_reg == 3,
	      "glibc 2.36's dlopen: the probe at its jne, the value in rbx");
	CHECK(early_exit(bullseye, sizeof(bullseye), 20, &e) == 14 && !e.in_slot &&
		      e.value_reg == 0,
	      "glibc 2.31's: the check in rcx, the value in rax");
	CHECK(early_exit(sid, sizeof(sid), 19, &e) == 9 && e.in_slot && e.slot == 0,
	      "glibc 2.43's dlsym: the value on the stack, at rsp");
	CHECK(early_exit(r12, sizeof(r12), 25, &e) == 9 && e.value_reg == 12 && !e.in_slot,
	      "a jne rel32, the value in r12, popped after its move");
	/* The check in rax and no move: the value is gone at the jne. */
	memcpy(c, bookworm, sizeof(bookworm));
	c[20] = 0x90, c[21] = 0x90, c[22] = 0x90; /* the mov made nops: not an epilogue step */
	CHECK(early_exit(c, sizeof(bookworm), 24, &e) == -1, "an unknown instruction refuses");
	/* pop %rbx before mov %rbx,%rax: rbx at the jne is not the value. */
	memcpy(c, bookworm, sizeof(bookworm));
	c[20] = 0x5b, c[21] = 0x48, c[22] = 0x89, c[23] = 0xd8;
	CHECK(early_exit(c, sizeof(bookworm), 24, &e) == -1,
	      "a register popped before it is moved refuses");
	/* A jmp rel8 before the code into the add, past the jne: a path around the probe. */
	c[0] = 0xeb, c[1] = 0x0e; /* at 0x3000: lands at 0x3010, the add */
	memcpy(c + 2, bookworm + 2, sizeof(bookworm) - 2);
	CHECK(early_exit(c, sizeof(bookworm), 24, &e) == -1,
	      "a branch into the epilogue after the check refuses");
	c[1] = 0x0c; /* lands on the jne itself: the probe sees it */
	CHECK(early_exit(c, sizeof(bookworm), 24, &e) == 14,
	      "a branch to the check itself is fine");
	CHECK(early_exit(bookworm, sizeof(bookworm), 23, &e) == -1, "no ret at the place given");
	memcpy(c, bookworm, sizeof(bookworm));
	c[19] = 0xd0; /* add $-0x30, %rsp: a frame made, not released */
	CHECK(early_exit(c, sizeof(bookworm), 24, &e) == -1, "a negative frame release refuses");
}

/* This machine's glibc: dlopen's and dlsym's exits moved to their checks. */
static void libc_exits(void)
{
	struct elf_object *o = elfobj__open("/lib/x86_64-linux-gnu/libc.so.6");
	struct elfobj_exit ex[ELFOBJ_EXITS_MAX];
	size_t n = 0;

	CHECK(o && !elfobj__func_exits(o, NULL, "dlopen", ex, ELFOBJ_EXITS_MAX, &n) && n >= 1 &&
		      ex[0].early,
	      "Debian 12's dlopen: its exit at the stack protector's check");
	CHECK(o && !elfobj__func_exits(o, NULL, "dlclose", ex, ELFOBJ_EXITS_MAX, &n) && n >= 1 &&
		      !ex[0].early,
	      "its dlclose has no check: at the ret");
	elfobj__free(o);
}

int main(void)
{
	int64_t imm = 0;
	uint64_t vaddr = 0;
	struct arch_libgomp_icv icv = { 0 };
	/* endbr64; mov GOT(%rip),%rax; mov %fs:0x10(%rax),%rdx; test; lea 0xa8(%rdx),%rax;
	 * lea global(%rip),%rdx; cmove %rdx,%rax; mov (%rax),%eax; ret */
	static const unsigned char gomp[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0x64, 0x48, 0x8b,
		0x50, 0x10, 0x48, 0x85, 0xd2, 0x48, 0x8d, 0x82, 0xa8, 0x00, 0x00, 0x00, 0x48, 0x8d,
		0x15, 0x00, 0x01, 0x00, 0x00, 0x48, 0x0f, 0x44, 0xc2, 0x8b, 0x00, 0xc3,
	};
	struct elf_object *o;
	unsigned char code[48];
	uint64_t entry;

	CHECK(follows("\xe8\x01\x02\x03\x04", 5), "call rel32 precedes a return address");
	CHECK(follows("\xff\xd0", 2), "call *%rax precedes a return address");
	CHECK(follows("\xff\x15\x00\x10\x00\x00", 6), "call *GOT(%rip) precedes a return address");
	CHECK(!follows("\x48\x89\xc7", 3), "a mov does not");
	CHECK(arch_is_ret(0xc3) && !arch_is_ret(0xc2), "ret is 0xc3 (not ret imm16)");
	CHECK(arch_decode_return_constant((const unsigned char *)"\xb8\x2a\x00\x00\x00\xc3", 6,
					  0x1000, &imm, &vaddr) == 1 &&
		      imm == 42,
	      "mov $42, %eax; ret returns 42");
	CHECK(arch_decode_return_constant((const unsigned char *)"\xf3\x0f\x1e\xfa\x48\x8d\x05"
								 "\x10\x00\x00\x00\xc3",
					  12, 0x1000, &imm, &vaddr) == 2 &&
		      vaddr == 0x1000 + 11 + 0x10,
	      "endbr64; lea rel(%rip), %rax; ret returns an address after the lea");
	CHECK(arch_decode_return_constant((const unsigned char *)"\xb8\x2a\x00\x00\x00", 5, 0, &imm,
					  &vaddr) == -ENOENT,
	      "a body cut short is not read past its end");
	CHECK(arch_decode_libgomp_max_threads(gomp, sizeof(gomp), 0x2000, &icv) &&
		      icv.got_slot == 0x2000 + 11 + 0x10 && icv.task_off == 0x10 &&
		      icv.icv_off == 0xa8 && icv.global == 0x2000 + 33 + 0x100,
	      "libgomp's omp_get_max_threads decoded: GOT slot, task, ICV and global offsets");
	CHECK(!arch_decode_libgomp_max_threads(gomp, 20, 0x2000, &icv),
	      "a cut libgomp body is refused");
	CHECK(arch_syscall_name(SYS_futex) && !strcmp(arch_syscall_name(SYS_futex), "futex") &&
		      arch_syscall_futex() == SYS_futex && !arch_syscall_name(99999),
	      "system call names by number");
	/* Debian's own libgomp: the pattern the inventory reads num_threads through. */
	o = elfobj__open("/usr/lib/x86_64-linux-gnu/libgomp.so.1");
	CHECK(o && !elfobj__func_code(o, "omp_get_max_threads", code, sizeof(code), &entry) &&
		      arch_decode_libgomp_max_threads(code, sizeof(code), entry, &icv),
	      "Debian's libgomp.so.1 decodes");
	elfobj__free(o);

	/* call 0x1000 at 0x2000 (e8, displacement -0x1005); one to 0x1001; a nop. */
	static const unsigned char two_calls[] = { 0xe8, 0xfb, 0xef, 0xff, 0xff, 0xe8, 0xf7, 0xef,
						   0xff, 0xff, 0x90, 0xe8, 0xf0, 0xef, 0xff, 0xff };
	/* call 0x1000; jmp 0x1000 (a tail call) */
	static const unsigned char tail_jump[] = { 0xe8, 0xfb, 0xef, 0xff, 0xff,
						   0xe9, 0xf6, 0xef, 0xff, 0xff };
	/* call 0x1000; je 0x1000 (jcc rel32: 0f 84, displacement -0x100b) */
	static const unsigned char cond_jump[] = { 0xe8, 0xfb, 0xef, 0xff, 0xff, 0x0f,
						   0x84, 0xf5, 0xef, 0xff, 0xff };
	uint64_t sites[4] = { 0 };

	CHECK(calls_to_0x1000(two_calls, sizeof(two_calls), sites) == 2 && sites[0] == 0x2000 &&
		      sites[1] == 0x200b,
	      "two calls to the target found, one to the byte after it not");
	CHECK(calls_to_0x1000(tail_jump, sizeof(tail_jump), sites) == 2 && sites[1] == 0x2005,
	      "a tail call (jmp rel32) to the target is a call");
	CHECK(calls_to_0x1000(cond_jump, sizeof(cond_jump), sites) == -1,
	      "a conditional jump to the target refuses them all (a probe there fires untaken)");
	CHECK(calls_to_0x1000(two_calls, 4, sites) == 0, "a call cut by the end is not read");
	loader_calls();
	early_exits();
	libc_exits();
	return tap_done();
}
