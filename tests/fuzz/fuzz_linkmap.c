// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: the link-map reader walking a target whose memory is the input. The first
 * 8 bytes say where r_debug lies in it; the rest is memory seen at IMAGE_BASE. Loops, wild
 * pointers and unterminated names must end in an error, never a crash or a hang.
 */
#include <stdint.h>
#include <string.h>

#include "linkmap.h"
#include "target.h"

#define IMAGE_BASE 0x10000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct linkmap *lm = NULL;
	struct target *t;
	uint64_t at;

	if (size < 8)
		return 0;
	memcpy(&at, data, 8);
	t = target__from_image(data + 8, size - 8, IMAGE_BASE);
	if (!t)
		return 0;
	/* Mostly inside the image, sometimes anywhere. */
	if (size > 8 && !(at >> 63))
		at = IMAGE_BASE + at % (size - 8);
	if (!linkmap__walk(t, at, &lm))
		linkmap__free(lm);
	target__free(t);
	return 0;
}
