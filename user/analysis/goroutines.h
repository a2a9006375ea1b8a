/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The goroutines of a Go program, read from its memory without a stop, as delve and Go's own
 * traceback see them: runtime.allgs, each goroutine's status and wait reason, and the frames of
 * a parked one walked from its saved registers along Go's frame pointers (every Go function on
 * amd64 keeps one). Where each field lies comes from the program's own DWARF (runtime.g,
 * runtime.gobuf, runtime.m), so no Go version is assumed; without DWARF (-ldflags=-w) they
 * are not read, and the reason says so. A running goroutine's frames are its thread's.
 */
#ifndef DLSCOPE_GOROUTINES_H
#define DLSCOPE_GOROUTINES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct target;
struct libgraph;

struct go_frame {
	uint64_t pc;
	char *function; /* NULL when unknown */
	char *file;	/* from DWARF's line table; NULL when unknown */
	int line;
	bool inlined; /* inlined into the frame after it (same pc) */
};

struct goroutine {
	int64_t id;
	uint32_t status;   /* _Grunnable 1, _Grunning 2, _Gsyscall 3, _Gwaiting 4 (no _Gscan) */
	char state[96];	   /* "sync.Mutex.Lock", "chan receive", "running", "syscall" */
	pid_t thread;	   /* the thread it runs on (its M's procid), 0 when parked */
	bool system;	   /* started by the runtime: hidden by Go's traceback too */
	const char *start; /* the function it was started with */
	struct go_frame *frames;
	size_t n_frames;
	bool truncated;
};

struct go_state {
	char version[32]; /* runtime.buildVersion: "go1.19.8" */
	struct goroutine *g;
	size_t n;
	char *error; /* why no goroutine (or not every one) could be read */
};

/*
 * The goroutines of @t, whose objects are @g. Returns 0 (@out set, its error saying what could
 * not be read), -ENOENT when it is no Go program, or -ENOMEM.
 */
int go_state__read(const struct target *t, const struct libgraph *g, struct go_state **out);
void go_state__free(struct go_state *s);

/* How many goroutines of @s are blocked, and in what, in one sentence for a verdict. */
char *go_state__summary(const struct go_state *s);
/* Go's traceback layout: "goroutine 6 [sync.Mutex.Lock]:", then each frame and its line. */
void go_state__print(const struct go_state *s, FILE *out);
json_t *go_state__to_json(const struct go_state *s);

#endif
