// SPDX-License-Identifier: GPL-2.0
/*
 * fd_reaper__start on real descriptors: pipes show who holds a copy of their write end (a read
 * sees the end only once every copy is closed). The reaper must hold what it was handed, until
 * its descriptor is closed, and nothing else: a copy of any other descriptor (a terminal, the
 * pipe a test harness reads dlscope's output from) would keep that open after dlscope ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdreaper.h"
#include "tap.h"

/* Whether @fd, a pipe's read end, sees the end of its pipe within @ms. */
static bool ends_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char byte;

	return poll(&p, 1, ms) == 1 && read(fd, &byte, 1) == 0;
}

int main(void)
{
	int handed[3][2], other[2], fds[3], r;

	for (int i = 0; i < 3; i++)
		if (pipe2(handed[i], O_CLOEXEC))
			return 1;
	if (pipe2(other, O_CLOEXEC))
		return 1;
	/* Out of order, one twice, one negative: the reaper sorts and skips. */
	fds[0] = handed[2][1];
	fds[1] = handed[0][1];
	fds[2] = handed[1][1];
	r = fd_reaper__start((const int[]){ fds[0], fds[1], fds[2], fds[1], -1 }, 5);
	CHECK(r >= 0, "a reaper is made");
	if (r < 0) {
		fprintf(stderr, "fd_reaper__start: %s\n", strerror(-r));
		return tap_done();
	}
	for (int i = 0; i < 3; i++)
		close(handed[i][1]);
	close(other[1]);
	CHECK(ends_within(other[0], 2000), "a descriptor not handed over is not kept");
	CHECK(!ends_within(handed[0][0], 200) && !ends_within(handed[2][0], 0),
	      "the descriptors handed over are kept after ours are closed");
	close(r);
	CHECK(ends_within(handed[0][0], 5000) && ends_within(handed[1][0], 5000) &&
		      ends_within(handed[2][0], 5000),
	      "they are closed once the reaper's descriptor is");
	r = fd_reaper__start(NULL, 0);
	CHECK(r >= 0, "nothing to hand over is no error");
	if (r >= 0)
		close(r);
	return tap_done();
}
