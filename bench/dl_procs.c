// SPDX-License-Identifier: GPL-2.0
/*
 * N busy processes of one name: "dl_procs N [exec]" forks N children that each call dlopen and
 * dlsym of an object already loaded in a loop (a few hundred calls a second each), and waits
 * for them; with exec, each child runs the program anew (its objects placed by ASLR). Every child's calls are events for record --comm dl_procs; killing the launcher's
 * process group ends them all.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void loop(void)
{
	for (;;) {
		void *h = dlopen("libm.so.6", RTLD_NOW);

		if (!h || !dlsym(h, "cos"))
			exit(1);
		dlclose(h);
		for (volatile int i = 0; i < 20000; i++)
			;
		nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200;
	bool exec = argc > 2 && !strcmp(argv[2], "exec");
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!dlopen("libm.so.6", RTLD_NOW))
		return 1;
	if (argc > 2 && !strcmp(argv[2], "child"))
		loop();
	if (len <= 0)
		return 1;
	self[len] = '\0';
	for (long i = 0; i < n; i++)
		if (fork() == 0) {
			if (exec) /* a program of its own: its objects wherever ASLR puts them */
				execl(self, argv[0], "1", "child", (char *)NULL);
			loop();
		}
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (wait(NULL) > 0)
		;
	return 0;
}
