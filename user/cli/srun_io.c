// SPDX-License-Identifier: GPL-2.0
/* srun's labelled output read line by line (srun_io.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "srun_io.h"

pid_t srun_io__start(char **argv, int *out_fd, int *err_fd)
{
	int out[2], err[2];
	pid_t pid;

	if (pipe2(out, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		pid = -errno;
		goto fail_out;
	}
	pid = fork();
	if (pid < 0) {
		pid = -errno;
		close(err[0]);
		close(err[1]);
		goto fail_out;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		setpgid(0, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	*out_fd = out[0];
	*err_fd = err[0];
	return pid;
fail_out:
	close(out[0]);
	close(out[1]);
	return pid;
}

/* One line of @s (@len bytes at @text; @cut: it goes on after this piece) to its callback. */
static void deliver(struct srun_stream *s, char *text, size_t len, bool cut)
{
	long task = s->cont;
	char *end;

	if (task < 0) {
		task = strtol(text, &end, 10);
		if (end != text && *end == ':' && task >= 0 && task < s->ntasks &&
		    (size_t)(end - text) < len) {
			end += end + 1 < text + len && end[1] == ' ' ? 2 : 1;
			len -= (size_t)(end - text);
			text = end;
			s->labelled++;
		} else {
			task = -1;
		}
	}
	s->line(s->arg, task, text, len);
	s->cont = cut ? task : -1;
}

/* What can be read of @s now, delivered line by line. False at its end. */
static bool stream_read(struct srun_stream *s)
{
	ssize_t got = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
	char *nl;

	if (got < 0 && errno == EINTR)
		return true;
	if (got <= 0) {
		if (s->len)
			deliver(s, s->buf, s->len, false);
		s->len = 0;
		return false;
	}
	s->len += (size_t)got;
	while ((nl = memchr(s->buf, '\n', s->len))) {
		size_t l = (size_t)(nl - s->buf);

		deliver(s, s->buf, l, false);
		memmove(s->buf, nl + 1, s->len - l - 1);
		s->len -= l + 1;
	}
	if (s->len == sizeof(s->buf)) {
		deliver(s, s->buf, s->len, true);
		s->len = 0;
	}
	return true;
}

int srun_io__relay(pid_t pid, struct srun_stream s[2], void (*tick)(void *arg), void *arg)
{
	bool open[2] = { true, true };
	int status = 0;

	s[0].cont = s[1].cont = -1;
	while (open[0] || open[1]) {
		struct pollfd p[2] = { { .fd = open[0] ? s[0].fd : -1, .events = POLLIN },
				       { .fd = open[1] ? s[1].fd : -1, .events = POLLIN } };

		if (tick)
			tick(arg);
		if (poll(p, 2, 200) <= 0)
			continue;
		for (int k = 0; k < 2; k++)
			if (open[k] && (p[k].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    !stream_read(&s[k])) {
				open[k] = false;
				close(s[k].fd);
			}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}
