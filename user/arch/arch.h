/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What depends on the machine, in one place: registers as ptrace gives them and as DWARF
 * numbers them, system call numbers, and the few instruction patterns dlscope decodes (a call
 * before a return address, a ret, the bodies of tiny accessor functions). x86-64 only today
 * (arch/x86_64.c); another machine is another file behind this header.
 */
#ifndef DLSCOPE_ARCH_H
#define DLSCOPE_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Bytes below the stack pointer a leaf function may use without moving it (the ABI's red zone). */
#define ARCH_RED_ZONE 128
/* DWARF numbers of the registers unwinding starts from: 0 .. ARCH_DWARF_REGS - 1. */
#define ARCH_DWARF_REGS 17

typedef struct user_regs_struct arch_regs;
typedef struct user_fpregs_struct arch_fpregs;

/* A thread in a ptrace stop of ours: its registers, its floating-point registers (0 or
 * -errno), and its extended state (x86-64: the XSAVE area) into @buf, whose size is returned
 * (0 where there is none or it cannot be read). */
int arch_regs__read(pid_t tid, arch_regs *r);
int arch_fpregs__read(pid_t tid, arch_fpregs *f);
size_t arch_xstate__read(pid_t tid, void *buf, size_t len);
/* The core note type the extended state is written as (x86-64: NT_X86_XSTATE). */
unsigned int arch_xstate_note(void);

/* The ELF machine of this build (its cores'), and its name for a line that refuses another. */
unsigned int arch_elf_machine(void);
const char *arch_elf_machine_name(void);

/*
 * The thread pointer of the thread whose glibc descriptor (struct pthread) is at @pd: x86-64
 * keeps the descriptor at the thread pointer (TLS_TCB_AT_TP). 0, or -ENOTSUP where it is not.
 */
int arch_tp_of_descriptor(uint64_t pd, uint64_t *tp);

uint64_t arch_regs__pc(const arch_regs *r);
uint64_t arch_regs__sp(const arch_regs *r);
/* Set the program counter and the stack pointer (a frame walked from a return address). */
void arch_regs__set_pc_sp(arch_regs *r, uint64_t pc, uint64_t sp);
/* The thread pointer (x86-64: fs_base), which glibc's pthread_self() returns. */
uint64_t arch_regs__thread_pointer(const arch_regs *r);
/* @r in DWARF order, registers 0 .. ARCH_DWARF_REGS - 1, into @out. */
void arch_regs__dwarf(const arch_regs *r, uint64_t out[ARCH_DWARF_REGS]);

/*
 * The system call a thread stopped in, from its registers at the stop (a core's NT_PRSTATUS):
 * its number, with its arguments in @args; -1 when it was not inside one (or had returned).
 */
long arch_regs__syscall(const arch_regs *r, uint64_t args[6]);

/* DWARF numbers of the registers a BPF probe copies with a stack (struct dlw_regs). */
#define ARCH_DWARF_BX 3
#define ARCH_DWARF_BP 6
#define ARCH_DWARF_SP 7	  /* BP and SP are adjacent: one span of two */
#define ARCH_DWARF_R12 12 /* R12 .. R15: one span of four */
#define ARCH_DWARF_PC 16

/*
 * No user-space address reaches this (x86-64: 47 bits with 4-level paging, 56 with 5-level):
 * a pc at or above it is a non-canonical or kernel address, never a frame.
 */
#define ARCH_USER_ADDR_END 0x0100000000000000ULL

/* The name of system call @nr among those a blocked thread is commonly found in, or NULL. */
const char *arch_syscall_name(long nr);
/* The futex system call's number, for /proc/PID/syscall and /proc/PID/task/TID/syscall. */
long arch_syscall_futex(void);

/* True when the 8 bytes before an address (@before[0..7]) end with a call instruction. */
bool arch_follows_call(const unsigned char before[8]);
/* The target of the direct call (call rel32) that ends just before return address @ret, whose
 * 8 bytes before it are @before; false when that is no direct call. */
bool arch_direct_call_target(const unsigned char before[8], uint64_t ret, uint64_t *target);
/*
 * The direct calls to @target in code @code, @len bytes at virtual address @vaddr (call rel32,
 * and jmp rel32, a tail call): the address of each into @sites (at most @max; *n counts them
 * all). Each is a 5-byte pattern whose displacement must land exactly on @target, so a match
 * inside another instruction is all but impossible. false when a branch that may not be taken
 * (jcc), or a 2-byte jmp, lands there too: a probe on the others would miss it.
 */
bool arch_direct_calls_to(const unsigned char *code, size_t len, uint64_t vaddr, uint64_t target,
			  uint64_t *sites, size_t max, size_t *n);
/* True when @byte, at an instruction boundary, is a return. */
bool arch_is_ret(unsigned char byte);

/*
 * A place before a function's return where the kernel emulates a probe (no single-step: a ret
 * is stepped out of line, two traps), and where the return value already lies: the stack
 * protector's check (sub or xor of %fs:0x28, then jne to the failure call, which never returns),
 * followed only by the frame's release and the value's move into rax (add to rsp, pop, mov to
 * rax from a register or from the stack) up to the ret. At the jne the value is register
 * @value_reg (the instruction set's number: 0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp, 6 rsi, 7 rdi,
 * 8-15 r8-r15), or with @in_slot the word at rsp + @slot.
 */
struct arch_early_exit {
	uint64_t at; /* the jne's virtual address */
	unsigned int value_reg;
	bool in_slot;
	int32_t slot;
};
/*
 * @code: a function's bytes (@len, at virtual address @vaddr), with a ret at @ret_at. false
 * when its epilogue is not of that shape, or when a direct branch anywhere in the function may
 * land between the check and the ret (a path that would pass by the probe), which a scan of
 * every byte finds, at the cost of a few false alarms.
 */
bool arch_early_exit(const unsigned char *code, size_t len, uint64_t vaddr, uint64_t ret_at,
		     struct arch_early_exit *out);

/*
 * A function's first bytes @code (@len, read at virtual address @entry) that only return a
 * constant: 1 with @imm for "return IMM", 2 with @vaddr for "return &OBJECT", 3 with @vaddr for
 * "return OBJECT" (a global word, read where it lies); -ENOENT otherwise.
 */
int arch_decode_return_constant(const unsigned char *code, size_t len, uint64_t entry, int64_t *imm,
				uint64_t *vaddr);

/*
 * A function's first bytes @code (@len, at virtual address @entry) that store two globals
 * through its two pointer arguments (glibc's _dl_get_tls_static_info: mov G1(%rip), %rax;
 * mov %rax, (%rdi); mov G2(%rip), %rax; mov %rax, (%rsi); ret): the globals' addresses.
 */
bool arch_decode_two_stores(const unsigned char *code, size_t len, uint64_t entry, uint64_t *first,
			    uint64_t *second);

/*
 * libgomp's omp_get_max_threads as GCC compiles it: the thread's team state through a TLS
 * variable (its GOT slot @got_slot, the offset @task_off of the task in the TLS block), the
 * ICV at @icv_off in the task, else the global ICVs at @global. false when @code is not that.
 */
struct arch_libgomp_icv {
	uint64_t got_slot, global;
	int64_t task_off, icv_off;
};
bool arch_decode_libgomp_max_threads(const unsigned char *code, size_t len, uint64_t entry,
				     struct arch_libgomp_icv *out);

#endif
