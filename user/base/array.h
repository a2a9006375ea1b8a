/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_ARRAY_H
#define DLSCOPE_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Growing arrays live here (issue 38): each doubles its room, so n appends cost O(n) where
 * growing by one element per call costs O(n^2). The arguments are lvalues the macros read and
 * write more than once; on -ENOMEM they are left as they were (the elements stay the caller's).
 */

/*
 * Double the room of a growing array (git's ALLOC_GROW): @arr holds @cap elements, @first when
 * it holds none yet. The caller says when it is full. 0, or -ENOMEM with @arr and @cap as they
 * were (the elements stay the caller's to free).
 */
#define ARRAY_GROW(arr, cap, first)                                             \
	({                                                                      \
		size_t array_ncap_ = (cap) ? (size_t)(cap)*2 : (size_t)(first); \
		__typeof__(arr) array_new_ =                                    \
			array_ncap_ <= SIZE_MAX / sizeof(*(arr)) ?              \
				realloc((arr), array_ncap_ * sizeof(*(arr))) :  \
				NULL;                                           \
		if (array_new_) {                                               \
			(arr) = array_new_;                                     \
			(cap) = array_ncap_;                                    \
		}                                                               \
		array_new_ ? 0 : -ENOMEM;                                       \
	})

/* Room for @need elements in @arr of @cap (a buffer filled in bulk): doubles, at least 8. */
#define ARRAY_RESERVE(arr, cap, need)                                                         \
	({                                                                                    \
		size_t array_need_ = (need);                                                  \
		int array_err_ = 0;                                                           \
		while (!array_err_ && (size_t)(cap) < array_need_)                            \
			array_err_ = ARRAY_GROW(arr, cap, array_need_ > 8 ? array_need_ : 8); \
		array_err_;                                                                   \
	})

/* Append @value to @arr of @n elements and @cap room: 0, or -ENOMEM with nothing changed. */
#define ARRAY_PUSH(arr, n, cap, value)                                      \
	({                                                                  \
		int array_perr_ = ARRAY_RESERVE(arr, cap, (size_t)(n) + 1); \
		if (!array_perr_)                                           \
			(arr)[(n)++] = (value);                             \
		array_perr_;                                                \
	})

/*
 * Give back the spare room of @arr, @n elements (an array kept long, filled once): no change
 * when @n is 0 or the realloc fails, as shrinking is only a saving.
 */
#define ARRAY_SHRINK(arr, n)                                                                      \
	do {                                                                                      \
		__typeof__(arr) array_fit_ = (n) ? realloc((arr), (size_t)(n) * sizeof(*(arr))) : \
						   NULL;                                          \
		if (array_fit_)                                                                   \
			(arr) = array_fit_;                                                       \
	} while (0)

#endif
