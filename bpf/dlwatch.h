/* SPDX-License-Identifier: GPL-2.0 */
/* Events of dlwatch.bpf.c, shared with user space: fixed-size plain C, no pointers. */
#ifndef DLSCOPE_DLWATCH_H
#define DLSCOPE_DLWATCH_H

#define DLW_STR_LEN 256
/*
 * The user stack copied with an event that carries one, for CFI unwinding in user space (what
 * perf record --call-graph dwarf does): whole pages from the one that holds sp, so at least
 * 28 KiB above sp. CPython's import machinery is deep: in Debian's python3.11 the stacks at
 * the dlopens of `import numpy` reach 22.1 KiB down to _start, those of
 * `import scipy.linalg, torch` 23.4 KiB (128 frames); the frames from libc's dlopen to
 * _imp_create_dynamic take a few hundred bytes of it. A C program needs far less.
 */
#define DLW_STACK_BYTES (32 * 1024)

enum dlw_type {
	DLW_DLOPEN = 1,	 /* str: file, arg0: flags, arg1: lmid (dlmopen), ret: handle */
	DLW_DLCLOSE,	 /* arg0: handle, ret: result */
	DLW_DLSYM,	 /* str: symbol, arg0: handle, ret: address */
	DLW_OMP_FORK,	 /* arg0: enum dlw_fork_entry, arg1: regions so far on this thread */
	DLW_BLAS_THREAD, /* a BLAS pool thread starts */
	DLW_CUDA_LOAD,	 /* arg0: which loader, arg1: image size, str: file, ret: CUresult */
	DLW_EXEC,	 /* str: file name */
	DLW_FORK,	 /* arg0: child pid, arg1: enum dlw_fork_kind */
	DLW_EXIT,	 /* arg0: exit code (process exit: tid == pid) */
	DLW_SIGNAL,	 /* arg0: signal, arg1: fault address */
	DLW_FUTEX_WAIT,	 /* arg0: futex address, arg1: enum dlw_futex_kind, duration_ns: how
			  * long it waited (DLW_FUTEX_ENDED) */
};

/* The parallel-region entry points probed (DLW_OMP_FORK arg0, their attach cookies). */
enum dlw_fork_entry {
	DLW_ENTRY_GOMP_PARALLEL = 1,
	DLW_ENTRY_GOMP_PARALLEL_START,
	DLW_ENTRY_KMPC_FORK_CALL,
	DLW_ENTRY_BLAS_DISPATCH, /* OpenBLAS's exec_blas: its pool wakes */
};

enum dlw_fork_kind {
	DLW_FORK_PROCESS = 0,
	DLW_FORK_THREAD = 1, /* reported only when created inside dlopen */
};

enum dlw_futex_kind {
	DLW_FUTEX_ENDED = 0,		 /* a wait that ended, after duration_ns */
	DLW_FUTEX_BEGINS_IN_DLOPEN = 1, /* a wait that began inside dlopen, sent as it begins */
	/* Made by user space, which samples calls in progress: a thread found blocked in a futex
	 * inside dlopen or dlsym (str: the call's file or symbol). */
	DLW_FUTEX_BLOCKED_IN_DLOPEN = 2,
	DLW_FUTEX_BLOCKED_IN_DLSYM = 3,
};

/*
 * The signals that kill with a fault, which DLW_SIGNAL reports (vmlinux.h has no signal.h;
 * user space checks these against its own).
 */
#define DLW_SIGILL 4
#define DLW_SIGTRAP 5
#define DLW_SIGABRT 6
#define DLW_SIGBUS 7
#define DLW_SIGFPE 8
#define DLW_SIGSEGV 11

/* futex(2) operations: the command bits of op, and the two plain waits. */
#define DLW_FUTEX_CMD_MASK 0x7f
#define DLW_FUTEX_WAIT_OP 0
#define DLW_FUTEX_WAIT_BITSET_OP 9

/*
 * Why an event was lost, the slots of the per-CPU "lost" map: the ring buffer (or the scratch
 * slots of stack events) was full, or the table of calls in progress was, so a call's return
 * could not be paired. The kernel's own count of programs it skipped is read in user space.
 */
enum dlw_lost {
	DLW_LOST_RING,
	DLW_LOST_CALLS,
	DLW_LOST__COUNT,
};

/* The attach cookie of a return probe placed on a ret instruction (not a uretprobe). */
#define DLW_AT_RET 0x100

/* Loader cookies for DLW_CUDA_LOAD (arg0) and the uprobes' attach cookies. */
enum dlw_cuda_fn {
	CUDA_MODULE_LOAD = 1,
	CUDA_MODULE_LOAD_DATA,
	CUDA_MODULE_LOAD_DATA_EX,
	CUDA_MODULE_LOAD_FATBIN,
	CUDA_LIBRARY_LOAD_DATA,
	CUDA_LIBRARY_LOAD_FILE,
	HIP_MODULE_LOAD,
	HIP_MODULE_LOAD_DATA,
};

/*
 * A call in progress (the calls map), keyed by dlw_call_key(); user space scans it for threads
 * that stay inside dlopen.
 */
struct dlw_call {
	unsigned long long ts;
	unsigned long long arg0, arg1;
	unsigned long long strptr; /* read again at return when the page was not yet faulted in */
	unsigned int type;
	unsigned int pid;
	unsigned int str_state; /* enum dlw_str_state */
	unsigned int pad;
	char str[DLW_STR_LEN];
};

/* A constructor may dlopen inside dlopen: each nesting level has its own pending call. */
#define dlw_call_key(tid, type, depth) \
	(((unsigned long long)(tid) << 16) | ((unsigned long long)(type) << 8) | ((depth) & 0xff))

/*
 * str[] of a call: the kernel cannot fault a page in, so a name on a page the process has not
 * touched yet (a just-loaded library's .rodata) cannot be read there, at entry or, when the
 * call blocks, ever. Then str[] holds the name's address (8 bytes) for user space to read.
 */
enum dlw_str_state {
	DLW_STR_READ = 0, /* str[] is the string (may really be "") */
	DLW_STR_NULL,	  /* the pointer was NULL: dlopen(NULL) */
	DLW_STR_UNREAD,	  /* not read: str[] holds the address */
};

/* The registers CFI unwinding needs on x86-64: pc, stack and frame pointers, callee-saved. */
struct dlw_regs {
	unsigned long long ip, sp, bp, bx, r12, r13, r14, r15;
};

struct dlw_event {
	unsigned long long ts_ns;
	unsigned long long duration_ns;
	unsigned long long arg0, arg1;
	long long ret;
	unsigned int pid, tid;
	unsigned int type;
	unsigned int in_dlopen; /* the thread was inside dlopen (depth) when it happened */
	unsigned int str_state; /* enum dlw_str_state: what str[] holds */
	char comm[16];
	char str[DLW_STR_LEN];
	/* Only in full-size events (dlopen, GPU loads, fork, signal, omp_fork); others end here. */
	char path[DLW_STR_LEN];	/* dlopen: l_name of the returned link_map, the file loaded */
	unsigned int stack_size; /* bytes of user stack that follow, from regs.sp & ~4095 */
	unsigned int stack_absent; /* bit i: page i of them could not be read (zeros) */
	struct dlw_regs regs;	/* the user registers where the stack was taken */
};

/*
 * An event with its stack: stack_size bytes of user memory from the page of regs.sp (the bytes
 * below sp are dead, above it the frames). Built in a scratch slot, sent at the size of the
 * event and the bytes copied.
 */
struct dlw_stack_event {
	struct dlw_event e;
	unsigned char stack[DLW_STACK_BYTES];
};

#endif
