// SPDX-License-Identifier: GPL-2.0
/*
 * The terminal the TUI draws on (tui_term.h), and everything else that would write to it:
 * dlscope's own messages and the watched command's output, read and shown on the status line.
 */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tui.h"
#include "tui_term.h"

/* The collector's thread may report too: the status line is guarded. */
static pthread_mutex_t msg_lock = PTHREAD_MUTEX_INITIALIZER;
static char pending_msg[512];
static bool pending_error;

void tui_term__sink(const char *level, const char *msg)
{
	pthread_mutex_lock(&msg_lock);
	snprintf(pending_msg, sizeof(pending_msg), "%s: %s", level, msg);
	pending_error = level[0] == 'e';
	pthread_mutex_unlock(&msg_lock);
}

/*
 * The newest line of @buf (@n bytes, NUL-terminated), in place: after the last newline and the
 * last carriage return (a progress bar redraws with \r), control characters and escape
 * sequences dropped (colours would garble the status line). NULL when it is empty.
 */
static char *newest_line(char *buf, size_t n)
{
	char *last, *cr, *out;

	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	cr = strrchr(last, '\r');
	last = cr ? cr + 1 : last;
	out = last;
	for (const char *p = last; *p; p++) {
		if (*p == 27) { /* ESC [ ... final byte */
			if (p[1] == '[')
				for (p += 2; *p && !(*p >= 0x40 && *p <= 0x7e); p++)
					;
			if (!*p)
				break;
			continue;
		}
		*out++ = (unsigned char)*p < 32 ? ' ' : *p;
	}
	*out = '\0';
	return *last ? last : NULL;
}

/* What the command wrote since last time: its newest line, and where all of it is. */
void tui_term__read_command_output(struct ui *ui)
{
	char buf[4096], *line;
	struct stat st;
	off_t from;
	ssize_t n;

	if (!ui->cmd_out_path || fstat(ui->cmd_out_fd, &st))
		return;
	if (st.st_size < ui->cmd_out_off) /* truncated by someone else */
		ui->cmd_out_off = 0;
	if (st.st_size == ui->cmd_out_off)
		return;
	/* Only the newest line is shown: read no more than the tail of what is new. */
	from = st.st_size - ui->cmd_out_off > (off_t)sizeof(buf) - 1 ?
		       st.st_size - (off_t)sizeof(buf) + 1 :
		       (off_t)ui->cmd_out_off;
	n = pread(ui->cmd_out_fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		return;
	buf[n] = '\0';
	ui->cmd_out_off = from + n;
	line = newest_line(buf, (size_t)n);
	if (line)
		ui__status(ui, false, "%s  | output: %s", line, ui->cmd_out_path);
}

/* Messages from the collector, anything dlscope itself wrote to stderr/stdout, the command's. */
void tui_term__read_messages(struct ui *ui, int out_fd)
{
	char buf[4096], *line;
	ssize_t n;

	pthread_mutex_lock(&msg_lock);
	if (pending_msg[0]) {
		ui__status(ui, pending_error, "%s", pending_msg);
		pending_msg[0] = '\0';
	}
	pthread_mutex_unlock(&msg_lock);
	while (out_fd >= 0 && (n = read(out_fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		line = newest_line(buf, (size_t)n);
		/* With a command, the name of its output file stays in sight. */
		if (line)
			ui__status(ui, !strncmp(line, "dlscope: error", 14), "%s%s%s", line,
				   ui->cmd_out_path ? "  | output: " : "",
				   ui->cmd_out_path ? ui->cmd_out_path : "");
	}
	tui_term__read_command_output(ui);
}

/*
 * curses gets its own copies of the terminal; fds 0-2 become /dev/null and a pipe we read, so
 * what dlscope itself prints (libbpf, the collector) lands on the status line, never on the
 * screen. A command has its own output file (watch_opts.command_stdio).
 */
int tui_term__open(struct term_state *ts, char *why, size_t whylen)
{
	int p[2], null_fd, in_fd, out_fd;

	for (int i = 0; i < 3; i++)
		ts->saved_fd[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
	in_fd = fcntl(0, F_DUPFD_CLOEXEC, 10);
	out_fd = fcntl(1, F_DUPFD_CLOEXEC, 10);
	if (in_fd < 0 || out_fd < 0 || pipe2(p, O_CLOEXEC)) {
		snprintf(why, whylen, "cannot set up the terminal: %s", strerror(errno));
		return -errno;
	}
	ts->tty_in = fdopen(in_fd, "r");
	ts->tty_out = fdopen(out_fd, "w");
	ts->screen = ts->tty_in && ts->tty_out ? newterm(NULL, ts->tty_out, ts->tty_in) : NULL;
	if (!ts->screen) {
		snprintf(why, whylen,
			 "cannot start the screen: is TERM (%s) a terminal curses knows?",
			 getenv("TERM") ? getenv("TERM") : "unset");
		close(p[0]);
		close(p[1]);
		return -ENOTTY;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	ts->out_read = p[0];
	null_fd = open("/dev/null", O_RDONLY);
	if (null_fd >= 0) {
		dup2(null_fd, 0);
		close(null_fd);
	}
	dup2(p[1], 1);
	dup2(p[1], 2);
	close(p[1]);
	return 0;
}

void tui_term__close(struct term_state *ts)
{
	if (ts->screen) {
		endwin();
		delscreen(ts->screen);
		ts->screen = NULL;
	}
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 3; i++)
		if (ts->saved_fd[i] >= 0) {
			dup2(ts->saved_fd[i], i);
			close(ts->saved_fd[i]);
			ts->saved_fd[i] = -1;
		}
	if (ts->out_read >= 0)
		close(ts->out_read);
	ts->out_read = -1;
	if (ts->tty_in)
		fclose(ts->tty_in);
	if (ts->tty_out)
		fclose(ts->tty_out);
	ts->tty_in = ts->tty_out = NULL;
}
