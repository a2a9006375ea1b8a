/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What check (cmd_check.c) and lint (cmd_lint.c) share: their options, which detectors run, and
 * how a run ends (the JSON document, the exit status).
 */
#ifndef DLSCOPE_CHECK_OPTS_H
#define DLSCOPE_CHECK_OPTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "corecmd.h"

struct cliopt;
struct cliopt_cmd;
struct findings;
struct pkg_cache;

struct check_opts {
	bool json;
	bool progress;
	bool job;	       /* check --job */
	const char *job_node;  /* --job-node JOBID[.STEP]: this node's part of a Slurm job */
	const char *job_relay; /* --job-relay ...: a relay of a Slurm job's fan-in tree */
	unsigned int fanout;   /* --fanout N: nodes one reader of a Slurm job reads; 0: not given */
	bool no_follow;	       /* check --no-follow -- CMD: CMD only, not the processes it runs */
	const char *core; /* check --core FILE -- CMD: a core at its fatal signal, written there */
	struct core_opts read_core; /* check CORE: --exe, --coredump, --ignore-build-id */
	int fail_on;
	const char *only; /* comma-separated detector ids, or NULL for all */
	/* The package databases read so far, shared by the processes of the run (one root each). */
	struct pkg_cache *pkgs;
};

/* Whether detector @id runs (--only); _cb takes the options as a detectors' context. */
bool check_opts__selected(const struct check_opts *o, const char *id);
bool check_opts__selected_cb(const void *ctx, const char *id);
/* --only's list: 0, or -EINVAL after naming the unknown detector. */
int check_opts__validate_only(const char *only);
/* check --list, lint --list: each detector, one line. */
void check_opts__list_detectors(void);
/* The detectors' ids and the severities, in their tables' order: completion's words. */
const char *check_opts__detector_word(size_t i);
const char *check_opts__level_word(size_t i);
/*
 * The options check and lint share, in their option tables (cliopt.h). Long only: -f follows,
 * -o writes, -P is --no-packages elsewhere.
 */
#define CHECK_OPTS_SHARED_DEFS                                                                     \
	{ .name = "fail-on",                                                                       \
	  .val = 'f',                                                                              \
	  .arg = "LEVEL",                                                                          \
	  .value = CLIOPT_WORDS,                                                                   \
	  .word = check_opts__level_word,                                                          \
	  .help = "exit 1 when a finding at or above LEVEL (info, warning, error; default error) " \
		  "is found" },                                                                    \
		{ .name = "only",                                                                  \
		  .val = 'o',                                                                      \
		  .arg = "IDS",                                                                    \
		  .value = CLIOPT_WORDS,                                                           \
		  .word = check_opts__detector_word,                                               \
		  .help = "run only these detectors (comma-separated)" },                          \
		{ .name = "list", .letter = 'l', .help = "list the detectors" },                   \
	{                                                                                          \
		.name = "progress", .val = 'P',                                                    \
		.help = "a progress line on stderr (default when it is a terminal)"                \
	}
/*
 * The options of check and lint, @def's (lint has no -p, --job or command). Returns -1 to go
 * on, or the exit status (DLS_EXIT_OK + 100 after --help).
 */
int check_opts__parse(int argc, char **argv, struct check_opts *o, const struct cliopt_cmd *def,
		      bool *list, struct cliopt *cl, pid_t **pids, size_t *n_pids,
		      size_t *cap_pids);
/*
 * Print @doc (when not NULL) with its version and errors, and return the exit status: the most
 * severe of a finding at or above --fail-on (1) and a process or path not read (3).
 */
int check_opts__finish(const struct findings *fs, const struct check_opts *o, json_t *doc,
		       bool inspect_failed);

#endif
