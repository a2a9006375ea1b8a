// SPDX-License-Identifier: GPL-2.0
/* The typed event: raw BPF records decoded, every kind round-tripped through its trace record. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "event.h"
#include "tap.h"

/* One event of each kind, with every field the trace carries set. */
static size_t sample_events(struct event *ev, size_t cap)
{
	size_t n = 0;
	struct event base = { .t = 123456789, .pid = 42, .tid = 43, .comm = "app", .in_dlopen = 1 };

#define ADD(...)                      \
	do {                          \
		if (n < cap) {        \
			ev[n] = base; \
			__VA_ARGS__;  \
			n++;          \
		}                     \
	} while (0)
	ADD(ev[n].kind = EVENT_DLOPEN, strcpy(ev[n].u.dlopen.path, "libm.so.6"),
	    strcpy(ev[n].u.dlopen.file, "/lib/x86_64-linux-gnu/libm.so.6"),
	    ev[n].u.dlopen.flags = 2, ev[n].u.dlopen.handle = 0x55550000,
	    ev[n].u.dlopen.duration_ns = 1234567);
	ADD(ev[n].kind = EVENT_DLOPEN, ev[n].u.dlopen.path_null = true,
	    ev[n].u.dlopen.handle = 0x7f0000001000);
	ADD(ev[n].kind = EVENT_DLCLOSE, ev[n].u.dlclose.handle = 0x5555,
	    ev[n].u.dlclose.result = -1);
	ADD(ev[n].kind = EVENT_DLSYM, strcpy(ev[n].u.dlsym.symbol, "omp_get_max_threads"),
	    ev[n].u.dlsym.handle = 0x5555, ev[n].u.dlsym.address = 0x7f0012345678);
	ADD(ev[n].kind = EVENT_OMP_FORK, ev[n].u.omp_fork.entry = 4, ev[n].u.omp_fork.regions = 7);
	ADD(ev[n].kind = EVENT_BLAS_THREAD);
	ADD(ev[n].kind = EVENT_GPU_LOAD, ev[n].u.gpu_load.function = CUDA_LIBRARY_LOAD_FILE,
	    strcpy(ev[n].u.gpu_load.file, "/opt/k.cubin"), ev[n].u.gpu_load.image_size = 4096,
	    ev[n].u.gpu_load.result = 200);
	ADD(ev[n].kind = EVENT_GPU_LOAD, ev[n].u.gpu_load.function = CL_BUILD_PROGRAM,
	    ev[n].u.gpu_load.program = 0x5000, ev[n].u.gpu_load.count = 1,
	    strcpy(ev[n].u.gpu_load.options, "-cl-fast-relaxed-math"),
	    ev[n].u.gpu_load.result = -11, ev[n].u.gpu_load.duration_ns = 812345678);
	ADD(ev[n].kind = EVENT_GPU_LOAD, ev[n].u.gpu_load.function = CL_CREATE_PROGRAM_WITH_SOURCE,
	    ev[n].u.gpu_load.program = 0x5000, ev[n].u.gpu_load.count = 2,
	    ev[n].u.gpu_load.image_size = 85, ev[n].u.gpu_load.no_result = true,
	    ev[n].u.gpu_load.duration_ns = 31000);
	ADD(ev[n].kind = EVENT_GPU_LOAD, ev[n].u.gpu_load.function = ZE_MODULE_CREATE,
	    strcpy(ev[n].u.gpu_load.options, "-ze-opt-level=2"), ev[n].u.gpu_load.image_size = 20,
	    ev[n].u.gpu_load.image = 0x1000, ev[n].u.gpu_load.result = 0x78000001,
	    ev[n].u.gpu_load.duration_ns = 7000);
	ADD(ev[n].kind = EVENT_EXEC, strcpy(ev[n].u.exec.file, "/usr/bin/python3"));
	ADD(ev[n].kind = EVENT_FORK, ev[n].u.fork.child = 44, ev[n].u.fork.thread = true);
	ADD(ev[n].kind = EVENT_EXIT, ev[n].u.exit.wait_status = 0x100);
	ADD(ev[n].kind = EVENT_SIGNAL, ev[n].u.signal.signo = 11, ev[n].u.signal.address = 16,
	    strcpy(ev[n].u.signal.where, "0x10"), strcpy(ev[n].u.signal.at, "main+0x77 (app)"));
	ADD(ev[n].kind = EVENT_FUTEX_WAIT, ev[n].u.futex.what = EVENT_FUTEX_ENDED,
	    ev[n].u.futex.futex = 0x1000, ev[n].u.futex.duration_ns = 20000000);
	ADD(ev[n].kind = EVENT_FUTEX_WAIT, ev[n].u.futex.what = EVENT_FUTEX_BEGINS,
	    ev[n].u.futex.futex = 0x1000);
	ADD(ev[n].kind = EVENT_FUTEX_WAIT, ev[n].u.futex.what = EVENT_FUTEX_BLOCKED_DLOPEN,
	    ev[n].u.futex.futex = 0x2000, ev[n].u.futex.duration_ns = 100000000,
	    strcpy(ev[n].u.futex.call, "libhang.so"));
	ADD(ev[n].kind = EVENT_FUTEX_WAIT, ev[n].u.futex.what = EVENT_FUTEX_BLOCKED_DLSYM,
	    ev[n].u.futex.futex = 0x3000, ev[n].u.futex.duration_ns = 100000000,
	    strcpy(ev[n].u.futex.call, "printf"));
#undef ADD
	return n;
}

static bool same_stack(const struct event_stack *a, const struct event_stack *b)
{
	if (a->n != b->n || !a->end != !b->end || (a->end && strcmp(a->end, b->end)))
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->frames[i], b->frames[i]) || a->pcs[i] != b->pcs[i])
			return false;
	return true;
}

static void test_round_trip(void)
{
	struct event ev[32];
	size_t n = sample_events(ev, 32);
	bool kinds[EVENT__COUNT] = { false };

	for (size_t i = 0; i < n; i++) {
		struct event back;
		char why[256] = "", name[1200], t1[600], t2[600];
		json_t *rec;
		int err;

		/* The dlopen carries a stack, as it does live. */
		if (i == 0) {
			ev[i].has_stack = true;
			event_stack__push(&ev[i].stack, "dlopen+0x0 (libc.so.6)", 0x7f0000000010);
			event_stack__push(&ev[i].stack, "main+0x43 (app)", 0x401043);
			ev[i].stack.end = strdup("the stack goes on above the copy");
		}
		rec = event__to_json(&ev[i]);
		err = event__from_json(rec, &back, why, sizeof(why));
		kinds[ev[i].kind] = true;
		event__text(&ev[i], 0, t1, sizeof(t1));
		snprintf(name, sizeof(name), "%s (%s) comes back from its record%s%s",
			 event_kind__id(ev[i].kind), t1, err ? ": " : "", why);
		/* Equal field by field: the union compared whole, both zeroed before filling. */
		CHECK(rec && !err && back.kind == ev[i].kind && back.t == ev[i].t &&
			      back.pid == ev[i].pid && back.tid == ev[i].tid &&
			      !strcmp(back.comm, ev[i].comm) && back.in_dlopen == ev[i].in_dlopen &&
			      back.has_stack == ev[i].has_stack &&
			      same_stack(&back.stack, &ev[i].stack) &&
			      !memcmp(&back.u, &ev[i].u, sizeof(back.u)),
		      name);
		event__text(&back, 0, t2, sizeof(t2));
		snprintf(name, sizeof(name), "its line is the same after the round trip: '%s'", t2);
		CHECK(!err && !strcmp(t1, t2), name);
		json_decref(rec);
		event__clear(&back);
		event__clear(&ev[i]);
	}
	for (int k = 1; k < EVENT__COUNT; k++) {
		char name[64];

		snprintf(name, sizeof(name), "kind %s is covered", event_kind__id(k));
		CHECK(kinds[k], name);
	}
}

/* A record as watch wrote it, byte for byte, from the same event. */
static void test_record_bytes(void)
{
	struct event ev = { .kind = EVENT_DLOPEN,
			    .t = 5,
			    .pid = 1,
			    .tid = 2,
			    .comm = "c",
			    .u.dlopen = { .path_null = true, .handle = 9, .duration_ns = 3 } };
	json_t *rec = event__to_json(&ev);
	char *s = rec ? json_dumps(rec, JSON_COMPACT) : NULL;

	CHECK(s && !strcmp(s, "{\"type\":\"dlopen\",\"t\":5,\"pid\":1,\"tid\":2,\"comm\":\"c\","
			      "\"in_dlopen\":0,\"path\":null,\"file\":\"\",\"flags\":0,"
			      "\"flags_names\":\"0\",\"handle\":9,\"duration_ns\":3}"),
	      "dlopen(NULL)'s record has its fields in the order of docs/trace-format.md");
	free(s);
	json_decref(rec);
}

static void test_rejected(void)
{
	static const struct {
		const char *rec, *reason;
	} bad[] = {
		{ "[1,2]", "not a JSON object" },
		{ "{\"t\":1,\"pid\":1}", "without a \"type\"" },
		{ "{\"type\":\"teleport\",\"t\":1,\"pid\":1}", "unknown type \"teleport\"" },
		{ "{\"type\":\"exec\",\"pid\":1,\"file\":\"/bin/x\"}", "without \"t\"" },
		{ "{\"type\":\"dlsym\",\"t\":1,\"pid\":\"1\"}", "\"pid\" is not an integer" },
		{ "{\"type\":\"dlopen\",\"t\":1,\"pid\":1,\"path\":7}",
		  "\"path\" is not a string or null" },
		{ "{\"type\":\"fork\",\"t\":1,\"pid\":1,\"child\":2,\"thread\":1}",
		  "\"thread\" is not a boolean" },
		{ "{\"type\":\"futex_wait\",\"t\":1,\"pid\":1,\"blocked_in\":\"dlclose\"}",
		  "neither dlopen nor dlsym" },
		{ "{\"type\":\"signal\",\"t\":1,\"pid\":1,\"stack\":[\"f\",3]}",
		  "stack frame 1 is not a string" },
		{ "{\"type\":\"dlopen\",\"t\":1,\"pid\":1,\"python\":[]}",
		  "\"python\" is not an object with \"frames\"" },
		{ "{\"type\":\"dlopen\",\"t\":1,\"pid\":1,\"python\":{\"frames\":[{\"function\":"
		  "\"f\",\"file\":\"a.py\"}]}}",
		  "has a frame without function, file and line" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *rec = json_loads(bad[i].rec, 0, NULL);
		struct event ev;
		char why[256] = "", name[512];
		int err = event__from_json(rec, &ev, why, sizeof(why));

		snprintf(name, sizeof(name), "%s is rejected: %s", bad[i].rec, why);
		CHECK(rec && err == -EINVAL && strstr(why, bad[i].reason), name);
		json_decref(rec);
	}
}

/* Raw BPF records: what arg0/arg1/ret mean per type, decoded once. */
static void test_decode_raw(void)
{
	struct dlw_event raw = { .ts_ns = 7,
				 .pid = 5,
				 .tid = 6,
				 .type = DLW_DLOPEN,
				 .arg0 = 0x102,
				 .arg1 = 3,
				 .ret = 0x1000,
				 .duration_ns = 2000000,
				 .comm = "py" };
	struct event ev;
	char why[128], line[512];

	strcpy(raw.str, "libfoo.so");
	strcpy(raw.path, "/opt/libfoo.so");
	CHECK(!event__decode(&ev, &raw, sizeof(raw), why, sizeof(why)) && ev.kind == EVENT_DLOPEN &&
		      !strcmp(ev.u.dlopen.path, "libfoo.so") &&
		      !strcmp(ev.u.dlopen.file, "/opt/libfoo.so") && ev.u.dlopen.flags == 0x102 &&
		      ev.u.dlopen.lmid == 3 && ev.u.dlopen.handle == 0x1000,
	      "a raw dlmopen: argument, file, flags, namespace and handle");
	event__text(&ev, 0, line, sizeof(line));
	CHECK(!strcmp(line, "dlmopen(\"libfoo.so\", RTLD_NOW|RTLD_GLOBAL) = 0x1000 (2.000 ms)"),
	      "watch's line names dlmopen");
	event__text(&ev, EVENT_TEXT_RESOLVED, line, sizeof(line));
	CHECK(!strcmp(line, "dlmopen(\"libfoo.so\") = /opt/libfoo.so (2.000 ms)"),
	      "the TUI's line names the file");
	raw = (struct dlw_event){ .type = DLW_FUTEX_WAIT,
				  .pid = 5,
				  .tid = 5,
				  .arg0 = 0x10,
				  .arg1 = DLW_FUTEX_BEGINS_IN_DLOPEN };
	strcpy(raw.str, "printf");
	CHECK(!event__decode(&ev, &raw, offsetof(struct dlw_event, path), why, sizeof(why)) &&
		      ev.u.futex.what == EVENT_FUTEX_BEGINS && ev.u.futex.futex == 0x10 &&
		      !ev.u.futex.call[0],
	      "a short raw futex record: a wait that begins inside dlopen, no call named (a "
	      "thread blocked in one is the collector's event, never a kernel record)");
	raw.arg1 = 3;
	CHECK(!event__decode(&ev, &raw, offsetof(struct dlw_event, path), why, sizeof(why)) &&
		      ev.u.futex.what == EVENT_FUTEX_ENDED && !ev.u.futex.call[0],
	      "the kernel sends no futex kind above DLW_FUTEX_BEGINS_IN_DLOPEN: an ended wait");
	raw.type = 99;
	CHECK(event__decode(&ev, &raw, sizeof(raw), why, sizeof(why)) == -EINVAL &&
		      strstr(why, "unknown type 99"),
	      "a raw record of unknown type is refused with a reason");
	CHECK(event__decode(&ev, &raw, 8, why, sizeof(why)) == -EINVAL && strstr(why, "8 bytes"),
	      "a truncated raw record is refused with a reason");
}

/* GPU calls from raw records: the function and count in arg0, results in their runtime's terms. */
static void test_decode_gpu(void)
{
	static const struct {
		unsigned long long arg0, arg1, arg2;
		long long ret;
		const char *str, *line;
	} cases[] = {
		{ dlw_gpu_arg0(CL_CREATE_PROGRAM_WITH_SOURCE, 1), 85, 0x5000, 0, NULL,
		  "clCreateProgramWithSource(1 string, 85 bytes) = program 0x5000, errcode 0 "
		  "(CL_SUCCESS) (0.031 ms)" },
		{ dlw_gpu_arg0(CL_CREATE_PROGRAM_WITH_BINARY, 2) | DLW_GPU_NO_RESULT, 4096, 0x6000,
		  0, NULL,
		  "clCreateProgramWithBinary(2 devices, 4096 bytes) = program 0x6000 (0.031 ms)" },
		{ dlw_gpu_arg0(CL_BUILD_PROGRAM, 0), 0, 0x5000, -11, "-Werror",
		  "clBuildProgram(program 0x5000, all devices, \"-Werror\") = -11 "
		  "(CL_BUILD_PROGRAM_FAILURE) (0.031 ms)" },
		{ dlw_gpu_arg0(CL_LINK_PROGRAM, 3), 0, 0, -17, "",
		  "clLinkProgram(3 programs, \"\") = program 0x0, errcode -17 "
		  "(CL_LINK_PROGRAM_FAILURE) (0.031 ms)" },
		{ dlw_gpu_arg0(ZE_MODULE_CREATE, 1), 20, 0x1000, 0x78000001, "-ze-opt-level=2",
		  "zeModuleCreate(native, 20 bytes, \"-ze-opt-level=2\") = 0x78000001 "
		  "(ZE_RESULT_ERROR_UNINITIALIZED) (0.031 ms)" },
		{ HIP_MODULE_LOAD_DATA, 4112, 0x1000, 101, NULL,
		  "hipModuleLoadData(image 0x1000, size 4112) = 101 (hipErrorInvalidDevice) "
		  "(0.031 ms)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dlw_event raw = { .type = DLW_GPU_LOAD,
					 .pid = 5,
					 .tid = 5,
					 .arg0 = cases[i].arg0,
					 .arg1 = cases[i].arg1,
					 .arg2 = cases[i].arg2,
					 .ret = cases[i].ret,
					 .duration_ns = 31000,
					 .str_state = cases[i].str ? DLW_STR_READ : DLW_STR_NULL };
		struct event ev;
		char why[128], line[600], name[900];
		int err;

		if (cases[i].str)
			strcpy(raw.str, cases[i].str);
		err = event__decode(&ev, &raw, sizeof(raw), why, sizeof(why));
		event__text(&ev, 0, line, sizeof(line));
		snprintf(name, sizeof(name), "raw GPU call %zu reads '%s' (got '%s')", i,
			 cases[i].line, line);
		CHECK(!err && !strcmp(line, cases[i].line), name);
	}
	CHECK(!strcmp(event__gpu_runtime(CL_BUILD_PROGRAM), "OpenCL") &&
		      !strcmp(event__gpu_runtime(ZE_MODULE_CREATE), "Level Zero") &&
		      !strcmp(event__gpu_runtime(HIP_MODULE_LOAD), "HIP") &&
		      !strcmp(event__gpu_runtime(CUDA_MODULE_LOAD), "CUDA") &&
		      !strcmp(event__gpu_runtime(99), "?"),
	      "each GPU function is its runtime's, none labelled CUDA but CUDA's");
	CHECK(!event__gpu_result(CL_BUILD_PROGRAM, -9999) &&
		      !strcmp(event__gpu_result(CL_COMPILE_PROGRAM, -43),
			      "CL_INVALID_BUILD_OPTIONS") &&
		      !strcmp(event__gpu_result(ZE_MODULE_CREATE, 0x70000004),
			      "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"),
	      "OpenCL and Level Zero results by name, an unknown one unnamed");
}

/* A dlopen's Python stack: through its trace record and back, and on its text line. */
static void test_python_stack(void)
{
	struct event ev = { .kind = EVENT_DLOPEN, .t = 5, .pid = 7, .tid = 7, .has_python = true };
	struct event back;
	char why[256] = "", line[1024];
	json_t *rec;
	int err;

	strcpy(ev.u.dlopen.path, "libomp.so.5");
	ev.py.site = -1;
	CHECK(!py_import__push(&ev.py, "CDLL.__init__", "/usr/lib/python3.11/ctypes/__init__.py",
			       376) &&
		      !py_import__push(&ev.py, "<module>", "/srv/omplib.py", -1) &&
		      !py_import__push(&ev.py, "_find_and_load", "<frozen importlib._bootstrap>",
				       1178) &&
		      !py_import__push(&ev.py, "<module>", "/srv/train.py", 3),
	      "frames pushed");
	ev.py.module = strdup("omplib");
	ev.py.site = 3;
	ev.py.error = strdup("1 frame without a line");
	rec = event__to_json(&ev);
	err = event__from_json(rec, &back, why, sizeof(why));
	CHECK(rec && !err && back.has_python && back.py.n == 4 && back.py.site == 3 &&
		      !strcmp(back.py.module, "omplib") && back.py.f[1].line == -1 &&
		      !strcmp(back.py.f[0].function, "CDLL.__init__") &&
		      !strcmp(back.py.error, "1 frame without a line"),
	      "a dlopen's Python stack round-trips through its trace record");
	event__text(&back, 0, line, sizeof(line));
	CHECK(strstr(line, " from `import omplib` at train.py:3") != NULL, line);
	json_decref(rec);
	event__clear(&back);
	/* A record of dlscope-trace/2 has no "python": none, and no text about one. */
	rec = json_loads("{\"type\":\"dlopen\",\"t\":1,\"pid\":1,\"path\":\"libm.so.6\"}", 0, NULL);
	err = event__from_json(rec, &back, why, sizeof(why));
	event__text(&back, 0, line, sizeof(line));
	CHECK(!err && !back.has_python && !strstr(line, "from"),
	      "a dlopen record without \"python\" reads as before");
	json_decref(rec);
	event__clear(&back);
	event__clear(&ev);
}

/* Names, not raw values: signals, wait statuses, dlopen modes, dlsym's special handles. */
static void test_names(void)
{
	char buf[128];

	CHECK(!strcmp(event__signal_name(11, buf, sizeof(buf)), "SIGSEGV"), buf);
	CHECK(!strcmp(event__signal_name(SIGRTMIN + 2, buf, sizeof(buf)), "SIGRTMIN+2"), buf);
	event__wait_status(0x100, buf, sizeof(buf));
	CHECK(!strcmp(buf, "exit, status 1"), buf);
	event__wait_status(0x8b, buf, sizeof(buf));
	CHECK(!strcmp(buf, "exit, killed by SIGSEGV (core dumped)"), buf);
	event__dlopen_flags(0x101, buf, sizeof(buf));
	CHECK(!strcmp(buf, "RTLD_LAZY|RTLD_GLOBAL"), buf);
	event__dlopen_flags(0x1000a, buf, sizeof(buf));
	CHECK(!strcmp(buf, "RTLD_NOW|RTLD_DEEPBIND|0x10000"), buf);
	event__dl_handle(0xffffffffffffffffULL, buf, sizeof(buf));
	CHECK(!strcmp(buf, "RTLD_NEXT"), buf);
	event__dl_handle(0, buf, sizeof(buf));
	CHECK(!strcmp(buf, "RTLD_DEFAULT"), buf);
	event__dl_handle(0x1000, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0x1000"), buf);
}

int main(void)
{
	test_names();
	test_round_trip();
	test_python_stack();
	test_record_bytes();
	test_decode_gpu();
	test_rejected();
	test_decode_raw();
	return tap_done();
}
