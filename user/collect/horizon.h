/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_HORIZON_H
#define DLSCOPE_HORIZON_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The stream's time order (reader.c): how far the ordered sinks may write, the horizon, so
 * that no record stamped at or before it can still come.
 *
 * The ring is in the order records were reserved, each stamped when its program ran, a few
 * microseconds before (HORIZON_SKEW_NS is a wide margin). A call's record (dlopen, dlsym, a
 * GPU load, a futex wait) is stamped with the call's entry but sent at its return, after what
 * happened inside it. So the horizon stays before:
 * - every call in progress at a look at the kernel's tables of calls (the look's "before");
 * - every call such a look saw whose record has not been read since: its program may have
 *   sent it and removed the call from the table, and the record still wait in the ring,
 *   behind the batch's time limit or behind a record another CPU has reserved and not yet
 *   committed;
 * - when the read did not empty the ring: the newest record read, and the previous look
 *   (a call that began after that look and has ended since may wait in the ring unread).
 * A call in progress longer than HORIZON_WAIT_NS (stuck, or a thread killed in it) holds
 * nothing back any more.
 */
#define HORIZON_SKEW_NS (10ULL * 1000 * 1000)
#define HORIZON_WAIT_NS (2ULL * 1000 * 1000 * 1000)
#define HORIZON_READ_KEPT 64

/* A call by its thread and its entry stamp, which its record carries. */
struct seen_call {
	unsigned int tid;
	unsigned long long ts;
};

struct horizon {
	struct seen_call *seen; /* seen in progress by a look, their records not read yet */
	size_t n_seen, cap_seen;
	/*
	 * The calls whose records were read last. A program sends a call's record and then takes
	 * the call out of the table: a look in between finds a call already read, which must not
	 * hold the order back for HORIZON_WAIT_NS.
	 */
	struct seen_call read[HORIZON_READ_KEPT];
	size_t n_read;
	unsigned long long look;      /* when the current look began */
	unsigned long long prev_look; /* when the one before began */
};

/* A look at the calls in progress begins at @now (CLOCK_MONOTONIC ns). */
void horizon__look(struct horizon *h, unsigned long long now);
/* The look found thread @tid in a call entered at @ts: 0 or -ENOMEM. */
int horizon__saw_call(struct horizon *h, unsigned int tid, unsigned long long ts);
/* A call's record was read (its thread and entry stamp): it holds nothing back any more. */
void horizon__read_call(struct horizon *h, unsigned int tid, unsigned long long ts);
/*
 * After the look and the read: the horizon. @whole: the read emptied the ring; @last_read:
 * the latest send time of a record read so far. Calls seen too long ago are forgotten.
 */
unsigned long long horizon__after_read(struct horizon *h, bool whole, unsigned long long last_read);
void horizon__free(struct horizon *h);

#endif
