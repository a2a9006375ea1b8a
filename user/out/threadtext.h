/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_THREADTEXT_H
#define DLSCOPE_THREADTEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

struct stacks;
struct thread_stack;

/*
 * A thread's native frames with each eval frame's Python frames under it ("[py] "), or its
 * Python frames alone (@python_only), as `stacks` prints them for a process or a core.
 */
void thread_stack__print(const struct thread_stack *st, bool python_only, FILE *out);
/* The thread's Python object of the stacks document, or JSON null when it runs no Python. */
json_t *thread_stack__python_json(const struct stacks *s, const struct thread_stack *st);
/*
 * The lock-wait graph's part of the stacks document: its edges, cycles and verdicts appended to
 * the three arrays (@r NULL: none), for a process and a core alike.
 */
struct lockwait_report;
void lockwait_report__to_json(const struct lockwait_report *r, json_t *edges, json_t *cycles,
			      json_t *verdicts);

#endif
