// SPDX-License-Identifier: GPL-2.0
/* dlscope export: a recorded trace in a format other tools open (Perfetto, chrome://tracing). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cliopt.h"
#include "commands.h"
#include "outfile.h"
#include "output.h"
#include "perfetto.h"

static void export_usage(FILE *f)
{
	fprintf(f,
		"Usage: dlscope export [OPTIONS] TRACE.jsonl\n"
		"\n"
		"Convert a trace of 'dlscope record' into Chrome trace-event JSON, which\n"
		"ui.perfetto.dev and chrome://tracing open: a track per process (named with its\n"
		"rank) and thread; dlopen, dlsym and futex waits as nested slices; GPU module\n"
		"loads, signals, findings and arriving objects as instants; parallel regions as\n"
		"counters.\n"
		"\n"
		"      --perfetto        Chrome trace-event JSON (the default: the only format)\n"
		"  -o, --output FILE     write there (default: standard output)\n"
		"  -s, --stats           say what was converted, on standard error\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 written, 2 usage error, 3 the trace could not be read or the\n"
		"output written.\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "perfetto", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *output = NULL;
	bool perfetto = false, stats = false;
	struct perfetto_stats st;
	char why[512];
	FILE *out = stdout;
	struct cliopt cl;
	int c, err;

	/* --perfetto is long only (-p is a process) and the default: the only format so far. */
	cliopt__init(&cl, "export", argc, argv, "o:sh", opts, false);
	while ((c = cliopt__next(&cl)) != -1) {
		switch (c) {
		case 'P': perfetto = true; break;
		case 'o': output = cl.arg; break;
		case 's': stats = true; break;
		case 'h': export_usage(stdout); return DLS_EXIT_OK;
		default: return DLS_EXIT_USAGE;
		}
	}
	(void)perfetto;
	if (cl.n_ops != 1)
		return cliopt__usage("export", "give one trace");
	if (output && !(out = outfile__fopen("export", output, why, sizeof(why)))) {
		dls_err("export: %s", why);
		return DLS_EXIT_INSPECT;
	}
	err = perfetto__export(cl.ops[0], out, &st, why, sizeof(why));
	if (output && fclose(out) && !err) {
		err = -EIO;
		snprintf(why, sizeof(why), "cannot write %s: %s", output, strerror(errno));
	}
	if (err) {
		if (output)
			remove(output); /* no half-written file left behind */
		dls_err("export: %s", why);
		return DLS_EXIT_INSPECT;
	}
	if (stats)
		fprintf(stderr,
			"%llu records read, %llu trace events written, %llu records skipped, %llu "
			"processes\n",
			(unsigned long long)st.records, (unsigned long long)st.events,
			(unsigned long long)st.skipped, (unsigned long long)st.processes);
	return DLS_EXIT_OK;
}
