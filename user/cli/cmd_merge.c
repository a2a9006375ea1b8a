// SPDX-License-Identifier: GPL-2.0
/* dlscope merge: the traces of several nodes, recorded one per node, as one trace of the job. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cliopt.h"
#include "commands.h"
#include "output.h"
#include "tracemerge.h"

static const struct cliopt_def merge_defs[] = {
	{ .name = "output",
	  .letter = 'o',
	  .arg = "FILE",
	  .value = CLIOPT_FILE,
	  .help = "write there (required; never one of the inputs)" },
	{ .name = "stats", .letter = 's', .help = "say what was merged, on standard error" },
	{},
};

const struct cliopt_cmd merge_cli = {
	.name = "merge",
	.usage = "merge [OPTIONS] -o MERGED.jsonl TRACE.jsonl...",
	.about =
		"Merge the traces that 'dlscope record' wrote on several nodes (one each) into\n"
		"one trace: every time moves to the common wall clock (CLOCK_REALTIME, through\n"
		"each header's realtime_minus_monotonic_ns), every record is labelled with its\n"
		"host (\"host\": PIDs of two hosts are two processes), and the records are merged\n"
		"by time, streaming (memory does not grow with the traces). ui --replay, check,\n"
		"report and export --perfetto read the result. Two traces of one host and one\n"
		"boot are refused (one node recorded twice); a host seen with two boot ids is\n"
		"two hosts, labelled NAME/BOOT.\n",
	.opts = merge_defs,
	.after = "Exit status: 0 written, 2 usage error, 3 an input could not be read or merged,\n"
		 "or the output written.\n",
	.operands = CLIOPT_OP_FILE,
};

int cmd_merge(int argc, char **argv)
{
	const char *output = NULL;
	struct merge_stats st;
	bool stats = false;
	char why[1024];
	struct cliopt cl;
	int c;

	cliopt__init(&cl, &merge_cli, argc, argv);
	while ((c = cliopt__next(&cl)) != -1) {
		switch (c) {
		case 'o': output = cl.arg; break;
		case 's': stats = true; break;
		case 'h': return cliopt__help(&merge_cli);
		default: return DLS_EXIT_USAGE;
		}
	}
	if (!output || !cl.n_ops)
		return cliopt__usage("merge", "give the traces and -o MERGED.jsonl");
	if (trace__merge((const char *const *)cl.ops, (size_t)cl.n_ops, output, &st, why,
			 sizeof(why))) {
		dls_err("merge: %s", why);
		return DLS_EXIT_INSPECT;
	}
	if (stats)
		fprintf(stderr, "%llu records written from %d traces into %s\n",
			(unsigned long long)st.records, argc - optind, output);
	/* A merged trace short of records is no success: a script acting on the status sees it. */
	if (st.bad) {
		dls_err("merge: %llu input line%s no trace record and left out: %s is "
			"incomplete",
			(unsigned long long)st.bad, st.bad == 1 ? " was" : "s were", output);
		return DLS_EXIT_INSPECT;
	}
	return DLS_EXIT_OK;
}
