// SPDX-License-Identifier: GPL-2.0
/*
 * dlopen_new_loop N LIB [fresh|held]: N rounds of dlopen and dlclose of a library the process
 * does not hold otherwise, each dlopen mapping it anew (a new object in the link map). With
 * "fresh", each round maps a new copy of LIB (another file, whose content watch has not seen:
 * one it holds if it is a runtime), made before the round's clock starts. With "held", LIB is
 * opened once before the rounds and kept: each round only counts a reference, as a
 * ctypes.CDLL of a loaded library or a runtime's repeated dlopen of its driver does. Prints
 * the mean time of one dlopen in microseconds. DLOPEN_NEW_LOOP_WAIT_MS: a sleep before the
 * first round (a bench stops the watch that started it meanwhile).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* LIB's bytes written to a new file, named in @path. */
static int copy_of(const char *bytes, size_t len, char *path, size_t pathlen)
{
	int fd;

	snprintf(path, pathlen, "/tmp/dlopen_new_loop.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, bytes, len) != (ssize_t)len)
		return -1;
	return close(fd);
}

static char *read_all(const char *lib, size_t *len)
{
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;

	if (fd >= 0 && !fstat(fd, &st) && (buf = malloc((size_t)st.st_size)) &&
	    read(fd, buf, (size_t)st.st_size) == st.st_size)
		*len = (size_t)st.st_size;
	else
		buf = NULL;
	if (fd >= 0)
		close(fd);
	return buf;
}

int main(int argc, char **argv)
{
	const char *lib = argc > 2 ? argv[2] : "libz.so.1";
	long n = argc > 1 ? atol(argv[1]) : 100;
	char *bytes = NULL, copy[64];
	size_t len = 0;
	double total = 0;

	if (argc > 3 && !strcmp(argv[3], "fresh") && !(bytes = read_all(lib, &len)))
		return 1;
	if (argc > 3 && !strcmp(argv[3], "held") && !dlopen(lib, RTLD_NOW | RTLD_LOCAL))
		return 1;
	if (getenv("DLOPEN_NEW_LOOP_WAIT_MS"))
		usleep((useconds_t)atoi(getenv("DLOPEN_NEW_LOOP_WAIT_MS")) * 1000);
	for (long i = 0; i < n; i++) {
		struct timespec a, b;
		void *h;

		if (bytes && copy_of(bytes, len, copy, sizeof(copy)))
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &a);
		h = dlopen(bytes ? copy : lib, RTLD_NOW | RTLD_LOCAL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!h)
			return 1;
		total +=
			(double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
		dlclose(h);
		if (bytes)
			unlink(copy);
	}
	printf("%.1f us per dlopen\n", total / (double)n);
	free(bytes);
	return 0;
}
