/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Records put back in time order before they are written. Events reach the collector out of
 * their order by a little (one ring for every CPU, stamped before they are committed) and by a
 * lot (a dlopen is sent at its return, stamped with its entry, after what its constructors
 * did); the collector says up to which time nothing older can still come (the horizon), and a
 * sink holds its records until then.
 */
#ifndef DLSCOPE_ORDER_H
#define DLSCOPE_ORDER_H

#include <stddef.h>
#include <stdint.h>

struct order_item {
	uint64_t t, seq;
	void *p;
};

struct order_queue {
	struct order_item *v; /* by (t, seq) */
	size_t n, cap;
	uint64_t seq;
	uint64_t last_t; /* the latest stamp pushed: for records with none of their own */
};

/*
 * @p stamped @t (0: the latest stamp pushed, so that it follows its cause), after the records
 * of the same stamp; -ENOMEM when it could not be queued (the caller writes it at once).
 */
int order__push(struct order_queue *q, uint64_t t, void *p);
/* Each record stamped at or before @horizon, oldest first, to @out; UINT64_MAX: every one. */
void order__release(struct order_queue *q, uint64_t horizon, void (*out)(void *ctx, void *p),
		    void *ctx);
void order__free(struct order_queue *q);

#endif
