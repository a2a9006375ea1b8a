// SPDX-License-Identifier: GPL-2.0
/* The eBPF collector's stack samples unwound (CFI) and named, one session per process. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "arch.h"
#include "debuginfo_cache.h"
#include "procfs.h"
#include "unwind.h"
#include "unwind_impl.h"

/* Samples: one Dwfl per process, its modules reported from the caller's model. */
struct sample_unwinder {
	pid_t pid;
	unsigned int refs; /* processes that share it (sample_unwinder__share) */
	dev_t root_dev;	   /* the root its objects' paths resolve in */
	ino_t root_ino;
	Dwfl *dwfl;
	bool attached;
	struct sample_module *mods; /* as reported: name, file and bias owned here */
	size_t n_mods;
	struct pc_memo memo;
	/* The sample being unwound. */
	const struct stack_sample *s;
	const struct sample_access *acc;
	uint64_t missed; /* an address above the copy that was needed and not there */
};

/* The symbol memo is dropped when it grows past this (or the modules change). */
#define SAMPLE_MEMO_MAX 4096

static char *sample_debuginfo_path;
static const Dwfl_Callbacks sample_dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = debuginfo_cache__find,
	.debuginfo_path = &sample_debuginfo_path,
};

/*
 * Pcs of samples are named in one session for every process: each object (its name and
 * build-id) is reported there once, at an address of its own above any user address, and a
 * pc is named at its offset in it. Each process's session only unwinds (CFI); names, source
 * lines and the debug info behind them are read once, however many processes load the
 * object where. (A session per process held glibc's debug info once per process: 200 busy
 * processes, 690 MiB.) A fixed-address executable (ET_EXEC) cannot be moved: its pcs are
 * named in its process's own session.
 */
#define NAMER_BASE (1ULL << 48)
#define NAMER_ALIGN (1ULL << 20)

static struct {
	pthread_mutex_t lock;
	unsigned int users; /* live sample unwinders */
	Dwfl *dwfl;
	struct namer_object {
		char *key;     /* the name, then its build-id (or its file) */
		uint64_t bias; /* where it is reported here */
	} * o;
	size_t n, cap;
	uint64_t next;
	struct pc_memo memo;
} namer = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void namer_release(void)
{
	pthread_mutex_lock(&namer.lock);
	if (!--namer.users) {
		if (namer.dwfl)
			dwfl_end(namer.dwfl);
		namer.dwfl = NULL;
		for (size_t i = 0; i < namer.n; i++)
			free(namer.o[i].key);
		free(namer.o);
		namer.o = NULL;
		namer.n = namer.cap = 0;
		pc_memo__clear(&namer.memo);
	}
	pthread_mutex_unlock(&namer.lock);
}

/*
 * Where @mod of a process is reported in the namer: @off is added to a pc of @mod to name it
 * there. False when it cannot be (an ET_EXEC, a file that cannot be read). Under namer.lock.
 */
static bool namer_place(Dwfl_Module *mod, uint64_t *off)
{
	const unsigned char *bits;
	const char *name, *file;
	Dwarf_Addr low, high, bias;
	GElf_Addr vaddr;
	GElf_Ehdr eh;
	char *key;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t kl;

	name = dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, &file, NULL);
	if (!elf || !name || !file || !gelf_getehdr(elf, &eh) || eh.e_type != ET_DYN || high < bias)
		return false;
	kl = strlen(name) + 2 + (len > 0 ? 2 * (size_t)len : strlen(file));
	key = malloc(kl);
	if (!key)
		return false;
	if (len > 0) {
		char *p = key + sprintf(key, "%s", name) + 1;

		key[strlen(name)] = '\0';
		for (int i = 0; i < len; i++)
			p += sprintf(p, "%02x", bits[i]);
	} else {
		sprintf(key, "%s", name);
		strcpy(key + strlen(name) + 1, file);
	}
	for (size_t i = 0; i < namer.n; i++)
		if (!strcmp(namer.o[i].key, key) &&
		    !strcmp(namer.o[i].key + strlen(key) + 1, key + strlen(key) + 1)) {
			free(key);
			*off = namer.o[i].bias - bias;
			return true;
		}
	if (!namer.dwfl) {
		namer.dwfl = dwfl_begin(&sample_dwfl_callbacks);
		namer.next = NAMER_BASE;
	}
	if (!namer.dwfl || ARRAY_RESERVE(namer.o, namer.cap, namer.n + 1)) {
		free(key);
		return false;
	}
	dwfl_report_begin_add(namer.dwfl);
	if (!dwfl_report_elf(namer.dwfl, name, file, -1, namer.next, true)) {
		dwfl_report_end(namer.dwfl, NULL, NULL);
		free(key);
		return false;
	}
	dwfl_report_end(namer.dwfl, NULL, NULL);
	namer.o[namer.n++] = (struct namer_object){ key, namer.next };
	*off = namer.next - bias;
	namer.next += (high - bias + 2 * NAMER_ALIGN - 1) & ~(NAMER_ALIGN - 1);
	return true;
}

/*
 * Name the frames of @ts, unwound in @u's session: in the namer when their object can be
 * placed there, else in @u's own. Each frame may become several (inline frames).
 */
static int name_sample(struct sample_unwinder *u, struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames, cap = 0;
	int err = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	pthread_mutex_lock(&namer.lock);
	if (namer.memo.n > SAMPLE_MEMO_MAX)
		pc_memo__clear(&namer.memo);
	if (u->memo.n > SAMPLE_MEMO_MAX)
		pc_memo__clear(&u->memo);
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t lookup = stack_frame__lookup_pc(&raw[i]), off = 0;
		Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, lookup);
		bool shared = mod && namer_place(mod, &off);
		struct thread_stack one = { .frames = malloc(sizeof(*raw)), .n_frames = 1 };

		if (!one.frames) {
			err = -ENOMEM;
			break;
		}
		one.frames[0] = raw[i];
		one.frames[0].pc += off;
		err = shared ? unwind_symbolize(namer.dwfl, NULL, &namer.memo, &one) :
			       unwind_symbolize(u->dwfl, NULL, &u->memo, &one);
		if (err || ARRAY_RESERVE(ts->frames, cap, ts->n_frames + one.n_frames)) {
			unwind_free_frames(one.frames, one.n_frames);
			err = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < one.n_frames; k++) {
			one.frames[k].pc = raw[i].pc;
			ts->frames[ts->n_frames++] = one.frames[k];
		}
		free(one.frames);
	}
	pthread_mutex_unlock(&namer.lock);
	free(raw);
	return err;
}

static pid_t sample_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct sample_unwinder *u = arg;

	if (*thread_argp || !u->s)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool sample_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct sample_unwinder *u = arg;

	*thread_argp = u;
	return u->s != NULL;
}

static bool sample_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct sample_unwinder *u = arg;
	const struct stack_sample *s = u->s;
	uint64_t word;

	uint64_t page0 = s->sp & ~4095ULL;

	if (addr >= s->sp && addr - s->sp <= s->stack_len &&
	    s->stack_len - (addr - s->sp) >= sizeof(*result) &&
	    !(s->absent & (1U << ((addr - page0) >> 12 & 31))) &&
	    !(s->absent & (1U << ((addr + sizeof(*result) - 1 - page0) >> 12 & 31)))) {
		memcpy(result, s->stack + (addr - s->sp), sizeof(*result));
		return true;
	}
	if (u->acc && u->acc->read && u->acc->read(u->acc->ctx, addr, &word)) {
		*result = word;
		return true;
	}
	if (addr >= s->sp && !u->missed)
		u->missed = addr;
	return false;
}

static bool sample_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct sample_unwinder *u = thread_arg;
	const struct stack_sample *s = u->s;
	/* The caller-saved registers were not taken and stay unknown. */
	Dwarf_Word bx = s->bx, bp_sp[2] = { s->bp, s->sp },
		   r12_15[4] = { s->r12, s->r13, s->r14, s->r15 };
	Dwarf_Word ip = s->ip;

	return dwfl_thread_state_registers(thread, ARCH_DWARF_BX, 1, &bx) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_BP, 2, bp_sp) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_R12, 4, r12_15) &&
	       dwfl_thread_state_registers(thread, ARCH_DWARF_PC, 1, &ip);
}

static const Dwfl_Thread_Callbacks sample_callbacks = {
	.next_thread = sample_next_thread,
	.get_thread = sample_get_thread,
	.memory_read = sample_memory_read,
	.set_initial_registers = sample_set_initial_registers,
};

struct sample_unwinder *sample_unwinder__new(pid_t pid)
{
	struct sample_unwinder *u = calloc(1, sizeof(*u));
	char root[64];
	struct stat st;

	if (!u)
		return NULL;
	u->pid = pid;
	u->refs = 1;
	proc__path(root, sizeof(root), pid, 0, "root");
	if (!stat(root, &st)) {
		u->root_dev = st.st_dev;
		u->root_ino = st.st_ino;
	}
	u->dwfl = dwfl_begin(&sample_dwfl_callbacks);
	if (!u->dwfl) {
		free(u);
		return NULL;
	}
	pthread_mutex_lock(&namer.lock);
	namer.users++;
	pthread_mutex_unlock(&namer.lock);
	return u;
}

static void free_modules(struct sample_module *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)m[i].name);
		free((char *)m[i].file);
	}
	free(m);
}

void sample_unwinder__free(struct sample_unwinder *u)
{
	if (!u || --u->refs)
		return;
	dwfl_end(u->dwfl);
	free_modules(u->mods, u->n_mods);
	pc_memo__free(&u->memo);
	free(u);
	namer_release();
}

static bool same_module(const struct sample_module *a, const struct sample_module *b)
{
	return a->bias == b->bias && !strcmp(a->name, b->name);
}

/* Whether @x is in @m; the caller's order is mostly stable, so @hint (its index) first. */
static bool has_module(const struct sample_module *m, size_t n, const struct sample_module *x,
		       size_t hint)
{
	if (hint < n && same_module(&m[hint], x))
		return true;
	for (size_t i = 0; i < n; i++)
		if (same_module(&m[i], x))
			return true;
	return false;
}

bool sample_unwinder__serves(const struct sample_unwinder *u, pid_t pid,
			     const struct sample_module *m, size_t n)
{
	char root[64];
	struct stat st;

	if (n != u->n_mods)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!has_module(u->mods, u->n_mods, &m[i], i))
			return false;
	if (pid == u->pid)
		return true;
	proc__path(root, sizeof(root), pid, 0, "root");
	return !stat(root, &st) && st.st_dev == u->root_dev && st.st_ino == u->root_ino;
}

size_t sample_unwinder__live(void)
{
	size_t n;

	pthread_mutex_lock(&namer.lock);
	n = namer.users;
	pthread_mutex_unlock(&namer.lock);
	return n;
}

struct sample_unwinder *sample_unwinder__share(struct sample_unwinder *u)
{
	u->refs++;
	return u;
}

bool sample_unwinder__shared(const struct sample_unwinder *u)
{
	return u->refs > 1;
}

int sample_unwinder__set_modules(struct sample_unwinder *u, const struct sample_module *m, size_t n)
{
	bool only_added = true, changed = n != u->n_mods;
	struct sample_module *copy;

	for (size_t i = 0; i < u->n_mods && only_added; i++)
		only_added = has_module(m, n, &u->mods[i], i);
	for (size_t i = 0; i < n && !changed; i++)
		changed = !has_module(u->mods, u->n_mods, &m[i], i);
	if (!changed && only_added)
		return 0;
	copy = calloc(n ? n : 1, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i].name = strdup(m[i].name);
		copy[i].file = strdup(m[i].file);
		copy[i].bias = m[i].bias;
		if (!copy[i].name || !copy[i].file) {
			free_modules(copy, n);
			return -ENOMEM;
		}
	}
	/* Additions keep every module libdwfl has; a removal re-reports the set, and libdwfl
	 * keeps the modules reported again unchanged. */
	if (only_added)
		dwfl_report_begin_add(u->dwfl);
	else
		dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < n; i++) {
		if (only_added && has_module(u->mods, u->n_mods, &m[i], i))
			continue;
		/* The file through the process's root, else the path as it names it (the
		 * process is gone, and had our root). */
		if (!dwfl_report_elf(u->dwfl, m[i].name, m[i].file, -1, m[i].bias, true))
			dwfl_report_elf(u->dwfl, m[i].name, m[i].name, -1, m[i].bias, true);
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	free_modules(u->mods, u->n_mods);
	u->mods = copy;
	u->n_mods = n;
	/* Names stay right while modules are only added, but for pcs that had no module. */
	if (only_added)
		pc_memo__drop_unnamed(&u->memo);
	else
		pc_memo__clear(&u->memo);
	if (!u->attached)
		u->attached =
			dwfl_attach_state(u->dwfl, unwind_arch_elf(), u->pid, &sample_callbacks, u);
	return 0;
}

int sample_unwinder__unwind(struct sample_unwinder *u, const struct stack_sample *s,
			    const struct sample_access *acc, unsigned int max_frames,
			    struct thread_stack *out)
{
	struct walk w = { .ts = out, .max = max_frames, .acc = acc };
	int err, rc;

	memset(out, 0, sizeof(*out));
	out->tid = u->pid;
	if (!u->attached) {
		out->error = strdup("none of the process's objects could be read");
		return -ENOENT;
	}
	u->s = s;
	u->acc = acc;
	u->missed = 0;
	rc = dwfl_getthread_frames(u->dwfl, u->pid, unwind_frame_cb, &w);
	/*
	 * The first pc has no CFI (glibc's clone3 ends its FDE before the syscall): as in a leaf
	 * function, the return address is the word at sp. Kept only when it lies in code and
	 * CFI goes on from there.
	 */
	if (rc && !out->error && out->n_frames == 1 && s->stack_len >= 8 && !(s->absent & 1)) {
		struct stack_sample leaf = *s;
		uint64_t missed = u->missed;

		memcpy(&leaf.ip, s->stack, sizeof(leaf.ip));
		leaf.sp = s->sp + 8;
		leaf.stack = s->stack + 8;
		leaf.stack_len = s->stack_len - 8;
		u->s = &leaf;
		rc = dwfl_getthread_frames(u->dwfl, u->pid, unwind_frame_cb, &w);
		if (out->n_frames > 1) {
			out->frames[1].activation = false; /* a return address: pc - 1 names it */
		} else {
			free(out->error);
			out->error = NULL;
			u->missed = missed;
			rc = -1;
		}
	}
	/* libdwfl takes a return address it cannot read for the end of the stack. */
	if ((rc || u->missed) && !out->error) {
		if (u->missed &&
		    asprintf(&out->error, "the rest of the stack lies above the %zu bytes copied",
			     s->stack_len) >= 0)
			out->truncated = true;
		else
			out->error = strdup(dwfl_errmsg(-1));
	}
	u->s = NULL;
	u->acc = NULL;
	err = name_sample(u, out);
	while (!err && out->n_frames > max_frames) {
		struct stack_frame *f = &out->frames[--out->n_frames];

		free(f->function);
		free(f->module);
		free(f->file);
		out->truncated = true;
	}
	return err;
}
