// SPDX-License-Identifier: GPL-2.0
/*
 * The live source: watch__run on its own thread hands each trace record to a sink that only
 * queues it, so the collector never waits for the screen. The UI thread drains the queue.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobwatch.h"
#include "source.h"
#include "watch.h"

/* Enough for a few redraws' worth of a 500k events/s flood; beyond it plain events drop. */
#define QUEUE_CAP 131072

struct live {
	struct watch_opts o;
	pthread_t thread;
	bool started;
	volatile sig_atomic_t stop;
	struct json_sink sink; /* the collector's records, queued as they are made */
	struct event_sink *sinks[1];
	double hang_secs; /* a rank idle this long while others progress is hung */
	pthread_mutex_t lock;
	json_t **q;
	size_t head, n, cap;
	unsigned long long dropped;
	bool finished;
	int err;
	char why[512];
};

/* The graph and the findings must survive a flood; only plain events may be dropped. */
static bool must_keep(const json_t *rec)
{
	const char *type = json_string_value(json_object_get(rec, "type"));

	static const char *const plain[] = { "dlsym",	"futex_wait", "dlopen",
					     "dlclose", "omp_fork",   "blas_thread" };

	for (size_t i = 0; type && i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!strcmp(type, plain[i]))
			return false;
	return true;
}

static int grow(struct live *l)
{
	size_t ncap = l->cap * 2;
	json_t **nq = malloc(ncap * sizeof(*nq));

	if (!nq)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		nq[i] = l->q[(l->head + i) % l->cap];
	free(l->q);
	l->q = nq;
	l->head = 0;
	l->cap = ncap;
	return 0;
}

/* On the collector's thread: queue and return. */
static void queue_record(void *ctx, json_t *rec)
{
	struct live *l = ctx;

	pthread_mutex_lock(&l->lock);
	if (l->n == l->cap && (!must_keep(rec) || grow(l))) {
		l->dropped++;
	} else {
		l->q[(l->head + l->n) % l->cap] = json_incref(rec);
		l->n++;
	}
	pthread_mutex_unlock(&l->lock);
}

static void *collector(void *arg)
{
	struct live *l = arg;
	struct event_sink *job_sink;
	struct watch_opts o = l->o;
	struct watch_stats st;
	struct jobwatch *jw;
	char why[512] = "";
	sigset_t winch;
	int err;

	/* Terminal resizes are the UI thread's business. */
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &winch, NULL);
	/* As in watch: ranks labelled, the first to die and a hung one named (jobwatch.h). */
	jw = jobwatch__new(l->sinks, 1, l->hang_secs);
	if (jw) {
		for (size_t i = 0; i < o.n_pids; i++)
			jobwatch__add(jw, o.pids[i]);
		job_sink = jobwatch__sink(jw);
		o.sinks = &job_sink;
		o.n_sinks = 1;
	}
	err = watch__run(&o, &st, why, sizeof(why));
	jobwatch__free(jw);
	pthread_mutex_lock(&l->lock);
	l->finished = true;
	l->err = err;
	snprintf(l->why, sizeof(l->why), "%s", why);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int live__start(const struct watch_opts *o, struct live **out)
{
	struct live *l = calloc(1, sizeof(*l));
	int err;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->o = *o;
	l->hang_secs = 10;
	json_sink__init(&l->sink, queue_record, NULL, l);
	json_sink__order(&l->sink);
	l->sinks[0] = &l->sink.s;
	l->o.sinks = l->sinks;
	l->o.n_sinks = 1;
	/* Only this flag ends the collector: signals are the UI thread's (ui/tui.c). */
	l->o.stop = &l->stop;
	l->cap = QUEUE_CAP;
	l->q = malloc(l->cap * sizeof(*l->q));
	if (!l->q) {
		free(l);
		return -ENOMEM;
	}
	pthread_mutex_init(&l->lock, NULL);
	err = -pthread_create(&l->thread, NULL, collector, l);
	if (err) {
		live__free(l);
		return err;
	}
	l->started = true;
	*out = l;
	return 0;
}

size_t live__drain(struct live *l, struct model *m, size_t budget)
{
	json_t *batch[512];
	size_t done = 0;

	while (done < budget) {
		size_t k = 0;

		pthread_mutex_lock(&l->lock);
		while (k < sizeof(batch) / sizeof(batch[0]) && k + done < budget && l->n) {
			batch[k++] = l->q[l->head];
			l->head = (l->head + 1) % l->cap;
			l->n--;
		}
		pthread_mutex_unlock(&l->lock);
		if (!k)
			break;
		/* Applied outside the lock: the collector is never held up by the model. */
		for (size_t i = 0; i < k; i++) {
			model__apply(m, batch[i]);
			json_decref(batch[i]);
		}
		done += k;
	}
	return done;
}

bool live__finished(struct live *l, int *err, char *why, size_t whylen)
{
	bool done;

	pthread_mutex_lock(&l->lock);
	done = l->finished && !l->n;
	if (done) {
		*err = l->err;
		snprintf(why, whylen, "%s", l->why);
	}
	pthread_mutex_unlock(&l->lock);
	return done;
}

unsigned long long live__dropped(struct live *l)
{
	unsigned long long d;

	pthread_mutex_lock(&l->lock);
	d = l->dropped;
	pthread_mutex_unlock(&l->lock);
	return d;
}

void live__free(struct live *l)
{
	if (!l)
		return;
	l->stop = 1;
	if (l->started)
		pthread_join(l->thread, NULL);
	while (l->n) {
		json_decref(l->q[l->head]);
		l->head = (l->head + 1) % l->cap;
		l->n--;
	}
	free(l->q);
	json_sink__drop_held(&l->sink); /* a collector that failed sent no summary */
	pthread_mutex_destroy(&l->lock);
	free(l);
}
