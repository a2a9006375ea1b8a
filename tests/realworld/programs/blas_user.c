/* A program on Debian's BLAS alternatives: one dgemm_ call; --wait keeps it alive for a PID. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
	    const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
	    const double *beta, double *c, const int *ldc);

int main(int argc, char **argv)
{
	double a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 0, 0, 1 }, c[4] = { 0 }, one = 1, zero = 0;
	int two = 2;

	dgemm_("N", "N", &two, &two, &two, &one, a, &two, b, &two, &zero, c, &two);
	if (c[3] != 4)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		pause();
	}
	return 0;
}
