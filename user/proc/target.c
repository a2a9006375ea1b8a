// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "corefile.h"
#include "permission.h"
#include "procfs.h"
#include "elfobj.h"
#include "target.h"

#define PF_KTHREAD 0x00200000

int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

static int why(char *buf, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int why(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return -err;
}

/* Refused by the kernel: say why, from what /proc shows (permission.c), not a guess. */
static int permission_reason(pid_t pid, const char *comm, enum ptrace_access mode, char *buf,
			     size_t len)
{
	char reason[512];

	permission__explain(pid, mode, reason, sizeof(reason));
	return why(buf, len, EPERM, "permission denied reading process %d (%s): %s", pid, comm,
		   reason);
}

/*
 * @t's name and state, and the task its files are read through: the process itself, or a live
 * thread of a main thread that exited. 0, or -errno with @reason said (no such process, a
 * kernel thread, a zombie with nothing left).
 */
static int read_task(struct target *t, char *reason, size_t reasonlen)
{
	pid_t pid = t->pid;
	unsigned long flags;
	int err = proc__read_stat(pid, 0, t->comm, sizeof(t->comm), &t->state, &flags);

	if (err == -ENOENT || err == -ESRCH)
		return why(reason, reasonlen, ESRCH, "no process with PID %d", pid);
	if (err)
		return why(reason, reasonlen, -err, "cannot read /proc/%d/stat: %s", pid,
			   strerror(-err));
	if (flags & PF_KTHREAD)
		return why(reason, reasonlen, EINVAL,
			   "process %d (%s) is a kernel thread: it has no user-space libraries",
			   pid, t->comm);
	t->task = pid;
	if (t->state == 'Z' || t->state == 'X') {
		t->task = proc__live_task(pid);
		if (t->task <= 0)
			return why(reason, reasonlen, ESRCH,
				   "process %d (%s) is a zombie: it has exited and its memory is "
				   "gone",
				   pid, t->comm);
	}
	return 0;
}

/*
 * Whether @t names files as we do: its root is our root directory and its mount namespace
 * ours (a private mount namespace can mount something else at the same path).
 */
static bool root_is_ours(const struct target *t)
{
	struct stat a, b;
	char path[64];

	if (t->root_fd < 0 || fstat(t->root_fd, &a) || stat("/", &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", t->task);
	if (stat(path, &a) || stat("/proc/self/ns/mnt", &b))
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The environment a process started with, as /proc/PID/environ shows it once read. */
struct target_env {
	bool read;
	int err;
	char *data;
	size_t size;
};

int target__open(pid_t pid, struct target **out, char *reason, size_t reasonlen)
{
	struct target *t;
	char path[64], buf[PATH_MAX], root[PATH_MAX];
	ssize_t n;
	int err;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return why(reason, reasonlen, ENOMEM, "out of memory");
	t->pid = pid;
	t->mem_fd = t->root_fd = t->exe_fd = -1;
	t->env = calloc(1, sizeof(*t->env)); /* NULL: read at each ask */

	err = read_task(t, reason, reasonlen);
	if (err)
		goto err_free;
	snprintf(path, sizeof(path), "/proc/%d/exe", t->task);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0) {
		if (errno == EACCES || errno == EPERM)
			err = permission_reason(pid, t->comm, ACCESS_READ, reason, reasonlen);
		else if (errno == ENOENT)
			err = why(reason, reasonlen, ESRCH,
				  "process %d (%s) exited while being read", pid, t->comm);
		else
			err = why(reason, reasonlen, errno, "cannot read %s: %s", path,
				  strerror(errno));
		goto err_free;
	}
	buf[n] = '\0';
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = '\0';
	/* Named as the target names it, where its root is not ours (as its maps are). */
	if (proc__root_prefix(t->task, root, sizeof(root)) > 0)
		snprintf(t->exe, sizeof(t->exe), "%s", proc__path_in_root(root, buf));
	else
		memcpy(t->exe, buf, (size_t)n + 1);

	snprintf(path, sizeof(path), "/proc/%d/mem", t->task);
	t->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->mem_fd < 0) {
		if (errno == EACCES || errno == EPERM)
			err = permission_reason(pid, t->comm, ACCESS_ATTACH, reason, reasonlen);
		else
			err = why(reason, reasonlen, ESRCH,
				  "process %d (%s) exited while being read", pid, t->comm);
		goto err_free;
	}
	/* Best effort: without them, paths fall back to /proc/PID/root and /proc/PID/exe. */
	snprintf(path, sizeof(path), "/proc/%d/root", t->task);
	t->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/exe", t->task);
	t->exe_fd = open(path, O_PATH | O_CLOEXEC);
	t->root_is_ours = root_is_ours(t);
	*out = t;
	return 0;

err_free:
	target__free(t);
	return err;
}

int target__recheck(struct target *t, char *reason, size_t reasonlen)
{
	return t->core || t->image ? 0 : read_task(t, reason, reasonlen);
}

void target__pause(const struct target *t)
{
	if (t->pause)
		t->pause(t);
}

void target__sleep(const struct target *t, long ns)
{
	if (t->sleep)
		t->sleep(t, ns);
	else
		nanosleep(&(struct timespec){ .tv_nsec = ns }, NULL);
}

void target__free(struct target *t)
{
	if (!t)
		return;
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	if (t->root_fd >= 0) {
		elfobj__root_closed(t->root_fd);
		close(t->root_fd);
	}
	if (t->exe_fd >= 0)
		close(t->exe_fd);
	if (t->env)
		free(t->env->data);
	free(t->env);
	free(t);
}

struct target *target__from_image(const void *mem, size_t len, uint64_t base)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->mem_fd = t->root_fd = t->exe_fd = -1;
	t->image = mem;
	t->image_len = len;
	t->image_base = base;
	snprintf(t->comm, sizeof(t->comm), "image");
	return t;
}

struct target *target__from_core(const struct corefile *core, const char *exe)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->mem_fd = t->exe_fd = -1;
	t->core = core;
	t->pid = core->pid;
	t->task = -1;
	t->state = 'C';
	snprintf(t->comm, sizeof(t->comm), "%s", core->comm);
	if (!exe)
		exe = corefile__exe(core);
	snprintf(t->exe, sizeof(t->exe), "%s", exe ? exe : "");
	/* Paths are this host's: through our own root, and the executable held open. */
	t->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (exe)
		t->exe_fd = open(exe, O_PATH | O_CLOEXEC);
	return t;
}

int target__read(const struct target *t, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (t->image) {
		if (addr < t->image_base || addr - t->image_base > t->image_len ||
		    len > t->image_len - (addr - t->image_base))
			return -EFAULT;
		memcpy(buf, t->image + (addr - t->image_base), len);
		return 0;
	}
	if (t->core)
		return corefile__read(t->core, addr, buf, len) == len ? 0 : -EFAULT;

	n = process_vm_readv(t->task, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == ENOSYS) {
		n = pread(t->mem_fd, buf, len, (off_t)addr);
		if (n == (ssize_t)len)
			return 0;
	}
	if (n >= 0)
		return -EFAULT;
	if (errno == ESRCH)
		return -ESRCH;
	if (errno == EPERM || errno == EACCES)
		return -EPERM;
	return -EFAULT;
}

ssize_t target__read_some(const struct target *t, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (t->image || t->core || t->task <= 0)
		return -ENOTSUP;
	n = process_vm_readv(t->task, &local, 1, &remote, 1, 0);
	if (n >= 0)
		return n;
	if (errno == ESRCH || errno == EPERM || errno == EACCES)
		return errno == ESRCH ? -ESRCH : -EPERM;
	return -EFAULT;
}

size_t target__read_many(const struct target *t, const uint64_t *addrs, size_t n, void *buf,
			 size_t len)
{
	enum { BATCH = 256 };
	struct iovec local[BATCH], remote[BATCH];
	size_t done = 0;

	while (done < n) {
		size_t k = n - done < BATCH ? n - done : BATCH;
		ssize_t got;

		if (t->image || t->core || t->task <= 0) {
			/* No process: one read each, as target__read does them. */
			if (target__read(t, addrs[done], (char *)buf + done * len, len))
				return done;
			done++;
			continue;
		}
		for (size_t i = 0; i < k; i++) {
			local[i] = (struct iovec){ (char *)buf + (done + i) * len, len };
			remote[i] = (struct iovec){ (void *)(uintptr_t)addrs[done + i], len };
		}
		got = process_vm_readv(t->task, local, k, remote, k, 0);
		if (got < 0)
			return done;
		/* A partial transfer stops at the first address that cannot be read. */
		done += (size_t)got / len;
		if ((size_t)got < k * len)
			return done;
	}
	return done;
}

int target__read_str(const struct target *t, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	if (!len)
		return -EINVAL;
	/* Read up to page boundaries: the string may end just before an unmapped page. */
	while (got < len - 1) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		char *nul;
		int err;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		err = target__read(t, addr + got, buf + got, chunk);
		if (err)
			return err;
		nul = memchr(buf + got, '\0', chunk);
		if (nul)
			return (int)(nul - buf);
		got += chunk;
	}
	buf[len - 1] = '\0';
	return -ENAMETOOLONG;
}

/* What target__read_strs reads of each string in its batch: most file names fit. */
#define STR_PEEK 256

void target__read_strs(const struct target *t, const uint64_t *addrs, size_t n, char *const *bufs,
		       size_t len, int *res)
{
	enum { BATCH = 256 };
	struct iovec local[BATCH], remote[BATCH];
	size_t done = 0;

	while (done < n && len > 1 && !t->image && !t->core && t->task > 0) {
		size_t k = n - done < BATCH ? n - done : BATCH, got = 0;
		ssize_t rd;

		for (size_t i = 0; i < k; i++) {
			uint64_t a = addrs[done + i];
			/* Not past the string's page: the next one may not be mapped. */
			size_t want = 4096 - (a & 4095);

			if (want > STR_PEEK)
				want = STR_PEEK;
			if (want > len - 1)
				want = len - 1;
			local[i] = (struct iovec){ bufs[done + i], want };
			remote[i] = (struct iovec){ (void *)(uintptr_t)a, want };
			res[done + i] = -EAGAIN; /* not read whole yet */
		}
		rd = process_vm_readv(t->task, local, k, remote, k, 0);
		/* A partial transfer stops at the first address that cannot be read: the strings
		 * before it are whole, that one and the rest are read one by one below. */
		for (size_t i = 0; rd > 0 && i < k && got + local[i].iov_len <= (size_t)rd; i++) {
			char *nul = memchr(bufs[done + i], '\0', local[i].iov_len);

			got += local[i].iov_len;
			if (nul)
				res[done + i] = (int)(nul - bufs[done + i]);
		}
		done += k;
		if (rd < 0)
			break;
	}
	for (size_t i = 0; i < n; i++)
		if (i >= done || res[i] == -EAGAIN)
			res[i] = target__read_str(t, addrs[i], bufs[i], len);
}

void target__host_path(const struct target *t, const char *path, char *buf, size_t len)
{
	const char *sep = path[0] == '/' ? "" : "/";

	/* The same files by the same names: the plain path, which a persistent cache knows
	 * (objcache.h) and which stays readable when the process exits. */
	if (t->root_is_ours)
		snprintf(buf, len, "%s%s", sep, path);
	else if (t->root_fd >= 0)
		snprintf(buf, len, "/proc/self/fd/%d%s%s", t->root_fd, sep, path);
	else
		snprintf(buf, len, "/proc/%d/root%s%s", t->task, sep, path);
}

void target__exe_path(const struct target *t, char *buf, size_t len)
{
	if (t->exe_fd >= 0)
		snprintf(buf, len, "/proc/self/fd/%d", t->exe_fd);
	else
		snprintf(buf, len, "/proc/%d/exe", t->task);
}

bool target__alive(const struct target *t)
{
	char state;

	if (t->core)
		return true; /* its memory does not go away */
	if (proc__read_stat(t->task, 0, NULL, 0, &state, NULL))
		return false;
	return state != 'Z' && state != 'X';
}

int target__getenv(const struct target *t, const char *name, char *buf, size_t len)
{
	struct target_env once = { 0 }, *e = t->env ? t->env : &once;
	const char *value;

	if (t->core)
		return -ENOENT; /* a core keeps no environment we read */
	if (!e->read) {
		e->err = proc__environ(t->task, &e->data, &e->size);
		/* Out of memory may pass: asked again next time. */
		e->read = e->err != -ENOMEM;
		/* Kept at its size (read into 64 KiB): a collector keeps up to 64 targets. */
		if (!e->err)
			ARRAY_SHRINK(e->data, e->size + 1);
	}
	if (e->err)
		return e->err;
	value = proc__environ_get(e->data, e->size, name);
	if (value)
		snprintf(buf, len, "%s", value);
	if (e == &once)
		free(once.data);
	return value ? 0 : -ENOENT;
}

int parse_pid_append(const char *s, pid_t **pids, size_t *n, size_t *cap)
{
	pid_t pid;

	if (parse_pid(s, &pid))
		return -EINVAL;
	return ARRAY_PUSH(*pids, *n, *cap, pid);
}
