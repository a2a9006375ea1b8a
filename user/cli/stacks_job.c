// SPDX-License-Identifier: GPL-2.0
/* stacks --job's ranks read side by side, merged and said (stacks_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "commands.h"
#include "output.h"
#include "stacks_job.h"

/*
 * stacks --job: each rank is read by a forked worker of its own, which seizes, stops, copies and
 * releases that one process (ptrace answers only the thread that seized, and libdwfl's state is
 * per process here) and hands its `stacks --json` document back through a pipe. Workers run
 * side by side, a few per CPU; a worker that dies or overruns leaves nothing stopped
 * (PTRACE_SEIZE) and its rank is reported unreadable.
 */
#define JOB_WORKER_DEADLINE_MS 30000

struct rank_worker {
	pid_t pid; /* the worker; 0 before it starts and after it is reaped */
	int fd;
	char *buf;
	size_t len, cap;
	bool done;
	struct timespec started;
};

double stacks_job__ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

/* In the worker: one rank's document, or {"error": why}, written to @fd. */
static void __attribute__((noreturn))
rank_worker_main(pid_t pid, const struct stacks_job_opts *o, int fd)
{
	json_t *doc = o->rank_doc(pid, o->python_only, o->max_frames);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	for (size_t off = 0, len = text ? strlen(text) : 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	_exit(text ? 0 : 1);
}

static int start_worker(struct rank_worker *w, pid_t pid, const struct stacks_job_opts *o)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	w->pid = fork();
	if (w->pid < 0) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		w->pid = 0;
		return err;
	}
	if (!w->pid) {
		close(fds[0]);
		rank_worker_main(pid, o, fds[1]);
	}
	close(fds[1]);
	w->fd = fds[0];
	clock_gettime(CLOCK_MONOTONIC, &w->started);
	return 0;
}

/* Read what a worker wrote; on EOF (or its deadline) reap it. */
static void drain_worker(struct rank_worker *w, bool timed_out)
{
	if (!timed_out) {
		if (w->cap - w->len < 65536 && ARRAY_GROW(w->buf, w->cap, 262144))
			timed_out = true;
		if (!timed_out) {
			ssize_t n = read(w->fd, w->buf + w->len, w->cap - w->len - 1);

			if (n > 0) {
				w->len += (size_t)n;
				return;
			}
			if (n < 0 && errno == EINTR)
				return;
		}
	}
	if (timed_out)
		kill(w->pid, SIGKILL);
	close(w->fd);
	waitpid(w->pid, NULL, 0);
	if (w->buf)
		w->buf[w->len] = '\0';
	w->pid = 0;
	w->done = true;
}

/* Every rank's document into @rs (doc or error), at most @par workers at a time. */
static void read_ranks(const struct job *j, struct rank_stacks *rs, char **errs,
		       const struct stacks_job_opts *o, size_t par)
{
	struct rank_worker *w = calloc(j->n, sizeof(*w));
	struct pollfd *pfd = calloc(j->n, sizeof(*pfd));
	size_t next = 0, done = 0;

	if (!w || !pfd) {
		for (size_t i = 0; i < j->n; i++)
			errs[i] = strdup("out of memory");
		free(w);
		free(pfd);
		return;
	}
	while (done < j->n) {
		size_t running = 0, np = 0;
		size_t idx[j->n];

		for (size_t i = 0; i < j->n; i++)
			running += w[i].pid != 0;
		while (running < par && next < j->n) {
			int err = start_worker(&w[next], j->ranks[next].pid, o);

			if (err) {
				w[next].done = true;
				if (asprintf(&errs[next], "cannot start a reader: %s",
					     strerror(-err)) < 0)
					errs[next] = NULL;
				done++;
			} else {
				running++;
			}
			next++;
		}
		for (size_t i = 0; i < j->n; i++)
			if (w[i].pid) {
				pfd[np] = (struct pollfd){ .fd = w[i].fd, .events = POLLIN };
				idx[np++] = i;
			}
		if (!np)
			continue;
		if (poll(pfd, np, 100) < 0 && errno != EINTR)
			break;
		for (size_t k = 0; k < np; k++) {
			struct rank_worker *x = &w[idx[k]];
			bool late = stacks_job__ms_since(&x->started) > JOB_WORKER_DEADLINE_MS;

			if (pfd[k].revents || late) {
				drain_worker(x, late && !pfd[k].revents);
				if (x->done)
					done++;
			}
		}
	}
	for (size_t i = 0; i < j->n; i++) {
		json_error_t jerr;
		json_t *doc;

		if (errs[i])
			continue;
		doc = w[i].len ? json_loadb(w[i].buf, w[i].len, 0, &jerr) : NULL;
		if (!doc) {
			errs[i] =
				strdup("its reader ended without a result (killed, or over 30 s)");
		} else if (json_is_string(json_object_get(doc, "error"))) {
			errs[i] = strdup(json_string_value(json_object_get(doc, "error")));
			json_decref(doc);
		} else {
			rs[i].doc = doc;
		}
		rs[i].error = errs[i];
		free(w[i].buf);
	}
	free(w);
	free(pfd);
}

/* The "ranks" of stacks --job: each rank's threads, stop time, deadlock or error. */
static json_t *rank_table(const struct job *j, const struct rank_stacks *rs, char **errs,
			  bool *deadlock, bool *unreadable)
{
	json_t *ranks = json_array();

	for (size_t i = 0; i < j->n; i++) {
		const json_t *d = rs[i].doc;
		bool cyc = d && json_array_size(json_object_get(d, "cycles"));
		bool forever = d && json_is_true(json_object_get(d, "never_ends"));

		*deadlock |= cyc || forever;
		*unreadable |= !d;
		json_array_append_new(
			ranks,
			json_pack(
				"{s:i, s:i, s:o, s:s, s:i, s:o, s:b, s:o}", "rank",
				j->ranks[i].rank, "pid", j->ranks[i].pid, "local_rank",
				j->ranks[i].local_rank >= 0 ? json_integer(j->ranks[i].local_rank) :
							      json_null(),
				"comm", j->ranks[i].comm, "threads",
				d ? (int)json_array_size(json_object_get(d, "threads")) : 0,
				"stopped_ms",
				d ? json_deep_copy(json_object_get(d, "stopped_ms")) : json_null(),
				"deadlock", cyc, "error",
				errs[i] ? json_string(errs[i]) : json_null()));
		json_object_set_new(json_array_get(ranks, i), "never_ends", json_boolean(forever));
		if (j->ranks[i].node[0])
			json_object_set_new(json_array_get(ranks, i), "node",
					    json_string(j->ranks[i].node));
	}
	return ranks;
}

/* stacks --job's text: the job, each rank, the verdict and the merged stacks. */
static void print_job_text(const struct job *j, const json_t *ranks, const json_t *merged,
			   char **errs, const json_t *fan_in, bool stats, double wall_ms)
{
	char desc[128];
	const json_t *r;
	size_t i;

	job__describe_ranks(j, desc, sizeof(desc));
	if (j->slurm_job > 0 && j->asked > 0)
		printf("Slurm job %ld step %d (%s): %s on %s; %d is %s\n", j->slurm_job,
		       j->slurm_step, job_scheme__name(j->scheme), desc, j->nodes, j->asked,
		       j->asked_role);
	else if (j->slurm_job > 0)
		printf("Slurm job %ld step %d (%s): %s on %s\n", j->slurm_job, j->slurm_step,
		       job_scheme__name(j->scheme), desc, j->nodes);
	else
		printf("%s job: launcher %d (%s: %s), %s; %d is %s\n", job_scheme__name(j->scheme),
		       j->launcher, j->launcher_comm, j->launcher_cmd, desc, j->asked,
		       j->asked_role);
	json_array_foreach (ranks, i, r) {
		printf("    rank %d: pid %d%s%s (%s)", j->ranks[i].rank, j->ranks[i].pid,
		       j->ranks[i].node[0] ? " on " : "", j->ranks[i].node, j->ranks[i].comm);
		if (errs[i])
			printf(": could not be read: %s\n", errs[i]);
		else
			printf(", %lld thread%s%s\n",
			       (long long)json_integer_value(json_object_get(r, "threads")),
			       json_integer_value(json_object_get(r, "threads")) == 1 ? "" : "s",
			       json_is_true(json_object_get(r, "deadlock")) ?
				       ", deadlocked (see stacks PID)" :
			       json_is_true(json_object_get(r, "never_ends")) ?
				       ", waits for ever (see stacks PID)" :
				       "");
	}
	printf("\nVerdict:\n    %s\n\nStacks merged across ranks, outliers first:\n\n",
	       json_string_value(json_object_get(json_object_get(merged, "verdict"), "text")));
	stackmerge__print_groups(merged, stdout);
	if (stats)
		printf("\n%zu ranks read in %.1f ms\n", j->n, wall_ms);
	if (stats && fan_in) {
		long long answers = json_integer_value(json_object_get(fan_in, "answers"));
		long long relays = json_integer_value(json_object_get(fan_in, "relays"));

		printf("%lld answer%s, %lld bytes, came to this reader ", answers,
		       answers == 1 ? "" : "s",
		       (long long)json_integer_value(json_object_get(fan_in, "bytes")));
		if (relays)
			printf("through %lld relay%s (each reader reads at most %lld nodes or "
			       "relays)\n",
			       relays, relays == 1 ? "" : "s",
			       (long long)json_integer_value(json_object_get(fan_in, "width")));
		else
			printf("from the nodes themselves (--fanout %lld: relays past that many "
			       "nodes)\n",
			       (long long)json_integer_value(json_object_get(fan_in, "width")));
	}
}

/* stacks --job --json: the job, @ranks (taken), the merged groups and the verdict. */
static void print_job_json(const struct job *j, json_t *ranks, const json_t *merged,
			   const json_t *fan_in, double wall_ms)
{
	json_t *doc = json_pack("{s:s, s:o, s:o, s:O, s:O, s:f}", "dlscope", DLSCOPE_VERSION, "job",
				job__to_json(j), "ranks", ranks, "groups",
				json_object_get(merged, "groups"), "verdict",
				json_object_get(merged, "verdict"), "wall_ms", wall_ms);

	if (doc && fan_in)
		json_object_set(doc, "fan_in", (json_t *)fan_in);

	if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) < 0)
		dls_err("stacks --job: cannot write the JSON document");
	putchar('\n');
	json_decref(doc);
}

void stacks_job__read(const struct job *j, struct rank_stacks *rs, char **errs,
		      const struct stacks_job_opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (size_t i = 0; i < j->n; i++)
		rs[i] = (struct rank_stacks){ .rank = j->ranks[i].rank, .pid = j->ranks[i].pid };
	/* Unwinding is CPU work: a few workers per CPU overlap one's reads with another's. */
	read_ranks(j, rs, errs, o, (size_t)(ncpu > 0 ? ncpu : 1) * 4);
}

int stacks_job__report(const struct job *j, struct rank_stacks *rs, char **errs,
		       const json_t *groups, const json_t *fan_in, const struct stacks_job_opts *o,
		       double wall_ms)
{
	json_t *merged = stackmerge__merge(rs, j->n, groups, o->python_only), *ranks;
	bool deadlock = false, unreadable = false;

	if (!merged) {
		dls_err("stacks --job: out of memory merging the stacks");
		return DLS_EXIT_INSPECT;
	}
	ranks = rank_table(j, rs, errs, &deadlock, &unreadable);
	if (o->json) {
		print_job_json(j, ranks, merged, fan_in, wall_ms);
	} else {
		print_job_text(j, ranks, merged, errs, fan_in, o->stats, wall_ms);
		json_decref(ranks);
	}
	for (size_t i = 0; i < j->n; i++)
		if (errs[i])
			dls_err("stacks --job: rank %d (pid %d%s%s) could not be read: %s",
				j->ranks[i].rank, j->ranks[i].pid,
				j->ranks[i].node[0] ? " on " : "", j->ranks[i].node, errs[i]);
	/* A rank the verdict names (an outlier where the others wait) hangs the job: a CI step or
	 * a watchdog acts on the status alone. */
	if (json_array_size(json_object_get(json_object_get(merged, "verdict"), "outliers")))
		deadlock = true;
	json_decref(merged);
	return unreadable ? DLS_EXIT_INSPECT : deadlock ? DLS_EXIT_FINDINGS : DLS_EXIT_OK;
}
