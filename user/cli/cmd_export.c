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

/* --perfetto is long only (-p is a process) and the default: the only format so far. */
static const struct cliopt_def export_defs[] = {
	{ .name = "perfetto",
	  .val = 'P',
	  .help = "Chrome trace-event JSON (the default: the only format)" },
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "write there (default: standard output)" },
	{ .name = "stats", .letter = 's', .help = "say what was converted, on standard error" },
	{},
};

const struct cliopt_cmd export_cli = {
	.name = "export",
	.usage = "export [OPTIONS] TRACE.jsonl",
	.about = "Convert a trace of 'dlscope record' into Chrome trace-event JSON, which\n"
		 "ui.perfetto.dev and chrome://tracing open: a track per process (named with its\n"
		 "rank) and thread; dlopen, dlsym and futex waits as nested slices; GPU module\n"
		 "loads, signals, findings and arriving objects as instants; parallel regions as\n"
		 "counters.\n",
	.opts = export_defs,
	.after = "Exit status: 0 written, 2 usage error, 3 the trace could not be read or the\n"
		 "output written.\n",
	.operands = CLIOPT_OP_FILE,
};

int cmd_export(int argc, char **argv)
{
	const char *output = NULL;
	bool perfetto = false, stats = false;
	struct perfetto_stats st;
	char why[512];
	FILE *out = stdout;
	struct cliopt cl;
	int c, err;

	cliopt__init(&cl, &export_cli, argc, argv);
	while ((c = cliopt__next(&cl)) != -1) {
		switch (c) {
		case 'P': perfetto = true; break;
		case 'o': output = cl.arg; break;
		case 's': stats = true; break;
		case 'h': return cliopt__help(&export_cli);
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
