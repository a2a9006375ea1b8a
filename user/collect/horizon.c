// SPDX-License-Identifier: GPL-2.0
/* The stream's time order: how far the ordered sinks may write (horizon.h). */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "horizon.h"

void horizon__look(struct horizon *h, unsigned long long now)
{
	h->prev_look = h->look ? h->look : now;
	h->look = now;
}

/* A few calls are in progress at a time: a scan is cheaper than a table. */
static struct seen_call *find(struct seen_call *v, size_t n, unsigned int tid,
			      unsigned long long ts)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].tid == tid && v[i].ts == ts)
			return &v[i];
	return NULL;
}

int horizon__saw_call(struct horizon *h, unsigned int tid, unsigned long long ts)
{
	/* Not yet stamped (its program is between the table's update and the stamp), or stuck:
	 * the look's own time covers the first, the second holds nothing back. */
	if (!ts || ts > h->look || h->look - ts >= HORIZON_WAIT_NS ||
	    find(h->seen, h->n_seen, tid, ts) ||
	    find(h->read, h->n_read < HORIZON_READ_KEPT ? h->n_read : HORIZON_READ_KEPT, tid, ts))
		return 0;
	if (h->n_seen == h->cap_seen && ARRAY_GROW(h->seen, h->cap_seen, 16))
		return -ENOMEM;
	h->seen[h->n_seen++] = (struct seen_call){ tid, ts };
	return 0;
}

void horizon__read_call(struct horizon *h, unsigned int tid, unsigned long long ts)
{
	struct seen_call *c = find(h->seen, h->n_seen, tid, ts);

	if (c)
		*c = h->seen[--h->n_seen];
	h->read[h->n_read++ % HORIZON_READ_KEPT] = (struct seen_call){ tid, ts };
}

static unsigned long long min_ull(unsigned long long a, unsigned long long b)
{
	return a < b ? a : b;
}

unsigned long long horizon__after_read(struct horizon *h, bool whole, unsigned long long last_read)
{
	unsigned long long before = h->look;

	for (size_t i = 0; i < h->n_seen;) {
		if (h->look - h->seen[i].ts >= HORIZON_WAIT_NS) {
			h->seen[i] = h->seen[--h->n_seen];
			continue;
		}
		before = min_ull(before, h->seen[i++].ts);
	}
	if (!whole)
		before = min_ull(before, min_ull(last_read, h->prev_look));
	return before > HORIZON_SKEW_NS ? before - HORIZON_SKEW_NS : 0;
}

void horizon__free(struct horizon *h)
{
	free(h->seen);
	*h = (struct horizon){ 0 };
}
