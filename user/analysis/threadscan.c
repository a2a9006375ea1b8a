// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libgraph.h"
#include "procfs.h"
#include "procmaps.h"
#include "target.h"
#include "threadscan.h"

#define STACK_SCAN_MAX (512 * 1024)

struct code_range {
	uint64_t start, end;
	unsigned int obj;
};

struct code_map {
	struct code_range *r;
	size_t n;
};

/* Executable file mappings, each tied to the object of that inode with the nearest lower base. */
static int build_code_map(const struct procmaps *maps, const struct libgraph *g,
			  struct code_map *cm)
{
	cm->r = calloc(maps->n ? maps->n : 1, sizeof(*cm->r));
	cm->n = 0;
	if (!cm->r)
		return -ENOMEM;
	for (size_t i = 0; i < maps->n; i++) {
		const struct mapping *mp = &maps->maps[i];
		const struct lg_object *best = NULL;

		if (mp->perms[2] != 'x')
			continue;
		for (size_t k = 0; k < g->n; k++) {
			const struct lg_object *o = g->objs[k];

			if (o->gone)
				continue;
			if (mapping__is_file(mp) ? o->inode != mp->inode :
						   !(mp->path && !strcmp(mp->path, "[vdso]") &&
						     o->origin == LG_VDSO))
				continue;
			if (o->base <= mp->start && (!best || o->base > best->base))
				best = o;
		}
		if (best)
			cm->r[cm->n++] = (struct code_range){ mp->start, mp->end, best->id };
	}
	return 0;
}

static int code_lookup(const struct code_map *cm, uint64_t addr)
{
	size_t lo = 0, hi = cm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < cm->r[mid].start)
			hi = mid;
		else if (addr >= cm->r[mid].end)
			lo = mid + 1;
		else
			return (int)cm->r[mid].obj;
	}
	return -1;
}

/* True when the bytes before @addr encode a call: then @addr is a return address. */
static bool after_call(const struct target *t, uint64_t addr)
{
	unsigned char b[8];

	if (addr < 8 || target__read(t, addr - 8, b, sizeof(b)))
		return false;
#define AT(n) b[8 - (n)]
	if (AT(5) == 0xe8)				      /* call rel32 */
		return true;
	if (AT(2) == 0xff && (AT(1) & 0xf8) == 0xd0)	      /* call *%reg */
		return true;
	if (AT(3) == 0xff && (AT(2) & 0xf8) == 0x50)	      /* call *disp8(%reg) */
		return true;
	if (AT(3) == 0xff && AT(2) == 0x14)		      /* call *(%reg,%reg) via SIB */
		return true;
	if (AT(4) == 0xff && AT(3) == 0x54)		      /* call *disp8 via SIB */
		return true;
	if (AT(6) == 0xff && ((AT(5) & 0xf8) == 0x90 || AT(5) == 0x15)) /* disp32, rip */
		return true;
	if (AT(7) == 0xff && AT(6) == 0x94)		      /* call *disp32 via SIB */
		return true;
#undef AT
	return false;
}

static int read_syscall(pid_t pid, struct thread_info *ti)
{
	char path[96], buf[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, ti->tid);
	n = proc__read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	ti->syscall = -2;
	if (!strncmp(buf, "running", 7))
		return 0;
	if (sscanf(buf, "%ld", &ti->syscall) != 1)
		return -EPROTO;
	if (ti->syscall == -1) {
		sscanf(buf, "%*d %" SCNx64 " %" SCNx64, &ti->sp, &ti->pc);
		return 0;
	}
	sscanf(buf,
	       "%*d %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
	       " %" SCNx64 " %" SCNx64,
	       &ti->args[0], &ti->args[1], &ti->args[2], &ti->args[3], &ti->args[4], &ti->args[5],
	       &ti->sp, &ti->pc);
	return 0;
}

static int scan_stack(const struct target *t, const struct procmaps *maps,
		      const struct code_map *cm, struct thread_info *ti)
{
	const struct mapping *stack = procmaps__find(maps, ti->sp);
	uint64_t end, len, *words;
	size_t n = 0, cap = 0;

	if (!ti->sp || !stack)
		return 0;
	end = stack->end;
	len = end - (ti->sp & ~7ULL);
	if (len > STACK_SCAN_MAX)
		len = STACK_SCAN_MAX;
	words = malloc(len);
	if (!words)
		return -ENOMEM;
	if (target__read(t, ti->sp & ~7ULL, words, len)) {
		free(words);
		return 0;
	}
	/* Walk from the top of the stack down, so frames come outermost first. */
	for (size_t i = len / 8; i-- > 0;) {
		int obj = code_lookup(cm, words[i]);

		if (obj < 0 || !after_call(t, words[i]))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct thread_frame *nf = realloc(ti->frames, ncap * sizeof(*nf));

			if (!nf)
				break;
			ti->frames = nf;
			cap = ncap;
		}
		ti->frames[n++] = (struct thread_frame){ words[i], (unsigned int)obj };
	}
	ti->n_frames = n;
	free(words);
	return 0;
}

int threadscan__scan(const struct target *t, const struct libgraph *g, struct threadscan **out)
{
	struct threadscan *ts = NULL;
	struct procmaps *maps = NULL;
	struct code_map cm = { 0 };
	struct dirent *de;
	char path[64];
	size_t cap = 0;
	DIR *dir;
	int err = 0;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	ts = calloc(1, sizeof(*ts));
	maps = procmaps__read(t->pid);
	if (!ts || !maps) {
		err = maps ? -ENOMEM : -ESRCH;
		goto out;
	}
	err = build_code_map(maps, g, &cm);
	if (err)
		goto out;
	while ((de = readdir(dir))) {
		struct thread_info *ti;
		pid_t tid;

		if (parse_pid(de->d_name, &tid))
			continue;
		if (ts->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct thread_info *nt = realloc(ts->t, ncap * sizeof(*nt));

			if (!nt) {
				err = -ENOMEM;
				goto out;
			}
			ts->t = nt;
			cap = ncap;
		}
		ti = &ts->t[ts->n];
		memset(ti, 0, sizeof(*ti));
		ti->tid = tid;
		ti->pc_obj = UINT32_MAX;
		/* A thread that exits between readdir and here is simply left out. */
		if (proc__read_stat(t->pid, tid, ti->comm, sizeof(ti->comm), &ti->state, NULL) ||
		    read_syscall(t->pid, ti))
			continue;
		ts->n++;
		if (ti->pc) {
			int obj = code_lookup(&cm, ti->pc);

			if (obj >= 0)
				ti->pc_obj = (unsigned int)obj;
		}
		err = scan_stack(t, maps, &cm, ti);
		if (err)
			goto out;
	}
out:
	closedir(dir);
	free(cm.r);
	procmaps__free(maps);
	if (err) {
		threadscan__free(ts);
		return err;
	}
	*out = ts;
	return 0;
}

void threadscan__free(struct threadscan *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n; i++)
		free(ts->t[i].frames);
	free(ts->t);
	free(ts);
}

bool thread_info__uses(const struct thread_info *ti, unsigned int obj)
{
	if (ti->pc_obj == obj)
		return true;
	for (size_t i = 0; i < ti->n_frames; i++)
		if (ti->frames[i].obj == obj)
			return true;
	return false;
}
