/* SPDX-License-Identifier: GPL-2.0 */
/*
 * srun run with --label, its output and errors read as they come, line by line, each line with
 * the task that wrote it ("3: text"; srun's own words have no task). srun cuts a long line into
 * pieces of its buffer's size, each labelled; a line longer than ours goes on to the same task.
 */
#ifndef DLSCOPE_SRUN_IO_H
#define DLSCOPE_SRUN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct srun_stream {
	int fd;
	/* Each line without its newline; @task -1: srun's own words. */
	void (*line)(void *arg, long task, const char *text, size_t len);
	void *arg;
	int ntasks;		/* labels 0 to ntasks - 1 are tasks */
	unsigned long labelled; /* lines that came from a task */
	long cont;		/* the task a line cut in our buffer goes on with; -1 none */
	size_t len;
	char buf[65536];
};

/* srun of @argv, its standard input /dev/null, in a process group of its own (the terminal's
 * Ctrl-C is the caller's to pass on); its output and errors in *@out_fd and *@err_fd. Its PID, or
 * -errno. */
pid_t srun_io__start(char **argv, int *out_fd, int *err_fd);
/*
 * Read @s[0] and @s[1] until both end (their fds are closed then), calling @tick (when not NULL)
 * at least every 200 ms; then srun's (@pid's) wait status.
 */
int srun_io__relay(pid_t pid, struct srun_stream s[2], void (*tick)(void *arg), void *arg);

#endif
