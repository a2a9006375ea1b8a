// SPDX-License-Identifier: GPL-2.0
/* The processes view: the process tree, ranks from the environment, counts per process. */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static size_t findings_of(const struct model *m, pid_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n_findings; i++)
		n += m->findings[i].pid == pid;
	return n;
}

static size_t collisions_of(const struct m_proc *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_libs; i++)
		n += p->libs[i].collision;
	return n;
}

static void procs_rows(struct ui *ui, struct rows *out)
{
	size_t *order = NULL;
	unsigned int *depth = NULL;
	ssize_t n = model__proc_tree(ui->m, &order, &depth);
	bool ranks = false;
	char rank[96];

	/* RANK and LOCAL only for a job: at 80 columns COMMAND keeps the room. */
	for (size_t i = 0; i < ui->m->n_procs; i++)
		ranks |= ui->m->procs[i].rank[0] || ui->m->procs[i].local_rank[0];
	rank[0] = '\0';
	if (ranks)
		snprintf(rank, sizeof(rank), "%-5s %-6s ", "RANK", "LOCAL");
	rows__add(out, C_HEADER, -1, "%-8s %-8s %s%7s %5s %7s %8s  %s", "PID", "PPID", rank,
		  "EVENTS", "LIBS", "THREADS", "FINDINGS", "COMMAND");
	for (ssize_t i = 0; i < n; i++) {
		const struct m_proc *p = &ui->m->procs[order[i]];
		size_t nf = findings_of(ui->m, p->pid), nc = collisions_of(p);
		char indent[64] = "";
		char threads[16] = "-", ppid[16] = "-", where[160];

		for (unsigned int d = 0; d < depth[i] && d < 15; d++)
			strcat(indent, d + 1 == depth[i] ? "`- " : "   ");
		if (p->ppid)
			snprintf(ppid, sizeof(ppid), "%d", p->ppid);
		if (p->threads_known)
			snprintf(threads, sizeof(threads), "%zu", p->n_threads);
		/* As its namespace numbers it, and its container: "  [pid 1, docker 3f2a..]". */
		where[0] = '\0';
		if (p->ns_pid || p->container[0])
			snprintf(where, sizeof(where), "  [%s%.0d%s%s]", p->ns_pid ? "pid " : "",
				 p->ns_pid, p->ns_pid && p->container[0] ? ", " : "", p->container);
		if (ranks)
			snprintf(rank, sizeof(rank), "%-5s %-6s ", p->rank[0] ? p->rank : "-",
				 p->local_rank[0] ? p->local_rank : "-");
		rows__add(out,
			  nf || nc  ? C_COLLISION :
			  p->exited ? C_DIM :
				      C_NORMAL,
			  p->pid, "%-8d %-8s %s%7llu %5zu %7s %8zu  %s%s%s%s%s", p->pid, ppid, rank,
			  (unsigned long long)p->n_events, p->n_libs, threads, nf, indent,
			  p->comm[0] ? p->comm : "?", p->exited ? " (exited)" : "", where,
			  nc ? "  !! runtime collision" : "");
	}
	if (!n)
		rows__add(out, C_DIM, -1, "no process yet");
	free(order);
	free(depth);
}

static enum key_result procs_key(struct ui *ui, int ch, const struct row *sel)
{
	if (!sel || sel->ref < 0)
		return KEY_IGNORED;
	if (ch == 0) {
		ui->pid = (pid_t)sel->ref;
		return KEY_HANDLED;
	}
	if (ch == '\n' || ch == KEY_ENTER) {
		ui->pid = (pid_t)sel->ref;
		ui->view = VIEW_LIBS;
		return KEY_HANDLED;
	}
	if (ch == 'r' && ui->src != SRC_REPLAY) {
		ui__request_snapshot(ui, (pid_t)sel->ref);
		return KEY_HANDLED;
	}
	return KEY_IGNORED;
}

const struct view view_procs = {
	.name = "Processes",
	.rows = procs_rows,
	.key = procs_key,
};
