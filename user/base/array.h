/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_ARRAY_H
#define DLSCOPE_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/*
 * Double the room of a growing array (git's ALLOC_GROW): @arr holds @cap elements, @first when
 * it holds none yet. The caller says when it is full. 0, or -ENOMEM with @arr and @cap as they
 * were (the elements stay the caller's to free).
 */
#define ARRAY_GROW(arr, cap, first)                                                        \
	({                                                                                 \
		size_t array_ncap_ = (cap) ? (size_t)(cap)*2 : (size_t)(first);            \
		__typeof__(arr) array_new_ = realloc((arr), array_ncap_ * sizeof(*(arr))); \
		if (array_new_) {                                                          \
			(arr) = array_new_;                                                \
			(cap) = array_ncap_;                                               \
		}                                                                          \
		array_new_ ? 0 : -ENOMEM;                                                  \
	})

#endif
