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
	return tap_done();
}
