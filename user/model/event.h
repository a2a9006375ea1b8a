/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One watch event, typed: decoded once from the raw BPF record (bpf/dlwatch.h), or from a trace
 * record (docs/trace-format.md); a struct per kind with named fields, one formatter for its text
 * line (watch's output and the TUI) and one encoder/decoder pair for its trace record.
 */
#ifndef DLSCOPE_EVENT_H
#define DLSCOPE_EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlwatch.h"
#include "pyimport.h"

/* The trace format this dlscope writes; it reads this one and the ones before. */
#define TRACE_FORMAT_NUMBER 3
#define TRACE_FORMAT_STR_(n) #n
#define TRACE_FORMAT_STR(n) TRACE_FORMAT_STR_(n)
#define TRACE_FORMAT "dlscope-trace/" TRACE_FORMAT_STR(TRACE_FORMAT_NUMBER)
#define TRACE_FORMAT_V2 "dlscope-trace/2"
#define TRACE_FORMAT_V1 "dlscope-trace/1"

enum event_kind {
	EVENT_DLOPEN = 1, /* dlopen and dlmopen, at their return */
	EVENT_DLCLOSE,
	EVENT_DLSYM,	   /* dlsym and dlvsym */
	EVENT_OMP_FORK,	   /* a parallel region or BLAS dispatch started inside dlopen, or the
			    * first one of a runtime in a process (in_dlopen 0) */
	EVENT_BLAS_THREAD, /* a BLAS pool thread starts */
	EVENT_GPU_LOAD,	   /* a GPU module load or program build (CUDA, HIP, OpenCL, Level Zero) */
	EVENT_EXEC,
	EVENT_FORK, /* a process forked, or a thread created inside dlopen */
	EVENT_EXIT,
	EVENT_SIGNAL, /* a fatal signal */
	EVENT_FUTEX_WAIT,
	EVENT__COUNT,
};

/* What a futex_wait event says. */
enum event_futex {
	EVENT_FUTEX_ENDED,	    /* a wait of duration_ns ended (--futex-ms) */
	EVENT_FUTEX_BEGINS,	    /* a wait that begins inside dlopen, reported as it begins */
	EVENT_FUTEX_BLOCKED_DLOPEN, /* a thread sampled blocked inside dlopen(call) */
	EVENT_FUTEX_BLOCKED_DLSYM,  /* ... inside dlsym(call) */
};

/* The user stack an event carried, unwound: frames as text, innermost first. */
struct event_stack {
	size_t n, cap_frames, cap_pcs;
	char **frames; /* "fn+0x12 (libfoo.so)" */
	uint64_t *pcs;
	char *end; /* why it ends before the outermost frame, or NULL */
};

struct event {
	enum event_kind kind;
	uint64_t t; /* CLOCK_MONOTONIC ns */
	pid_t pid, tid;
	char comm[16];
	unsigned int in_dlopen; /* the thread's dlopen nesting depth when it happened */
	bool has_rank;		/* the process is (or belongs to) a rank of a job: "rank" */
	int rank;
	bool has_stack; /* it carried a stack: the record has "stack" (maybe empty) */
	struct event_stack stack;
	/* A dlopen of a Python thread: its Python stack at the call ("python" in the record). */
	bool has_python;
	struct py_import py;
	union {
		struct {
			bool path_null;		/* dlopen(NULL): the main program */
			char path[DLW_STR_LEN]; /* the argument */
			char file[DLW_STR_LEN]; /* l_name of the returned link map */
			uint64_t flags;
			uint64_t lmid;	 /* dlmopen's namespace; 0 for dlopen (not in a trace) */
			uint64_t handle; /* 0: failed */
			uint64_t duration_ns;
			/* Failed: dlerror's text without its object name ("undefined symbol:
			 * cblas_dcabs1"); "" when it could not be read. */
			char error[DLW_STR_LEN];
		} dlopen;
		struct {
			uint64_t handle;
			int64_t result;
		} dlclose;
		struct {
			char symbol[DLW_STR_LEN];
			uint64_t handle, address;
		} dlsym;
		struct {
			unsigned int entry;	   /* enum dlw_fork_entry */
			uint64_t regions;	   /* regions this thread started so far */
			unsigned int runtime_id;   /* the probes' id of the runtime (raw only) */
			char runtime[DLW_STR_LEN]; /* its object, named by the collector */
		} omp_fork;
		struct {
			unsigned int function; /* enum dlw_gpu_fn */
			/* Source strings, devices or input programs (OpenCL), the module's format
			 * (Level Zero: 0 SPIR-V, 1 native); see dlw_gpu_arg0. */
			unsigned int count;
			bool no_result;		   /* an OpenCL create call without errcode_ret */
			char file[DLW_STR_LEN];	   /* a load by file name */
			char options[DLW_STR_LEN]; /* build options (OpenCL, Level Zero) */
			uint64_t image_size;
			uint64_t image;	  /* the image's address (a load from memory), else 0 */
			uint64_t program; /* the OpenCL program created or built, else 0 */
			int64_t result;
			uint64_t duration_ns;
		} gpu_load;
		struct {
			char file[DLW_STR_LEN];
		} exec;
		struct {
			pid_t child;
			bool thread;
		} fork;
		struct {
			/* the raw wait status (256 for exit(1)); the trace also says it in words */
			uint64_t wait_status;
		} exit;
		struct {
			unsigned int signo;
			uint64_t address; /* the fault address */
			/* Sent by kill, tgkill or raise (no fault address): by this PID. */
			bool sent;
			int64_t sent_by;
			char where[256]; /* it, symbolized */
			char at[512];	 /* the faulting pc, symbolized */
		} signal;
		struct {
			enum event_futex what;
			uint64_t futex;
			uint64_t duration_ns;
			char call[DLW_STR_LEN]; /* blocked: the dlopen's file or dlsym's symbol */
		} futex;
	} u;
};

/*
 * Decode a raw BPF record of @size bytes (its string already read when the kernel could not).
 * Fields the model names (a signal's where and at) and the stack are left for the collector.
 * Returns 0, or -EINVAL with the reason in @why.
 */
int event__decode(struct event *ev, const struct dlw_event *raw, size_t size, char *why,
		  size_t whylen);

/* "event" kinds' trace type ("dlopen", "gpu_load"...); NULL when not an event kind. */
const char *event_kind__id(enum event_kind k);
/* The kind of a trace type; 0 when the type is not an event's. */
enum event_kind event_kind__parse(const char *id);
/* The GPU loader's function name ("cuModuleLoad", "clBuildProgram"), "?" when unknown. */
const char *event__gpu_fn(unsigned int fn);
/* Its runtime: "CUDA", "HIP", "OpenCL" or "Level Zero"; "?" when unknown. */
const char *event__gpu_runtime(unsigned int fn);
/* The name of a GPU loader's result in its runtime's terms (CUDA_ERROR_INVALID_IMAGE,
 * hipErrorInvalidDevice, CL_BUILD_PROGRAM_FAILURE, ZE_RESULT_ERROR_UNINITIALIZED); NULL when
 * unknown. */
const char *event__gpu_result(unsigned int fn, int64_t result);

/* Text styles: watch prints the call as made; the TUI names what a dlopen resolved to. */
#define EVENT_TEXT_RESOLVED 1u

/* The one-line text of @ev (without time, pid/tid and comm). */
void event__text(const struct event *ev, unsigned int style, char *buf, size_t len);
/* Names where raw values were printed: "SIGSEGV", "signal 77". Returns @buf. */
const char *event__signal_name(int signo, char *buf, size_t len);
/* A wait status: "exit, status 1" or "exit, killed by SIGSEGV (core dumped)". */
void event__wait_status(unsigned long long status, char *buf, size_t len);
/* dlopen's mode: "RTLD_NOW|RTLD_GLOBAL" (an unknown bit as hex). */
void event__dlopen_flags(unsigned long long flags, char *buf, size_t len);
/* A dlsym handle: "RTLD_NEXT", "RTLD_DEFAULT" or its hex address. */
void event__dl_handle(unsigned long long handle, char *buf, size_t len);
/* The object @ev concerns (a path), for the TUI's library filter; NULL when none. */
const char *event__object(const struct event *ev);

/* Its trace record (docs/trace-format.md); NULL when out of memory. */
json_t *event__to_json(const struct event *ev);
/*
 * An event from its trace record: 0, or -EINVAL with a one-line reason in @why for a record
 * that is not an event or has a field of the wrong type. event__clear() it after.
 */
int event__from_json(const json_t *rec, struct event *ev, char *why, size_t whylen);

/* The stack's "stack", "stack_pc" and "stack_end" fields into @rec. */
void event_stack__to_json(const struct event_stack *s, json_t *rec);
/* Append a frame; -ENOMEM. */
int event_stack__push(struct event_stack *s, const char *frame, uint64_t pc);
void event_stack__clear(struct event_stack *s);
/* Free what @ev owns (its stacks). */
void event__clear(struct event *ev);

#endif
