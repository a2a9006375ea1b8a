// SPDX-License-Identifier: GPL-2.0
/*
 * frame_text on hand-built frames: an inline chain (one pc, two names), a recursion (one pc,
 * each frame its address), an unnamed frame placed by its object's offset, one in no object,
 * file:line; in the two styles, full (gdb's line, every view's) and short (watch's events).
 * What a line shows follows the frame's data alone: a record read back from
 * stack_frame__to_json prints as the live frame, a merged stack's record (no pc, no offset)
 * without them.
 */
#include <stdlib.h>
#include <string.h>

#include "frame_text.h"
#include "tap.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define GOMP "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"

static const struct stack_frame frames[] = {
	{ .pc = 0x7fb65436912b,
	  .activation = true,
	  .inlined = true,
	  .function = "futex_wait",
	  .module = LIBC,
	  .file = "../sysdeps/nptl/futex-internal.h",
	  .line = 146 },
	{ .pc = 0x7fb65436912b,
	  .function = "__GI___lll_lock_wait",
	  .offset = 0x2b,
	  .module = LIBC,
	  .file = "./nptl/lowlevellock.c",
	  .line = 49 },
	{ .pc = 0x55a688039253,
	  .function = "recurse",
	  .offset = 0x1d,
	  .module = "/tmp/app",
	  .file = "app.c",
	  .line = 7 },
	{ .pc = 0x55a688039253,
	  .function = "recurse",
	  .offset = 0x1d,
	  .module = "/tmp/app",
	  .file = "app.c",
	  .line = 7 },
	{ .pc = 0x7f8d92b4f823,
	  .module = GOMP,
	  .module_offset = 0x1f823,
	  .has_module_offset = true },
	{ .pc = 0x7f0000001000 },
	{ .pc = 0x55a6880391d1,
	  .function = "main",
	  .offset = 0x7d,
	  .module = "/tmp/app",
	  .file = "app.c",
	  .line = 28 },
};
#define N_FRAMES (sizeof(frames) / sizeof(frames[0]))

/*
 * A merged stack's record of @f (stackmerge.c): function, module, file and line only.
 */
static json_t *merged_record(const struct stack_frame *f)
{
	json_t *j = stack_frame__to_json(f);

	json_object_del(j, "pc");
	json_object_del(j, "offset");
	json_object_del(j, "module_offset");
	json_object_del(j, "inlined");
	return j;
}

enum source { LIVE, RECORD, MERGED };

/* Every frame in @style, each followed by a newline, live or read back from a record. */
static char *stack(enum frame_style style, enum source src)
{
	struct stack_frame v[N_FRAMES];
	json_t *j[N_FRAMES] = { 0 };
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	for (size_t k = 0; k < N_FRAMES; k++) {
		v[k] = frames[k];
		if (src == RECORD)
			j[k] = stack_frame__to_json(&frames[k]);
		else if (src == MERGED)
			j[k] = merged_record(&frames[k]);
		if (j[k])
			frame_text__from_json(j[k], &v[k]);
		frame_text__fprint(out, &v[k], k ? &v[k - 1] : NULL, k, style);
		fputc('\n', out);
	}
	fclose(out);
	for (size_t k = 0; k < N_FRAMES; k++)
		json_decref(j[k]);
	return s;
}

static void check_text(const char *got, const char *want, const char *name)
{
	CHECK(!strcmp(got, want), name);
	if (strcmp(got, want))
		printf("# got:\n%s# want:\n%s", got, want);
}

#define FULL_LIVE                                                                  \
	"#0   0x00007fb65436912b in futex_wait from " LIBC                         \
	" at ../sysdeps/nptl/futex-internal.h:146\n"                               \
	"#1                         __GI___lll_lock_wait+0x2b from " LIBC          \
	" at ./nptl/lowlevellock.c:49\n"                                           \
	"#2   0x000055a688039253 in recurse+0x1d from /tmp/app at app.c:7\n"       \
	"#3   0x000055a688039253 in recurse+0x1d from /tmp/app at app.c:7\n"       \
	"#4   0x00007f8d92b4f823 in ?? (libgomp.so.1.0.0+0x1f823) from " GOMP "\n" \
	"#5   0x00007f0000001000 in ??\n"                                          \
	"#6   0x000055a6880391d1 in main+0x7d from /tmp/app at app.c:28\n"

static void test_full(void)
{
	char *s = stack(FRAME_FULL, LIVE);
	char buf[16];

	check_text(s, FULL_LIVE,
		   "full: an inline chain shows its pc once, a recursion on every frame");
	free(s);
	s = stack(FRAME_FULL, RECORD);
	check_text(s, FULL_LIVE, "full: a record read back prints as the live frame");
	free(s);
	s = stack(FRAME_FULL, MERGED);
	check_text(s,
		   "#0   futex_wait from " LIBC " at ../sysdeps/nptl/futex-internal.h:146\n"
		   "#1   __GI___lll_lock_wait from " LIBC " at ./nptl/lowlevellock.c:49\n"
		   "#2   recurse from /tmp/app at app.c:7\n"
		   "#3   recurse from /tmp/app at app.c:7\n"
		   "#4   ?? from " GOMP "\n"
		   "#5   ??\n"
		   "#6   main from /tmp/app at app.c:28\n",
		   "full: a merged record, no pc nor offset, shows neither");
	free(s);
	frame_text__snprint(buf, sizeof(buf), &frames[6], NULL, 6, FRAME_FULL);
	CHECK(!strcmp(buf, "#6   0x000055a6"), "full into a buffer is cut to fit, terminated");
}

/* One frame in @style, alone (no frame before it). */
static void check_one(const struct stack_frame *f, enum frame_style style, const char *want,
		      const char *name)
{
	char buf[512];

	frame_text__snprint(buf, sizeof(buf), f, NULL, 7, style);
	CHECK(!strcmp(buf, want), name);
	if (strcmp(buf, want))
		printf("# got \"%s\", want \"%s\"\n", buf, want);
}

static void test_rules(void)
{
	struct stack_frame f = frames[6];
	char buf[512];

	f.line = 0;
	check_one(&f, FRAME_FULL, "#7   0x000055a6880391d1 in main+0x7d from /tmp/app",
		  "full: a file without a line is no place");
	f = frames[6];
	f.offset = 0;
	f.file = NULL;
	check_one(&f, FRAME_FULL, "#7   0x000055a6880391d1 in main from /tmp/app",
		  "full: no offset, no +0x; no file, no at");
	f = frames[4];
	f.pc = 0;
	f.scanned = true;
	check_one(&f, FRAME_FULL,
		  "#7   ?? (libgomp.so.1.0.0+0x1f823) from " GOMP " [found by stack scan]",
		  "full: unnamed, no pc, placed by its object; found by scanning");
	f = frames[1];
	f.pc = 0;
	frame_text__snprint(buf, sizeof(buf), &f, &(struct stack_frame){ .inlined = true }, 1,
			    FRAME_FULL);
	CHECK(!strcmp(buf,
		      "#1   __GI___lll_lock_wait+0x2b from " LIBC " at ./nptl/lowlevellock.c:49"),
	      "full: no pc is no blank column, even after an inline frame");
	f = frames[6];
	f.offset = 0;
	check_one(&f, FRAME_SHORT, "main (app)", "short: no offset, no +0x");
	f = frames[4];
	f.pc = 0;
	check_one(&f, FRAME_SHORT, "?? (libgomp.so.1.0.0)", "short: unnamed without a pc is ??");
	check_one(&(struct stack_frame){ 0 }, FRAME_SHORT, "??", "short: nothing known is ??");
	check_one(&(struct stack_frame){ 0 }, FRAME_FULL, "#7   ??", "full: nothing known is ??");
}

static void test_short(void)
{
	static const char *const want[N_FRAMES] = {
		"futex_wait (libc.so.6, inlined)",
		"__GI___lll_lock_wait+0x2b (libc.so.6)",
		"recurse+0x1d (app)",
		"recurse+0x1d (app)",
		"0x7f8d92b4f823 (libgomp.so.1.0.0)",
		"0x7f0000001000",
		"main+0x7d (app)",
	};
	char buf[128], small[8];
	bool same = true;

	for (size_t k = 0; k < N_FRAMES; k++) {
		frame_text__short(&frames[k], buf, sizeof(buf));
		if (strcmp(buf, want[k])) {
			printf("# frame %zu: got \"%s\", want \"%s\"\n", k, buf, want[k]);
			same = false;
		}
		frame_text__snprint(small, sizeof(small), &frames[k], NULL, k, FRAME_SHORT);
		same = same && !strncmp(small, want[k], sizeof(small) - 1) &&
		       strlen(small) < sizeof(small);
	}
	CHECK(same, "short: name+offset (object), inlined, unnamed by pc, no object");
}

static void test_from_json(void)
{
	json_t *j = json_pack("{s:s, s:s, s:n, s:s, s:s, s:i}", "pc", "0x7f0000001000", "function",
			      "", "module", "module_offset", "0x10", "file", "x.c", "line", 3);
	struct stack_frame v;

	frame_text__from_json(j, &v);
	CHECK(v.pc == 0x7f0000001000 && !v.function && !v.module && v.has_module_offset &&
		      v.module_offset == 0x10 && !strcmp(v.file, "x.c") && v.line == 3 &&
		      !v.inlined && !v.offset,
	      "from_json: \"\" and null are unknown; hex strings read back");
	json_decref(j);
}

int main(void)
{
	test_full();
	test_rules();
	test_short();
	test_from_json();
	return tap_done();
}
