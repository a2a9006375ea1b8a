// SPDX-License-Identifier: GPL-2.0
/*
 * What a kernel record leaves for user space to read: a string the kernel could not.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "watch_internal.h"

/*
 * A string of the target that the kernel could not read (its page was not present): read it
 * now, when the process is still there, faulting the page in as the process itself would.
 */
void records__read_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		struct iovec local, remote;
		ssize_t n;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		local = (struct iovec){ buf + got, chunk };
		remote = (struct iovec){ (void *)(uintptr_t)(addr + got), chunk };
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			break;
		if (memchr(buf + got, '\0', (size_t)n))
			return;
		got += (size_t)n;
	}
	snprintf(buf, len, "%s", got + 1 >= len ? buf : "<unreadable>");
	buf[len - 1] = '\0';
}

/* An event whose string was not read in the kernel, with it read here (or "<unreadable>"). */
const struct dlw_event *records__with_str(const struct dlw_event *e, size_t size,
					  struct dlw_event *copy)
{
	uint64_t addr;

	if (e->str_state != DLW_STR_UNREAD)
		return e;
	memcpy(copy, e, size < sizeof(*copy) ? size : sizeof(*copy));
	memcpy(&addr, e->str, sizeof(addr));
	records__read_str((pid_t)e->pid, addr, copy->str, sizeof(copy->str));
	copy->str_state = DLW_STR_READ;
	return copy;
}
