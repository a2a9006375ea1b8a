// SPDX-License-Identifier: GPL-2.0
/*
 * The stream's horizon (horizon.h) on the timelines that broke the order. In the suite at
 * eight tests at once, a constructor's first thread (fork, 648.9 ms) was written before the
 * dlopen that ran it (entered at 646.1 ms): the dlopen's program had sent its record and left
 * the calls table before a look, and the read stopped before that record.
 */
#include "horizon.h"
#include "tap.h"

#define MS 1000000ULL
#define SKEW HORIZON_SKEW_NS

int main(void)
{
	struct horizon h = { 0 };
	unsigned long long dlopen_ts = 646 * MS, fork_ts = 649 * MS;

	/* A look at 650 ms finds the dlopen in progress: nothing at or after its entry goes. */
	horizon__look(&h, 650 * MS);
	horizon__saw_call(&h, 42, dlopen_ts);
	CHECK(horizon__after_read(&h, true, fork_ts) == dlopen_ts - SKEW,
	      "a call in progress holds the horizon before its entry");

	/* The dlopen returns and leaves the table; at the next look (670 ms) its record still
	 * waits in the ring, behind the batch's time limit or an uncommitted record. */
	horizon__look(&h, 670 * MS);
	CHECK(horizon__after_read(&h, false, 666 * MS) == dlopen_ts - SKEW,
	      "a call seen earlier whose record is unread still holds it (batch cut short)");
	horizon__look(&h, 675 * MS);
	CHECK(horizon__after_read(&h, true, 666 * MS) == dlopen_ts - SKEW,
	      "and so when the ring looked empty to the read");

	/* Its record is read: the horizon moves on to the look less the margin. */
	horizon__read_call(&h, 42, dlopen_ts);
	horizon__look(&h, 680 * MS);
	CHECK(horizon__after_read(&h, true, 676 * MS) == 680 * MS - SKEW,
	      "a call read lets the horizon go to the look");

	/* A read that leaves the ring not empty: no further than the last record read, nor than
	 * the previous look (a call begun after it may have ended unread). */
	horizon__look(&h, 700 * MS);
	CHECK(horizon__after_read(&h, false, 695 * MS) == 680 * MS - SKEW,
	      "a ring not emptied: no further than the previous look");
	horizon__look(&h, 720 * MS);
	CHECK(horizon__after_read(&h, false, 690 * MS) == 690 * MS - SKEW,
	      "nor than the last record read");

	/* A look in the microseconds between a call's record and its leaving the table sees a
	 * call already read: it must not hold the order back. */
	horizon__read_call(&h, 7, 715 * MS);
	horizon__look(&h, 730 * MS);
	horizon__saw_call(&h, 7, 715 * MS);
	CHECK(horizon__after_read(&h, true, 729 * MS) == 730 * MS - SKEW,
	      "a call whose record was already read is not waited for");

	/* Not yet stamped (0), and a call stuck for longer than the wait: neither holds. */
	horizon__look(&h, 5000 * MS);
	horizon__saw_call(&h, 8, 0);
	horizon__saw_call(&h, 9, 5000 * MS - HORIZON_WAIT_NS);
	CHECK(horizon__after_read(&h, true, 4999 * MS) == 5000 * MS - SKEW,
	      "a call unstamped or stuck longer than the wait holds nothing back");

	/* A call seen, whose record was lost: it holds the order for the wait, then no more. */
	horizon__saw_call(&h, 10, 4990 * MS);
	horizon__look(&h, 5100 * MS);
	CHECK(horizon__after_read(&h, true, 5099 * MS) == 4990 * MS - SKEW,
	      "a call seen and never read holds the horizon");
	horizon__look(&h, 4990 * MS + HORIZON_WAIT_NS);
	CHECK(horizon__after_read(&h, true, 0) == 4990 * MS + HORIZON_WAIT_NS - SKEW && !h.n_seen,
	      "until the wait is over, then it is forgotten");

	/* Many calls at once: each read lets its own go, the oldest left holds. */
	horizon__look(&h, 9000 * MS);
	for (unsigned int t = 1; t <= 100; t++)
		horizon__saw_call(&h, t, (8900 + t) * MS);
	for (unsigned int t = 1; t <= 50; t++)
		horizon__read_call(&h, t, (8900 + t) * MS);
	CHECK(h.n_seen == 50 && horizon__after_read(&h, true, 0) == 8951 * MS - SKEW,
	      "of 100 calls seen, the 50 read let go; the oldest of the rest holds");
	horizon__free(&h);
	return tap_done();
}
