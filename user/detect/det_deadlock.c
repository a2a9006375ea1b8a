// SPDX-License-Identifier: GPL-2.0
/* deadlock: every cycle of the lock-wait graph, with the verdict of dlscope stacks. */
#include <stdio.h>

#include "detector.h"
#include "libgraph.h"
#include "lockwait.h"
#include "target.h"

void deadlock__process(const struct check_ctx *ctx, struct findings *out)
{
	struct lockwait_report *own = NULL;
	const struct lockwait_report *r = ctx->lw;

	if (!r && (!ctx->ts || lockwait__analyze(ctx->t, ctx->g, ctx->ts, &own)))
		return;
	if (!r)
		r = own;
	for (size_t c = 0; c < r->n_cycles; c++) {
		struct finding *f = findings__add(out, "deadlock", SEV_ERROR, ctx->g->pid,
						  "%zu threads of process %d (%s) wait for each other",
						  r->cycle_len[c] - 1, ctx->g->pid, ctx->g->comm);

		for (size_t k = 0; k + 1 < r->cycle_len[c]; k++)
			for (size_t e = 0; e < r->n_edges; e++)
				if (r->edges[e].from == r->cycles[c][k] &&
				    r->edges[e].to == r->cycles[c][k + 1]) {
					finding__evidence(f, "thread %d waits for thread %d: %s (%s)",
							  r->edges[e].from, r->edges[e].to,
							  r->edges[e].what,
							  wait_kind__id(r->edges[e].kind));
					break;
				}
		finding__explain(f, r->verdicts[c], r->remedies[c]);
	}
	lockwait__free(own);
}
