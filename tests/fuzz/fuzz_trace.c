// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: any bytes as a trace file for `dlscope ui --replay`: opened, validated and
 * replayed to its end into the TUI's model, then rewound (seeking back rebuilds the model).
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model.h"
#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct replay *r = NULL;
	struct model *m;
	char path[64], why[512];

	if (fd < 0 && (fd = memfd_create("fuzz-trace", MFD_CLOEXEC)) < 0)
		return 0;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (replay__open(path, false, &r, why, sizeof(why)))
		return 0;
	m = model__new(1000);
	if (m) {
		replay__seek(r, m, UINT64_MAX, 0);
		replay__seek(r, m, 0, 0);
		model__free(m);
	}
	replay__free(r);
	return 0;
}
