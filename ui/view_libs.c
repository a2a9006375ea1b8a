// SPDX-License-Identifier: GPL-2.0
/* The libraries view: the selected process's graph as a foldable tree, roles, collisions. */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "tui.h"

static bool is_collapsed(void *ctx, const char *path)
{
	const struct ui *ui = ctx;

	for (size_t i = 0; i < ui->n_collapsed; i++)
		if (!strcmp(ui->collapsed[i], path))
			return true;
	return false;
}

static void set_collapsed(struct ui *ui, const char *path, bool fold)
{
	for (size_t i = 0; i < ui->n_collapsed; i++)
		if (!strcmp(ui->collapsed[i], path)) {
			if (!fold) {
				free(ui->collapsed[i]);
				ui->collapsed[i] = ui->collapsed[--ui->n_collapsed];
			}
			return;
		}
	if (!fold)
		return;
	if (ARRAY_RESERVE(ui->collapsed, ui->cap_collapsed, ui->n_collapsed + 1))
		return;
	ui->collapsed[ui->n_collapsed] = strdup(path);
	if (ui->collapsed[ui->n_collapsed])
		ui->n_collapsed++;
}

static void libs_rows(struct ui *ui, struct rows *out)
{
	const struct m_proc *p = ui__proc(ui);
	struct lib_row *tree = NULL;
	size_t collisions = 0;
	ssize_t n;

	if (!p) {
		rows__add(out, C_DIM, -1, "no process yet");
		return;
	}
	for (size_t i = 0; i < p->n_libs; i++)
		collisions += p->libs[i].collision;
	/* No collision, no count: "(churn)0" was the 0 printed anyway. */
	if (collisions)
		rows__add(out, C_HEADER, -1,
			  "%zu objects in process %d (%s): %zu hold a runtime another object also "
			  "holds (marked !!)",
			  p->n_libs, p->pid, p->comm, collisions);
	else
		rows__add(out, C_HEADER, -1, "%zu objects in process %d (%s)", p->n_libs, p->pid,
			  p->comm);
	n = model__lib_tree(p, is_collapsed, ui, &tree);
	for (ssize_t i = 0; i < n; i++) {
		const struct m_lib *l = &p->libs[tree[i].lib];
		char roles[256] = "", indent[40] = "", more[48] = "", origin[48];
		size_t len = 0;

		for (unsigned int d = 0; d < tree[i].depth && d < 12; d++)
			strcat(indent, "  ");
		for (size_t r = 0; r < l->n_roles && len < sizeof(roles); r++)
			len += (size_t)snprintf(roles + len, sizeof(roles) - len, "%s%s",
						r ? "; " : "  [", l->roles[r].label);
		if (l->n_roles && len < sizeof(roles) - 1)
			strcat(roles, "]");
		/* Namespace 0 is the default one: not worth a word. */
		if (l->ns)
			snprintf(origin, sizeof(origin), "%s, namespace %u", l->origin, l->ns);
		else
			snprintf(origin, sizeof(origin), "%s", l->origin);
		if (tree[i].other_parents)
			snprintf(more, sizeof(more), "  (+%zu more needing it)",
				 tree[i].other_parents);
		rows__add(out, l->collision ? C_COLLISION : C_NORMAL, (long)tree[i].lib,
			  "%s%s%s %s (%s)%s%s%s", l->collision ? "!! " : "   ", indent,
			  tree[i].has_children ? (tree[i].collapsed ? "[+]" : "[-]") : " - ",
			  l->path, origin, roles, more, l->collision ? "  COLLISION" : "");
	}
	free(tree);
}

static enum key_result libs_key(struct ui *ui, int ch, const struct row *sel)
{
	const struct m_proc *p = ui__proc(ui);
	const struct m_lib *l;

	if (!p || !sel || sel->ref < 0 || (size_t)sel->ref >= p->n_libs)
		return KEY_IGNORED;
	l = &p->libs[sel->ref];
	switch (ch) {
	case '\n':
	case KEY_ENTER:
	case ' ': set_collapsed(ui, l->path, !is_collapsed(ui, l->path)); return KEY_HANDLED;
	case KEY_LEFT:
	case 'h': set_collapsed(ui, l->path, true); return KEY_HANDLED;
	case KEY_RIGHT:
	case 'l': set_collapsed(ui, l->path, false); return KEY_HANDLED;
	}
	return KEY_IGNORED;
}

const struct view view_libs = {
	.name = "Libraries",
	.rows = libs_rows,
	.key = libs_key,
};
