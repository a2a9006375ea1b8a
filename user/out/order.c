// SPDX-License-Identifier: GPL-2.0
/* Records put back in time order (order.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "order.h"

int order__push(struct order_queue *q, uint64_t t, void *p)
{
	size_t i;

	if (!t)
		t = q->last_t;
	else if (t > q->last_t)
		q->last_t = t;
	if (q->n == q->cap && ARRAY_GROW(q->v, q->cap, 64))
		return -ENOMEM;
	/* Mostly the newest: found from the end. */
	for (i = q->n; i > 0 && q->v[i - 1].t > t; i--)
		;
	memmove(&q->v[i + 1], &q->v[i], (q->n - i) * sizeof(*q->v));
	q->v[i] = (struct order_item){ t, q->seq++, p };
	q->n++;
	return 0;
}

void order__release(struct order_queue *q, uint64_t horizon, void (*out)(void *ctx, void *p),
		    void *ctx)
{
	size_t k = 0;

	while (k < q->n && q->v[k].t <= horizon)
		out(ctx, q->v[k++].p);
	if (!k)
		return;
	memmove(q->v, &q->v[k], (q->n - k) * sizeof(*q->v));
	q->n -= k;
}

void order__free(struct order_queue *q)
{
	free(q->v);
	*q = (struct order_queue){ 0 };
}
