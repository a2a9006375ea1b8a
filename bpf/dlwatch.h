/* SPDX-License-Identifier: GPL-2.0 */
/* Events of dlwatch.bpf.c, shared with user space: fixed-size plain C, no pointers. */
#ifndef DLSCOPE_DLWATCH_H
#define DLSCOPE_DLWATCH_H

#define DLW_STR_LEN 256
/* The environment entry NAME=VALUE a process must hold at its exec (--slurm-job), with its NUL. */
#define DLW_ENV_ENTRY_MAX 64
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
	DLW_OMP_FORK,	 /* arg0: enum dlw_fork_entry, arg1: regions so far on this thread,
			  * ret: the runtime (dlw_cookie's id); sent for a process's first region
			  * in each runtime and for each one started inside dlopen */
	DLW_BLAS_THREAD, /* a BLAS pool thread starts */
	DLW_GPU_LOAD,	 /* a GPU module load or program build: arg0: which function and a count
			  * (dlw_gpu_arg0), arg1: image size, arg2: the image's address (a load
			  * from memory) or the OpenCL program, str: file or build options, ret:
			  * CUresult, hipError_t, cl_int or ze_result_t */
	DLW_EXEC,	 /* str: file name */
	DLW_FORK,	 /* arg0: child pid, arg1: enum dlw_fork_kind */
	DLW_EXIT,	 /* arg0: exit code (process exit: tid == pid) */
	DLW_SIGNAL,	 /* arg0: signal, arg1: fault address */
	DLW_FUTEX_WAIT,	 /* arg0: futex address, arg1: enum dlw_futex_kind, duration_ns: how
			  * long it waited (DLW_FUTEX_ENDED) */
	DLW_HOLD,	 /* (arg2: the process's unloads so far, map unloads)
			  * the loader's link map is consistent with new objects in it, before
			  * their relocation and constructors: the thread waits (arg0: the
			  * hold's number) until user space attached their probes and wrote
			  * that number into the released map; arg1: enum dlw_hold_at */
};

/* Where a thread is held (DLW_HOLD arg1). */
enum dlw_hold_at {
	DLW_HOLD_STARTUP = 0, /* the start-up objects, before the first constructor and main */
	DLW_HOLD_DLOPEN = 1,  /* the objects a dlopen maps, before it relocates them */
	/* Not a hold (arg0 0: nobody waits): a new image, whose loader the reader probes at
	 * once when it has no probes yet (another root); arg2: the inode of the file its first
	 * instruction is in (its loader's, or a static program's own), 0 when unknown. */
	DLW_HOLD_EXEC = 2,
};

/*
 * A file by what identifies its content (objcache.h's key, the device as the kernel encodes
 * it: major << 20 | minor): the no_probe_files map's key, of files with no probe to put in
 * place, so a dlopen that brings only such objects is not held. pid and start 0: in every
 * process (the file needs none, or has them all for every process); else the process, with its
 * start in clock ticks after boot (/proc/PID/stat's starttime: a PID used again is another
 * process), in whose address space its probes are (uprobe_multi's PID filter).
 */
struct dlw_file_key {
	unsigned long long ino, size;
	long long mtime_ns, ctime_ns;
	unsigned int dev, pid;
	unsigned long long start;
};

/*
 * A loader whose r_brk is probed (the probed_loaders map's key): by its file's device (as the
 * kernel encodes it) and inode, in every process (pid 0) or in process pid only (uprobe_multi's
 * PID filter). An exec into one needs nothing of the holds' reader.
 */
struct dlw_loader_key {
	unsigned long long ino;
	unsigned int dev, pid;
};

/* /proc/PID/stat's clock ticks (USER_HZ, 100 on every architecture dlscope runs on). */
#define DLW_NS_PER_TICK 10000000ULL

#define DLW_NO_PROBE_FILES_MAX 32768

/* How long a held thread waits for user space at most: then it goes on, counted late. */
#define DLW_HOLD_MAX_NS (3000ULL * 1000 * 1000)

/*
 * The collector's heartbeat (collector_beat, CLOCK_MONOTONIC ns), written every
 * DLW_BEAT_EVERY_NS by a thread of its own: older than DLW_BEAT_STALE_NS, the collector is
 * stopped, exiting, frozen or starved, and no thread is held for it (a hold in progress ends).
 * A signal that stops or ends it does so at once (holds.bpf.h: collector_away_since); the
 * beat is for what sends none (a cgroup freezer, a ptrace seize, a machine that runs it not at
 * all): 250 ms, as a 50 ms window let holds go in a loaded CI run while dlscope only ran late.
 */
#define DLW_BEAT_EVERY_NS (10ULL * 1000 * 1000)
#define DLW_BEAT_STALE_NS (250ULL * 1000 * 1000)

/* The parallel-region entry points probed (DLW_OMP_FORK arg0, their attach cookies). */
enum dlw_fork_entry {
	DLW_ENTRY_GOMP_PARALLEL = 1,
	DLW_ENTRY_GOMP_PARALLEL_START,
	DLW_ENTRY_KMPC_FORK_CALL,
	DLW_ENTRY_BLAS_DISPATCH, /* OpenBLAS's exec_blas: its pool wakes */
};

/*
 * The attach cookie of a --hot probe: the entry point, and an id the collector gives the object
 * (the runtime) it is attached to, so that counts are kept per runtime.
 */
#define dlw_cookie(entry, runtime) (((unsigned long long)(runtime) << 8) | (entry))

/* The activity map: regions and dispatches started, per thread and runtime. */
struct dlw_activity_key {
	unsigned int pid, tid;
	unsigned int runtime; /* the cookie's id */
	unsigned int pad;
};
#define DLW_ACTIVITY_MAX 16384

enum dlw_fork_kind {
	DLW_FORK_PROCESS = 0,
	DLW_FORK_THREAD = 1, /* reported only when created inside dlopen */
};

enum dlw_futex_kind {
	DLW_FUTEX_ENDED = 0,		/* a wait that ended, after duration_ns */
	DLW_FUTEX_BEGINS_IN_DLOPEN = 1, /* a wait that began inside dlopen, sent as it begins */
};

/*
 * The signals that kill with a fault, which DLW_SIGNAL reports; the two no process can catch,
 * and those whose default is to be ignored, which tell whether a signal sent to the collector
 * stops or ends it (vmlinux.h has no signal.h; user space checks these against its own).
 */
#define DLW_SIGILL 4
#define DLW_SIGTRAP 5
#define DLW_SIGABRT 6
#define DLW_SIGBUS 7
#define DLW_SIGFPE 8
#define DLW_SIGKILL 9
#define DLW_SIGSEGV 11
#define DLW_SIGCHLD 17
#define DLW_SIGCONT 18
#define DLW_SIGSTOP 19
#define DLW_SIGURG 23
#define DLW_SIGWINCH 28

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
	DLW_LOST_ACTIVITY, /* not an event: a region not counted, the activity map full */
	DLW_LOST_HOLD,	   /* not an event: a hold given up (user space too slow), probes late */
	DLW_LOST__COUNT,
};

/* A process outside the watch that hit its probes (the map outside): how often, its name. */
struct dlw_outside {
	unsigned long long hits;
	char comm[16];
};

/* The attach cookie of a return probe placed on a ret instruction (not a uretprobe). */
#define DLW_AT_RET 0x100
/*
 * With DLW_AT_RET, a return probe moved to the stack protector's check before the ret, which the
 * kernel emulates (elfobj__func_exits): the value is in register DLW_AT_REG (the instruction
 * set's number: 0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15) or, with
 * DLW_AT_SLOT, in the word at rsp + DLW_AT_SLOT_OFF (signed).
 */
#define DLW_AT_EARLY 0x400
#define DLW_AT_SLOT 0x800
#define DLW_AT_REG(cookie) (((cookie) >> 16) & 0xf)
#define DLW_AT_SLOT_OFF(cookie) ((int)((cookie) >> 32))
#define dlw_at_early(reg, in_slot, slot)                                                      \
	(DLW_AT_RET | DLW_AT_EARLY | ((in_slot) ? DLW_AT_SLOT : 0) |                          \
	 ((unsigned long long)((reg) & 0xf) << 16) |                                            \
	 ((unsigned long long)(unsigned int)(slot) << 32))
/* The attach cookie of dlopen_enter on dlmopen, whose arguments start with the namespace. */
#define DLW_AT_DLMOPEN 0x200
/*
 * The attach cookie of the hold at _dl_debug_state (linkmap_consistent): where r_state is from
 * the probed address (DLW_LM_DELTA_BITS, signed; 0 unknown), and with DLW_LM_ONE_LIST a loader
 * that has one list and signals RT_ADD at each dlopen's start, mapping or not (musl): there a
 * dlopen that added nothing to the list mapped nothing.
 */
#define DLW_LM_DELTA_BITS 48
#define DLW_LM_ONE_LIST (1ULL << 62)

/* The GPU functions probed: DLW_GPU_LOAD's arg0 (low byte) and the uprobes' attach cookies. */
enum dlw_gpu_fn {
	CUDA_MODULE_LOAD = 1,
	CUDA_MODULE_LOAD_DATA,
	CUDA_MODULE_LOAD_DATA_EX,
	CUDA_MODULE_LOAD_FATBIN,
	CUDA_LIBRARY_LOAD_DATA,
	CUDA_LIBRARY_LOAD_FILE,
	HIP_MODULE_LOAD,
	HIP_MODULE_LOAD_DATA,
	CL_CREATE_PROGRAM_WITH_SOURCE, /* OpenCL, probed in the ICD loader */
	CL_CREATE_PROGRAM_WITH_BINARY,
	CL_CREATE_PROGRAM_WITH_IL,
	CL_BUILD_PROGRAM,
	CL_COMPILE_PROGRAM,
	CL_LINK_PROGRAM,
	ZE_MODULE_CREATE, /* Level Zero, probed in its loader */
	DLW_GPU_FN__COUNT,
};

/*
 * DLW_GPU_LOAD's arg0: the function in its low byte; DLW_GPU_NO_RESULT when an OpenCL create
 * call was given no errcode_ret (ret is then not its result); in the high 32 bits a count: the
 * source strings (clCreateProgramWithSource), devices (WithBinary, Build, Compile), input
 * programs (Link), or Level Zero's module format (0 SPIR-V, 1 native).
 */
#define DLW_GPU_FN_MASK 0xffULL
#define DLW_GPU_NO_RESULT 0x100ULL
#define dlw_gpu_arg0(fn, count) ((unsigned long long)(fn) | ((unsigned long long)(count) << 32))

/*
 * A call in progress (the calls map), keyed by dlw_call_key(); user space scans it for threads
 * that stay inside dlopen.
 */
struct dlw_call {
	unsigned long long ts;
	unsigned long long arg0, arg1, arg2;
	unsigned long long strptr; /* read again at return when the page was not yet faulted in */
	unsigned int type;
	unsigned int pid;
	unsigned int str_state; /* enum dlw_str_state */
	unsigned int pad;
	/* dlopen, dlclose: the process's link map changes at entry (loader.bpf.h: lm_counts);
	 * 0: none seen yet, so none can be told apart */
	unsigned long long lm_changes;
	char str[DLW_STR_LEN];
};

/* A constructor may dlopen inside dlopen: each nesting level has its own pending call. */
#define dlw_call_key(tid, type, depth) \
	(((unsigned long long)(tid) << 16) | ((unsigned long long)(type) << 8) | ((depth)&0xff))

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

/*
 * The Python stack of a dlopen made by a CPython thread, read in the kernel at dlopen's entry
 * (the calling thread holds the GIL, so its frame chain holds still), as BCC's pyperf reads it.
 * User space says where the interpreter is and how this version lays it out (struct dlw_pycfg,
 * per process); the program records per frame the code object, the instruction offset and
 * what user space needs to resolve them later: names and lines are read there.
 */
#define DLW_PY_INNER 48 /* innermost frames kept */
#define DLW_PY_OUTER 16 /* outermost frames kept (a ring) when the chain is longer */
#define DLW_PY_FRAMES (DLW_PY_INNER + DLW_PY_OUTER)
#define DLW_PY_WALK 192	  /* frames walked at most */
#define DLW_PY_THREADS 64 /* thread states searched for the calling thread */
#define DLW_PY_NAME 32	  /* bytes of a function's name copied with its frame */

struct dlw_pycfg {
	unsigned long long runtime; /* address of _PyRuntime */
	int interp_head;	    /* _PyRuntimeState: interpreters.head */
	int rt_gil;		    /* ... ceval.gil (up to 3.11), else -1 */
	int is_gil_ptr;		    /* PyInterpreterState: ceval.gil, a pointer (3.12+) */
	int is_tstate_head;
	int gil_last_holder;
	int ts_next, ts_thread_id; /* thread_id: pthread_self(), the thread's fsbase */
	int ts_frame;		   /* the first frame: *(tstate + ts_frame) ... */
	int ts_frame2;		   /* ... then *(that + ts_frame2) when >= 0 (a _PyCFrame) */
	int fr_code, fr_previous;
	int fr_lasti;	 /* int f_lasti (3.9, 3.10), else -1 */
	int lasti_scale; /* f_lasti to the line table's unit: 1 (3.9), 2 (3.10) */
	int fr_instr;	 /* a pointer into the code (3.11+), else -1 */
	int co_code;	 /* ... whose start is code + co_code_adaptive */
	int fr_owner;	 /* char owner (3.12+: 3 and up, an eval call's shim), else -1 */
	int fr_local0;	 /* the frame's first local (localsplus[0]) */
	int fr_tagged;	 /* the code and locals are _PyStackRefs (3.14+): low 2 bits a tag */
	int co_filename; /* a code object's file name (a str) */
	int co_func;	 /* its co_qualname (3.11+) or co_name: the pointer also checks that the
			   * code at the address is still the one captured */
	int str_hash;	 /* a str's cached hash */
	int str_ascii;	 /* where a compact ASCII str's characters start */
	int str_compact; /* ... a compact non-ASCII one's */
	int str_length;	 /* its length in characters */
	int str_state;	 /* its state bits: kind (2-4), compact (5), ascii (6) */
};

/*
 * A str's fingerprint, taken by the kernel with a frame and again by user space before it takes
 * the str now at that address for the one captured (the code, and with it the str, may have
 * been freed and the memory reused since): the length, kind and the first and last
 * DLW_STR_PART bytes of the characters, each part zero-padded. A file name of up to
 * 2 * DLW_STR_PART bytes is fingerprinted whole. 0 is no fingerprint.
 */
#define DLW_STR_PART 64
#define DLW_STR_SEED 0x6a09e667f3bcc908ULL

static inline unsigned long long dlw_str_mix(unsigned long long h, unsigned long long w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 31);
}

/* The start of a fingerprint: @len characters, @state the str's state word. */
static inline unsigned long long dlw_str_start(unsigned long long len, unsigned int state)
{
	return dlw_str_mix(dlw_str_mix(DLW_STR_SEED, len), state & 0x7c);
}

struct dlw_pyframe {
	unsigned long long code;
	unsigned long long local0; /* the first local: _find_and_load's module name */
	/* The code's file and function name (str objects): they outlive a module's top-level
	 * code, freed when the module has run, often before user space reads the event. */
	unsigned long long file, func;
	/* Is the str at @file still the same? Its cached hash (-1: never computed, as for most
	 * file names) and fingerprint (dlw_str_start and _mix; 0: none taken). */
	unsigned long long file_hash, file_digest;
	unsigned long long local0_hash; /* the first local's hash, were it a str (a module name) */
	unsigned int offset;		/* instruction offset in the line table's unit */
	unsigned int pad;
	char name[DLW_PY_NAME]; /* the function's name (an ASCII one), maybe cut */
};

enum dlw_py_status {
	DLW_PY_NONE = 0, /* not a Python process, or nothing read */
	DLW_PY_OK,
	DLW_PY_NO_THREAD,  /* no thread state of this thread: not a Python thread, or no GIL */
	DLW_PY_UNREADABLE, /* a pointer of the interpreter could not be read */
};

struct dlw_pystack {
	unsigned int status; /* enum dlw_py_status */
	unsigned int n;	     /* frames walked (more than DLW_PY_FRAMES: the middle is left out) */
	unsigned int more;   /* the chain goes on past DLW_PY_WALK */
	unsigned int pad;
	/* f[0..DLW_PY_INNER) innermost first; then, with n > DLW_PY_FRAMES, frame k (k >=
	 * DLW_PY_INNER) of the walk is in f[DLW_PY_INNER + (k - DLW_PY_INNER) % DLW_PY_OUTER] */
	struct dlw_pyframe f[DLW_PY_FRAMES];
};

/* The registers CFI unwinding needs on x86-64: pc, stack and frame pointers, callee-saved. */
struct dlw_regs {
	unsigned long long ip, sp, bp, bx, r12, r13, r14, r15;
};

struct dlw_event {
	unsigned long long ts_ns;
	unsigned long long duration_ns;
	unsigned long long arg0, arg1, arg2;
	long long ret;
	unsigned int pid, tid;
	unsigned int type;
	unsigned int in_dlopen; /* the thread was inside dlopen (depth) when it happened */
	unsigned int str_state; /* enum dlw_str_state: what str[] holds */
	/*
	 * dlopen, dlclose: the process's link map did not change while the call ran (the loader
	 * called _dl_debug_state in none of its threads, and it was seen to before): a dlopen
	 * that found its object loaded, a dlclose that only dropped a reference.
	 */
	unsigned int lm_unchanged;
	char comm[16];
	char str[DLW_STR_LEN];
	/* Only in full-size events (dlopen, GPU loads, fork, signal, omp_fork); others end here. */
	char path[DLW_STR_LEN];	   /* dlopen: l_name of the returned link_map, the file loaded */
	unsigned int stack_size;   /* bytes of user stack that follow, from regs.sp & ~4095 */
	unsigned int stack_absent; /* bit i: page i of them could not be read (zeros) */
	unsigned int py_follows;   /* dlopen: its Python stack follows the stack's bytes */
	unsigned int pad;
	struct dlw_regs regs; /* the user registers where the stack was taken */
};

/*
 * An event with its stack: stack_size bytes of user memory from the page of regs.sp (the bytes
 * below sp are dead, above it the frames), then, for a dlopen of a Python thread
 * (py_follows), the Python stack at its entry. Built in a scratch slot, sent at the size of
 * what it holds: a record that carried room for a Python stack in every event was 6 KiB more
 * to write into the ring for each dlopen of any process, most of them no Python's.
 */
struct dlw_stack_event {
	struct dlw_event e;
	unsigned char stack[DLW_STACK_BYTES];
	struct dlw_pystack py_room; /* where the Python stack goes when the copy fills stack[] */
};

#endif
