/* SPDX-License-Identifier: GPL-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "procfs.h"
#include "termsafe.h"

ssize_t proc__read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	return n;
}

int proc__path(char *buf, size_t len, pid_t pid, pid_t tid, const char *name)
{
	int n;

	if (tid)
		n = snprintf(buf, len, "/proc/%d/task/%d%s%s", pid, tid, name ? "/" : "",
			     name ? name : "");
	else
		n = snprintf(buf, len, "/proc/%d%s%s", pid, name ? "/" : "", name ? name : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

ssize_t proc__read(pid_t pid, pid_t tid, const char *name, char *buf, size_t len)
{
	char path[128];
	int err = proc__path(path, sizeof(path), pid, tid, name);

	return err ? err : proc__read_small(path, buf, len);
}

int proc__comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char comm[64];
	ssize_t n = proc__read(pid, tid, "comm", comm, sizeof(comm));

	if (n <= 0)
		return n < 0 ? (int)n : -ESRCH;
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(buf, len, "%s", comm);
	return 0;
}

bool proc__gone(pid_t pid, pid_t tid)
{
	char path[64];
	struct stat st;

	return !proc__path(path, sizeof(path), pid, tid, NULL) && stat(path, &st) &&
	       errno == ENOENT;
}

int proc__tids(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*tids = NULL;
	*n = 0;
	proc__path(path, sizeof(path), pid, 0, "task");
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (ARRAY_PUSH(*tids, *n, cap, (pid_t)tid)) {
			closedir(d);
			free(*tids);
			*tids = NULL;
			*n = 0;
			return -ENOMEM;
		}
	}
	closedir(d);
	return 0;
}

int proc__cpu_ticks(pid_t pid, pid_t tid, unsigned long long *ticks)
{
	char buf[1024], *paren;
	unsigned long long ut, st;
	ssize_t n = proc__read(pid, tid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	/* Fields 14 and 15 of stat, the 12th and 13th after the comm. */
	if (!(paren = strrchr(buf, ')')) ||
	    sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) !=
		    2)
		return -EPROTO;
	*ticks = ut + st;
	return 0;
}

int proc__status_field(pid_t pid, pid_t tid, const char *key, char *buf, size_t len)
{
	char text[8192], *p;
	size_t klen = strlen(key);
	ssize_t n = proc__read(pid, tid, "status", text, sizeof(text));

	if (n < 0)
		return (int)n;
	/* "Key:\tvalue" lines: the key at the text's start or after a newline. */
	for (p = text; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			p += klen + 1;
			p += strspn(p, " \t");
			snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
			return 0;
		}
	}
	return -ENOENT;
}

int proc__file_path(char *buf, size_t len, pid_t pid, const char *path)
{
	int n = snprintf(buf, len, "/proc/%d/%s%s", pid, path[0] == '/' ? "root" : "cwd/", path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int proc__map_file_path(char *buf, size_t len, pid_t pid, unsigned long long start,
			unsigned long long end)
{
	int n = snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", pid, start, end);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int proc__read_stat(pid_t pid, pid_t tid, char *comm, size_t commlen, char *state,
		    unsigned long *flags)
{
	char path[64], buf[1024];
	char *lparen, *rparen;
	ssize_t n;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = proc__read_small(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* comm may itself contain spaces and parentheses: it ends at the last ')'. */
	lparen = strchr(buf, '(');
	rparen = strrchr(buf, ')');
	if (!lparen || !rparen || rparen < lparen || rparen[1] != ' ')
		return -EPROTO;
	/* A process names itself: its name is shown, escaped, never trusted as text. */
	if (comm)
		termsafe__escape(lparen + 1, (size_t)(rparen - lparen - 1), comm, commlen);
	if (state)
		*state = rparen[2];
	if (flags) {
		/* Fields after comm: state ppid pgrp session tty_nr tpgid flags. */
		unsigned long f = 0;

		if (sscanf(rparen + 2, "%*c %*d %*d %*d %*d %*d %lu", &f) != 1)
			return -EPROTO;
		*flags = f;
	}
	return 0;
}

/* Fields 4 (ppid) and 22 (starttime, clock ticks after boot) of /proc/PID/stat. */
int proc__ppid_start(pid_t pid, char *state, pid_t *ppid, unsigned long long *start)
{
	char buf[1024], *rparen, st;
	unsigned long long begun;
	pid_t parent;

	if (proc__read(pid, 0, "stat", buf, sizeof(buf)) < 0)
		return -ESRCH;
	rparen = strrchr(buf, ')');
	/* After comm: state ppid, then 17 fields up to starttime. */
	if (!rparen || sscanf(rparen + 2,
			      "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			      "%*d %*d %*d %llu",
			      &st, &parent, &begun) != 3)
		return -EPROTO;
	if (state)
		*state = st;
	if (ppid)
		*ppid = parent;
	if (start)
		*start = begun;
	return 0;
}

bool proc__in_child_pidns(void)
{
	/* The initial PID namespace's inode is fixed (PROC_PID_INIT_INO, linux/proc_ns.h). */
	const unsigned long init_ino = 0xEFFFFFFCUL;
	struct stat st;

	return !stat("/proc/self/ns/pid", &st) && st.st_ino != init_ino;
}

pid_t proc__live_task(pid_t pid)
{
	char path[64], state;
	struct dirent *de;
	pid_t live = -ESRCH;
	DIR *d;
	int err;

	err = proc__read_stat(pid, 0, NULL, 0, &state, NULL);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	if (state != 'Z' && state != 'X')
		return pid;
	/* The main thread is gone, its memory and files with it: any other thread has them. */
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (live < 0 && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0 || tid == pid)
			continue;
		if (!proc__read_stat(pid, (pid_t)tid, NULL, 0, &state, NULL) && state != 'Z' &&
		    state != 'X')
			live = (pid_t)tid;
	}
	closedir(d);
	return live;
}

ssize_t proc__root_prefix(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n == len - 1)
		return -ENAMETOOLONG;
	/* "/": ours. A trailing slash never ends a name the kernel gives. */
	if (n == 1 && buf[0] == '/')
		n = 0;
	buf[n] = '\0';
	return n;
}

const char *proc__path_in_root(const char *root, const char *path)
{
	size_t n = strlen(root);

	if (n && !strncmp(path, root, n) && path[n] == '/')
		return path + n;
	return path;
}

/* The NSpid line of thread @tid of @pid (@tid 0: the process's): its ids, ours first. */
static int read_nspid(pid_t pid, pid_t tid, pid_t *ids, int max)
{
	char path[64], buf[4096];
	const char *p;
	int n = 0;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (proc__read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	p += 7;
	while (n < max) {
		char *end;
		long id = strtol(p, &end, 10);

		if (end == p)
			break;
		ids[n++] = (pid_t)id;
		p = end;
	}
	return n;
}

pid_t proc__ns_tid(pid_t pid, pid_t tid)
{
	pid_t ids[32];
	int n = read_nspid(pid, tid, ids, 32);

	return n ? ids[n - 1] : 0;
}

/* The id after @prefix in @part, up to a '.' (docker-ID.scope) or its end; false when none. */
static bool id_after(const char *part, size_t n, const char *prefix, char *id, size_t idlen)
{
	size_t k = strlen(prefix), end = k;

	if (n <= k || strncmp(part, prefix, k))
		return false;
	while (end < n && part[end] != '.')
		end++;
	if (end == k)
		return false;
	/* A 64-hex container id is shown as its engines show it: its first 12. */
	if (end - k == 64)
		end = k + 12;
	snprintf(id, idlen, "%.*s", (int)(end - k), part + k);
	return true;
}

int proc__container(pid_t pid, char *buf, size_t len)
{
	static const struct {
		const char *prefix, *engine;
	} engines[] = {
		{ "docker-", "docker" },   { "cri-containerd-", "containerd" },
		{ "crio-", "cri-o" },	   { "libpod-", "podman" },
		{ "lxc.payload.", "lxc" }, { "machine-", "nspawn" },
	};
	char path[64], line[1024], id[80];
	bool pod = false;
	FILE *f;
	int found = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	/* "0::/system.slice/docker-ID.scope" (v2), or "N:controllers:/docker/ID" (v1). */
	while (found && fgets(line, sizeof(line), f)) {
		const char *p = strchr(line, ':');

		p = p ? strchr(p + 1, ':') : NULL;
		pod |= p && strstr(p, "kubepods") != NULL;
		for (const char *part = p ? p + 1 : NULL; part && *part && found;) {
			size_t n = strcspn(part, "/\n");

			for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]) && found; e++)
				if (id_after(part, n, engines[e].prefix, id, sizeof(id))) {
					snprintf(buf, len, "%s %s", engines[e].engine, id);
					found = 0;
				}
			/* cgroup v1's docker: /docker/ID */
			if (found && n == 6 && !strncmp(part, "docker", 6) && part[6] == '/' &&
			    strcspn(part + 7, "/\n") == 64) {
				snprintf(buf, len, "docker %.12s", part + 7);
				found = 0;
			}
			part += n;
			part += strspn(part, "/\n");
		}
	}
	fclose(f);
	if (!found && pod)
		snprintf(buf + strlen(buf), len - strlen(buf), " in a Kubernetes pod");
	return found;
}

bool proc__in_other_pidns(pid_t pid)
{
	pid_t ids[32];

	return read_nspid(pid, 0, ids, 32) > 1;
}

size_t proc__ns_tids(pid_t pid, struct ns_tid **out)
{
	struct ns_tid *map = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	char path[64];
	DIR *d;

	*out = NULL;
	if (!proc__in_other_pidns(pid))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		pid_t theirs;

		if (*end || tid <= 0 || !(theirs = proc__ns_tid(pid, (pid_t)tid)))
			continue;
		if (n == cap && ARRAY_GROW(map, cap, 16))
			break;
		map[n++] = (struct ns_tid){ (pid_t)tid, theirs };
	}
	closedir(d);
	*out = map;
	return n;
}

/* /proc/PID/cmdline with spaces between the arguments (NULL when it cannot be read). */
char *proc__cmdline(pid_t pid)
{
	char path[64], *buf = malloc(4096);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	n = read(fd, buf, 4095);
	close(fd);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	while (n > 0 && !buf[n - 1])
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return buf;
}

int proc__environ(pid_t pid, char **out, size_t *size)
{
	char path[64], *env = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	proc__path(path, sizeof(path), pid, 0, "environ");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	do {
		if (cap - len < 4096 && ARRAY_GROW(env, cap, 65536)) {
			free(env);
			close(fd);
			return -ENOMEM;
		}
		n = read(fd, env + len, cap - len - 1);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0);
	close(fd);
	if (n < 0) {
		int err = errno == ESRCH ? -ESRCH : -errno;

		free(env);
		return err;
	}
	env[len] = '\0';
	*out = env;
	*size = len;
	return 0;
}

bool proc__environ_has(const char *env, size_t size, const char *entry)
{
	for (size_t off = 0; off < size; off += strlen(env + off) + 1)
		if (!strcmp(env + off, entry))
			return true;
	return false;
}

const char *proc__environ_get(const char *env, size_t size, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t off = 0; off < size; off += strlen(env + off) + 1)
		if (!strncmp(env + off, name, nlen) && env[off + nlen] == '=')
			return env + off + nlen + 1;
	return NULL;
}
