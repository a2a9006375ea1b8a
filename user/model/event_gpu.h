/* SPDX-License-Identifier: GPL-2.0 */
/* event.c's GPU part (event_gpu.c): the gpu_load kind's functions, results and text. */
#ifndef DLSCOPE_EVENT_GPU_H
#define DLSCOPE_EVENT_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "event.h"

/* The function of a name ("clBuildProgram"); 0 when unknown. */
unsigned int event_gpu__parse_fn(const char *name);
/* A CUDA or HIP module load (a file or an image), not an OpenCL or Level Zero call. */
bool event_gpu__is_load(unsigned int fn);
/* An OpenCL call that returns a program, its result in errcode_ret. */
bool event_gpu__creates(unsigned int fn);
/* The gpu_load fields of a raw record. */
void event_gpu__decode(struct event *ev, const struct dlw_event *raw);
/* Its text line: "clBuildProgram(program 0x..., 1 device, "") = 0 (CL_SUCCESS) (812.3 ms)". */
void event_gpu__text(const struct event *ev, bool resolved, char *buf, size_t len);

#endif
