// SPDX-License-Identifier: GPL-2.0
/* The options and the end of a run that check and lint share (check_opts.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_opts.h"
#include "cliopt.h"
#include "commands.h"
#include "detector.h"
#include "output.h"
#include "version.h"

bool check_opts__selected(const struct check_opts *o, const char *id)
{
	const char *p = o->only;
	size_t len = strlen(id);

	if (!p)
		return true;
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, id, n))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

bool check_opts__selected_cb(const void *ctx, const char *id)
{
	return check_opts__selected(ctx, id);
}

int check_opts__validate_only(const char *only)
{
	const char *p = only;

	while (*p) {
		size_t n = strcspn(p, ",");
		bool known = false;

		for (size_t i = 0; i < n_detectors && !known; i++)
			known = strlen(detectors[i].id) == n && !strncmp(detectors[i].id, p, n);
		if (!known) {
			dls_err("unknown detector '%.*s' (see 'dlscope check --list')", (int)n, p);
			return -EINVAL;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

void check_opts__list_detectors(void)
{
	for (size_t i = 0; i < n_detectors; i++)
		printf("%-20s %s%s\n", detectors[i].id, detectors[i].summary,
		       detectors[i].files ? " (also lint)" : "");
}

const char *check_opts__detector_word(size_t i)
{
	return i < n_detectors ? detectors[i].id : NULL;
}

const char *check_opts__level_word(size_t i)
{
	return i <= SEV_ERROR - SEV_INFO ? severity__name((enum severity)(SEV_INFO + i)) : NULL;
}

int check_opts__parse(int argc, char **argv, struct check_opts *o, const struct cliopt_cmd *def,
		      bool *list, struct cliopt *cl, pid_t **pids, size_t *n_pids, size_t *cap_pids)
{
	const char *cmd = def->name;
	bool lint = !strcmp(cmd, "lint");
	int c, err;

	o->fail_on = SEV_ERROR;
	o->progress = isatty(STDERR_FILENO);
	cliopt__init(cl, def, argc, argv);
	while ((c = cliopt__next(cl)) != -1) {
		const char *arg = cl->arg;

		if (!lint && core_opts__take(&o->read_core, c, arg))
			continue;
		switch (c) {
		case 'p':
			err = cliopt__pids(cmd, arg, pids, n_pids, cap_pids);
			if (err)
				return err;
			break;
		case 'j': o->json = true; break;
		case 'f':
			o->fail_on = severity__parse(arg);
			if (o->fail_on < 0)
				return cliopt__usage(
					cmd, "--fail-on takes info, warning or error, not '%s'",
					arg);
			break;
		case 'o':
			o->only = arg;
			if (check_opts__validate_only(arg))
				return DLS_EXIT_USAGE;
			break;
		case 'l': *list = true; break;
		case 'J': o->job = true; break;
		case 'D': o->job_node = arg; break;
		case 'L': o->job_relay = arg; break;
		case 'F':
			err = cliopt__fanout(cmd, arg, &o->fanout);
			if (err)
				return err;
			break;
		case 'N': o->no_follow = true; break;
		case 'C': o->core = arg; break;
		case 'P': o->progress = true; break;
		case 'h': cliopt__help(def); return DLS_EXIT_OK + 100;
		default: return DLS_EXIT_USAGE;
		}
	}
	output__set_json(o->json);
	return -1;
}

int check_opts__finish(const struct findings *fs, const struct check_opts *o, json_t *doc,
		       bool inspect_failed)
{
	int ret;

	if (doc) {
		json_object_set_new(doc, "dlscope", json_string(DLSCOPE_VERSION));
		json_object_set_new(doc, "errors", output__errors_json());
		if (json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
			inspect_failed = true;
		putchar('\n');
		json_decref(doc);
	}
	/*
	 * The most severe outcome: a finding at or above --fail-on (1) is a result about the
	 * processes that were read, which a process or path that could not be (3) must not hide.
	 */
	if (findings__max_severity(fs) >= o->fail_on)
		ret = DLS_EXIT_FINDINGS;
	else
		ret = inspect_failed ? DLS_EXIT_INSPECT : DLS_EXIT_OK;
	return ret;
}
