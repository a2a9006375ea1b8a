/* SPDX-License-Identifier: GPL-2.0 */
/* Small /proc files, read in one go: the primitives every module that looks at a process uses. */
#ifndef DLSCOPE_PROCFS_H
#define DLSCOPE_PROCFS_H

#include <stdbool.h>
#include <sys/types.h>

/* Read a small /proc file in one read, NUL-terminated. Returns its length or -errno. */
ssize_t proc__read_small(const char *path, char *buf, size_t len);

/*
 * The one way to name a process's /proc entries: "/proc/PID/NAME", or its thread's own,
 * "/proc/PID/task/TID/NAME" (@tid 0: the process's); @name NULL: the directory itself.
 * 0, or -ENAMETOOLONG when @buf is too short.
 */
int proc__path(char *buf, size_t len, pid_t pid, pid_t tid, const char *name);
/* proc__read_small of proc__path's file. */
ssize_t proc__read(pid_t pid, pid_t tid, const char *name, char *buf, size_t len);
/* The name (comm) of process @pid or its thread @tid as it set it, without the newline, raw
 * (escape it to show it). 0, or -errno with @buf untouched. */
int proc__comm(pid_t pid, pid_t tid, char *buf, size_t len);
/* Whether process @pid (thread @tid of it when not 0) is gone: its /proc entry is no more. */
bool proc__gone(pid_t pid, pid_t tid);
/* The threads of @pid (its task directory) into @*tids (free it), @*n of them. 0, -ESRCH
 * when the process is gone, -ENOMEM, or another -errno. */
int proc__tids(pid_t pid, pid_t **tids, size_t *n);
/* A thread's user and system time, in clock ticks (fields 14 and 15 of its stat). 0 or -errno. */
int proc__cpu_ticks(pid_t pid, pid_t tid, unsigned long long *ticks);
/* The value of field @key ("Cpus_allowed_list", "Uid") of @pid's (@tid's) status, into @buf
 * without the newline. 0, -ENOENT when it has no such field, or -errno. */
int proc__status_field(pid_t pid, pid_t tid, const char *key, char *buf, size_t len);

/*
 * A file of process @pid as it names it, where we can open it: an absolute @path through its
 * root (/proc/PID/root/PATH, a container's files), a relative one from its working directory
 * (/proc/PID/cwd/PATH). 0 or -ENAMETOOLONG.
 */
int proc__file_path(char *buf, size_t len, pid_t pid, const char *path);
/* The file mapped at [@start, @end) in @pid, even deleted or replaced: /proc/PID/map_files. */
int proc__map_file_path(char *buf, size_t len, pid_t pid, unsigned long long start,
			unsigned long long end);
/* Parse "/proc/PID/stat"-style fields (@tid 0: the process's); NULL outputs are skipped. */
int proc__read_stat(pid_t pid, pid_t tid, char *comm, size_t commlen, char *state,
		    unsigned long *flags);
/* Its state letter and parent (@state, @ppid, @start may be NULL) and start (clock ticks after boot:
 * with the PID, one process for good), in one read. 0, -ESRCH when gone, -EPROTO. */
int proc__ppid_start(pid_t pid, char *state, pid_t *ppid, unsigned long long *start);

/*
 * The thread of process @pid whose /proc entries (maps, mem, exe, root, environ) are readable:
 * @pid itself, or, when its main thread has exited (pthread_exit) while others run, the first
 * live one. -ESRCH when none is left, or another -errno.
 */
pid_t proc__live_task(pid_t pid);

/*
 * Whether this process runs in a PID namespace below the host's (a container's): there the
 * kernel's view (BPF's PIDs) and /proc's differ. False when it cannot tell.
 */
bool proc__in_child_pidns(void);

/*
 * The root directory of process @pid as the kernel names it to us, into @buf: "" when it is
 * ours. Where it is not (a chroot-style container: bubblewrap, Apptainer, a build chroot, or
 * dlscope itself in a chroot), the paths the kernel gives of the process's files (maps, its exe
 * link) start with it, named from our root, or from the mount namespace's root where ours cannot
 * reach them. Returns its length, or -errno.
 */
ssize_t proc__root_prefix(pid_t pid, char *buf, size_t len);
/* @path as the process whose root is @root (proc__root_prefix) names it: @root left off. */
const char *proc__path_in_root(const char *root, const char *path);

/*
 * Thread @tid of process @pid as its own PID namespace numbers it: the last NSpid field of its
 * status (a container's numbers: what the target writes in its memory, glibc's mutex owners,
 * Python's native_thread_id). @tid itself where that namespace is ours; 0 when it is gone.
 */
pid_t proc__ns_tid(pid_t pid, pid_t tid);
/* Whether process @pid runs in a PID namespace below ours (its NSpid has more than one field). */
bool proc__in_other_pidns(pid_t pid);

struct ns_tid {
	pid_t ours, theirs;
};
/*
 * Every thread of process @pid with its id in its own PID namespace, into @*out (free it), where
 * that namespace is not ours. Returns how many: 0 where it is ours, or on failure.
 */
size_t proc__ns_tids(pid_t pid, struct ns_tid **out);

/*
 * The container process @pid runs in, named from its cgroup as its engine named it: "docker
 * 3f2a9c1b5e7d", "podman ...", "containerd ... in a Kubernetes pod", "cri-o ...", "lxc NAME",
 * "nspawn NAME". 0, or -ENOENT where its cgroup names none (a plain unshare, the host).
 */
int proc__container(pid_t pid, char *buf, size_t len);

/*
 * The whole initial environment of @pid (/proc/PID/environ), NUL-separated and NUL-terminated,
 * into @*env (free it), its length in @*size. 0, -ESRCH when gone, or another -errno.
 */
int proc__environ(pid_t pid, char **env, size_t *size);
/* Whether @env (proc__environ's, @size long) holds the entry NAME=VALUE @entry, whole. */
bool proc__environ_has(const char *env, size_t size, const char *entry);
/* The value of variable @name in @env (proc__environ's), or NULL. */
const char *proc__environ_get(const char *env, size_t size, const char *name);

/* /proc/PID/cmdline with spaces between the arguments (NULL when it cannot be read); free it. */
char *proc__cmdline(pid_t pid);

#endif
