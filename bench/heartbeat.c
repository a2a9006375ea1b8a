// SPDX-License-Identifier: GPL-2.0
/*
 * The target of capture_bench.py: N threads (one the heartbeat, the rest asleep or waiting on a
 * condition variable), and the heartbeat's longest gap, in a file the bench maps: a tool that
 * stops every thread shows there as a gap as long as its stop.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile uint64_t *shared; /* [0]: the longest gap in ns, reset to 0 by the bench */

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	for (;;) {
		if ((long)arg % 2) {
			nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
		} else {
			pthread_mutex_lock(&m);
			pthread_cond_wait(&c, &m);
			pthread_mutex_unlock(&m);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 64, fd = open(argv[1], O_RDWR);
	uint64_t last;
	pthread_t t;

	if (fd < 0 || (shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
			      MAP_FAILED)
		return 1;
	for (long i = 1; i < n; i++)
		pthread_create(&t, NULL, sleeper, (void *)i);
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (last = now();;) {
		uint64_t t1;

		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
		t1 = now();
		if (t1 - last > shared[0])
			shared[0] = t1 - last;
		last = t1;
	}
}
