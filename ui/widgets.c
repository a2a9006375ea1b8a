// SPDX-License-Identifier: GPL-2.0
/*
 * What views draw with and ask through: rows, wrapped text, colours, the status line, boxes and
 * prompts. Apart from the loop (tui.c) so that views depend on these and the loop on the views,
 * never round.
 */
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "tui.h"

void rows__add(struct rows *rs, enum ui_color color, long ref, const char *fmt, ...)
{
	va_list ap;

	if (rs->n == rs->cap) {
		if (ARRAY_GROW(rs->r, rs->cap, 64))
			return;
	}
	va_start(ap, fmt);
	vsnprintf(rs->r[rs->n].text, sizeof(rs->r[rs->n].text), fmt, ap);
	va_end(ap);
	rs->r[rs->n].color = color;
	rs->r[rs->n].ref = ref;
	rs->n++;
}

size_t wrap_cut(const char *s, size_t width)
{
	size_t len = strcspn(s, "\n"), cut;

	if (len <= width)
		return len;
	for (cut = width; cut > width / 2 && s[cut] != ' '; cut--)
		;
	return cut > width / 2 ? cut : width;
}

void rows__add_wrapped(struct rows *rs, enum ui_color color, long ref, int width, const char *first,
		       const char *cont, const char *text)
{
	const char *prefix = first;

	do {
		size_t room = width > (int)strlen(prefix) + 10 ? (size_t)width - strlen(prefix) :
								 40;
		size_t cut = wrap_cut(text, room > sizeof(rs->r[0].text) - 80 ?
						    sizeof(rs->r[0].text) - 80 :
						    room);

		rows__add(rs, color, ref, "%s%.*s", prefix, (int)cut, text);
		text += cut;
		while (*text == ' ' || *text == '\n')
			text++;
		prefix = cont;
	} while (*text);
}

void ui__status(struct ui *ui, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ui->status, sizeof(ui->status), fmt, ap);
	va_end(ap);
	ui->status_error = error;
	ui->status_gen++;
}

struct m_proc *ui__proc(struct ui *ui)
{
	struct m_proc *p = ui->pid ? model__proc(ui->m, ui->pid) : NULL;

	if (!p && ui->m->n_procs) {
		p = &ui->m->procs[0];
		ui->pid = p->pid;
	}
	return p;
}

void ui__popup(struct ui *ui, const char *title, const char *text)
{
	free(ui->popup_text);
	ui->popup_text = strdup(text ? text : "");
	snprintf(ui->popup_title, sizeof(ui->popup_title), "%s", title);
	ui->popup_top = 0;
	ui->popup_lines = 0;
}

void ui__prompt(struct ui *ui, const char *label, void (*done)(struct ui *ui, const char *text))
{
	ui->prompting = true;
	snprintf(ui->prompt_label, sizeof(ui->prompt_label), "%s", label);
	ui->prompt_buf[0] = '\0';
	ui->on_prompt = done;
}

int ui__attr(const struct ui *ui, enum ui_color c)
{
	static const int mono[C__COUNT] = {
		[C_NORMAL] = A_NORMAL,
		[C_TITLE] = A_REVERSE | A_BOLD,
		[C_HEADER] = A_BOLD,
		[C_COLLISION] = A_BOLD | A_UNDERLINE,
		[C_CYCLE] = A_BOLD | A_UNDERLINE,
		[C_WARN] = A_BOLD,
		[C_DIM] = A_DIM,
		[C_STATUS] = A_REVERSE,
		[C_ERROR] = A_BOLD,
	};

	if (!ui->colors)
		return mono[c];
	return COLOR_PAIR(c) | (c == C_COLLISION || c == C_CYCLE || c == C_HEADER ? A_BOLD : 0);
}

void ui__addnstr(WINDOW *win, int y, int x, const char *s, int n)
{
	char clean[1024];
	int i;

	/* Names come from processes: a "\r\n" in a comm or path must not move the cursor. */
	for (i = 0; i < n && i < (int)sizeof(clean) - 1 && s[i]; i++)
		clean[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	clean[i] = '\0';
	mvwaddnstr(win, y, x, clean, i);
}

void ui__request_snapshot(struct ui *ui, pid_t pid)
{
	ui->snapshot_pid = pid;
}
