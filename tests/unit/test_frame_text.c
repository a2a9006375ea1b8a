// SPDX-License-Identifier: GPL-2.0
/*
 * frame_text on hand-built frames: an inline chain (one pc, two names), a recursion (one pc,
 * each frame its address), an unnamed frame placed by its object's offset, one in no object,
 * file:line; in gdb's style as stacks prints it, the short style of watch's events, and the
 * views that show less (report, stacks --job, the TUI), the JSON ones read back from
 * stack_frame__to_json's records.
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

/* Every frame in @fmt, each followed by a newline (the JSON views through a record). */
static char *stack(const struct frame_fmt *fmt, bool json)
{
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	for (size_t k = 0; k < N_FRAMES; k++) {
		json_t *j = json ? stack_frame__to_json(&frames[k]) : NULL;
		struct stack_frame v = frames[k];

		if (j)
			frame_text__from_json(j, &v);
		frame_text__fprint(out, &v, k ? &frames[k - 1] : NULL, k, fmt);
		fputc('\n', out);
		json_decref(j);
	}
	fclose(out);
	return s;
}

static void check_text(const char *got, const char *want, const char *name)
{
	CHECK(!strcmp(got, want), name);
	if (strcmp(got, want))
		printf("# got:\n%s# want:\n%s", got, want);
}

static void test_gdb(void)
{
	char *s = stack(&(struct frame_fmt){ .style = FRAME_GDB }, false);
	char buf[16];

	check_text(s,
		   "#0   0x00007fb65436912b in futex_wait from " LIBC
		   " at ../sysdeps/nptl/futex-internal.h:146\n"
		   "#1                         __GI___lll_lock_wait+0x2b from " LIBC
		   " at ./nptl/lowlevellock.c:49\n"
		   "#2   0x000055a688039253 in recurse+0x1d from /tmp/app at app.c:7\n"
		   "#3   0x000055a688039253 in recurse+0x1d from /tmp/app at app.c:7\n"
		   "#4   0x00007f8d92b4f823 in ?? (libgomp.so.1.0.0+0x1f823) from " GOMP "\n"
		   "#5   0x00007f0000001000 in ??\n"
		   "#6   0x000055a6880391d1 in main+0x7d from /tmp/app at app.c:28\n",
		   "gdb: an inline chain shows its pc once, a recursion on every frame");
	free(s);
	frame_text__snprint(buf, sizeof(buf), &frames[6], NULL, 6,
			    &(struct frame_fmt){ .style = FRAME_GDB, .indent = "  " });
	CHECK(!strcmp(buf, "  #6   0x000055"), "gdb into a buffer is cut to fit, terminated");
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
		frame_text__snprint(small, sizeof(small), &frames[k], NULL, k,
				    &(struct frame_fmt){ .style = FRAME_SHORT });
		same = same && !strncmp(small, want[k], sizeof(small) - 1) &&
		       strlen(small) < sizeof(small);
	}
	CHECK(same, "short: name+offset (object), inlined, unnamed by pc, no object");
}

static void test_views(void)
{
	char *s = stack(&frame_fmt_report, true);

	check_text(s,
		   "#0   futex_wait (libc.so.6) at ../sysdeps/nptl/futex-internal.h:146\n"
		   "#1   __GI___lll_lock_wait (libc.so.6) at ./nptl/lowlevellock.c:49\n"
		   "#2   recurse (app) at app.c:7\n"
		   "#3   recurse (app) at app.c:7\n"
		   "#4   libgomp.so.1.0.0+0x1f823\n"
		   "#5   0x7f0000001000 (no object)\n"
		   "#6   main (app) at app.c:28\n",
		   "report: a JSON record read back, unnamed frames by where they are");
	free(s);
	s = stack(&frame_fmt_merged, true);
	check_text(s,
		   "    #0  futex_wait at ../sysdeps/nptl/futex-internal.h:146 from libc.so.6\n"
		   "    #1  __GI___lll_lock_wait at ./nptl/lowlevellock.c:49 from libc.so.6\n"
		   "    #2  recurse at app.c:7 from app\n"
		   "    #3  recurse at app.c:7 from app\n"
		   "    #4  ?? from libgomp.so.1.0.0\n"
		   "    #5  ?? from \n"
		   "    #6  main at app.c:28 from app\n",
		   "stacks --job: names and objects, no addresses");
	free(s);
	s = stack(&frame_fmt_report_job, true);
	check_text(s,
		   "futex_wait (" LIBC ")\n__GI___lll_lock_wait (" LIBC ")\nrecurse (/tmp/app)\n"
		   "recurse (/tmp/app)\n?? (" GOMP ")\n??\nmain (/tmp/app)\n",
		   "report --job: an unnamed frame is ?? (was an empty name)");
	free(s);
	s = stack(&frame_fmt_tui, false);
	check_text(s,
		   "#0   0x00007fb65436912b futex_wait (libc.so.6) at "
		   "../sysdeps/nptl/futex-internal.h:146\n"
		   "#1   0x00007fb65436912b __GI___lll_lock_wait+0x2b (libc.so.6) at "
		   "./nptl/lowlevellock.c:49\n"
		   "#2   0x000055a688039253 recurse+0x1d (app) at app.c:7\n"
		   "#3   0x000055a688039253 recurse+0x1d (app) at app.c:7\n"
		   "#4   0x00007f8d92b4f823 ?? (libgomp.so.1.0.0)\n"
		   "#5   0x00007f0000001000 ??\n"
		   "#6   0x000055a6880391d1 main+0x7d (app) at app.c:28\n",
		   "TUI: every frame its address, the object's file name");
	free(s);
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
	test_gdb();
	test_short();
	test_views();
	test_from_json();
	return tap_done();
}
