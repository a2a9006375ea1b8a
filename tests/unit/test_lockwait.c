// SPDX-License-Identifier: GPL-2.0
/* Cycle finding in lock-wait graphs built by hand. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lockwait.h"
#include "tap.h"

static struct lockwait_report *graph(const pid_t *tids, size_t n, const pid_t (*edges)[2],
				     size_t ne)
{
	struct lockwait_report *r = calloc(1, sizeof(*r));

	r->threads = calloc(n, sizeof(*r->threads));
	r->n_threads = n;
	for (size_t i = 0; i < n; i++)
		r->threads[i].tid = tids[i];
	r->edges = calloc(ne ? ne : 1, sizeof(*r->edges));
	r->n_edges = ne;
	for (size_t i = 0; i < ne; i++) {
		r->edges[i].from = edges[i][0];
		r->edges[i].to = edges[i][1];
		r->edges[i].kind = WAIT_MUTEX;
	}
	return r;
}

static bool cycle_is(const struct lockwait_report *r, size_t c, const pid_t *want, size_t n)
{
	if (r->cycle_len[c] != n + 1 || r->cycles[c][0] != r->cycles[c][n])
		return false;
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t k = 0; k < n; k++)
			found |= r->cycles[c][k] == want[i];
		if (!found)
			return false;
	}
	return true;
}

int main(void)
{
	const pid_t t3[] = { 10, 11, 12 };
	const pid_t abba[][2] = { { 10, 11 }, { 11, 10 } };
	const pid_t chain[][2] = { { 10, 11 }, { 11, 12 } };
	const pid_t ring[][2] = { { 10, 11 }, { 11, 12 }, { 12, 10 } };
	const pid_t t5[] = { 1, 2, 3, 4, 5 };
	const pid_t two[][2] = { { 1, 2 }, { 2, 1 }, { 3, 4 }, { 4, 5 }, { 5, 3 }, { 1, 3 } };
	struct lockwait_report *r;

	r = graph(t3, 3, abba, 2);
	CHECK(lockwait__find_cycles(r) == 0 && r->n_cycles == 1, "ABBA is one cycle");
	CHECK(r->n_cycles == 1 && cycle_is(r, 0, (pid_t[]){ 10, 11 }, 2), "of threads 10 and 11");
	lockwait__free(r);

	r = graph(t3, 3, chain, 2);
	CHECK(lockwait__find_cycles(r) == 0 && r->n_cycles == 0, "a chain of waits is no cycle");
	lockwait__free(r);

	r = graph(t3, 3, ring, 3);
	CHECK(lockwait__find_cycles(r) == 0 && r->n_cycles == 1 &&
		      cycle_is(r, 0, (pid_t[]){ 10, 11, 12 }, 3),
	      "a three-thread ring");
	CHECK(r->n_cycles == 1 && r->cycles[0][1] == 11 && r->cycles[0][2] == 12,
	      "listed in wait order");
	lockwait__free(r);

	r = graph(t5, 5, two, 6);
	CHECK(lockwait__find_cycles(r) == 0 && r->n_cycles == 2, "two separate cycles");
	lockwait__free(r);

	r = graph(t3, 3, NULL, 0);
	CHECK(lockwait__find_cycles(r) == 0 && r->n_cycles == 0, "no edges, no cycle");
	lockwait__free(r);
	return tap_done();
}
