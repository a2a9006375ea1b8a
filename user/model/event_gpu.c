// SPDX-License-Identifier: GPL-2.0
/*
 * GPU module loads and program builds in their runtimes' terms: the functions probed, their
 * results by name (cuda.h's CUresult, hip_runtime_api.h's hipError_t, cl.h's cl_int,
 * ze_api.h's ze_result_t) and their text line.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "event.h"
#include "event_gpu.h"

enum gpu_runtime { RT_CUDA, RT_HIP, RT_OPENCL, RT_ZE };

/* How a function's arguments read: what its text line shows. */
enum gpu_args {
	ARGS_LOAD,	/* CUDA, HIP: a file, or an image in memory and its size */
	ARGS_CL_SOURCE, /* source strings and their bytes */
	ARGS_CL_BINARY, /* devices and the first binary's bytes */
	ARGS_CL_IL,	/* the IL's bytes */
	ARGS_CL_BUILD,	/* the program, devices and options (clBuildProgram, clCompileProgram) */
	ARGS_CL_LINK,	/* input programs and options */
	ARGS_ZE_MODULE, /* the module's format, its bytes and build flags */
};

static const struct gpu_fn {
	const char *name;
	enum gpu_runtime rt;
	enum gpu_args args;
} gpu_fns[DLW_GPU_FN__COUNT] = {
	[0] = { "?", RT_CUDA, ARGS_LOAD },
	[CUDA_MODULE_LOAD] = { "cuModuleLoad", RT_CUDA, ARGS_LOAD },
	[CUDA_MODULE_LOAD_DATA] = { "cuModuleLoadData", RT_CUDA, ARGS_LOAD },
	[CUDA_MODULE_LOAD_DATA_EX] = { "cuModuleLoadDataEx", RT_CUDA, ARGS_LOAD },
	[CUDA_MODULE_LOAD_FATBIN] = { "cuModuleLoadFatBinary", RT_CUDA, ARGS_LOAD },
	[CUDA_LIBRARY_LOAD_DATA] = { "cuLibraryLoadData", RT_CUDA, ARGS_LOAD },
	[CUDA_LIBRARY_LOAD_FILE] = { "cuLibraryLoadFromFile", RT_CUDA, ARGS_LOAD },
	[HIP_MODULE_LOAD] = { "hipModuleLoad", RT_HIP, ARGS_LOAD },
	[HIP_MODULE_LOAD_DATA] = { "hipModuleLoadData", RT_HIP, ARGS_LOAD },
	[CL_CREATE_PROGRAM_WITH_SOURCE] = { "clCreateProgramWithSource", RT_OPENCL,
					    ARGS_CL_SOURCE },
	[CL_CREATE_PROGRAM_WITH_BINARY] = { "clCreateProgramWithBinary", RT_OPENCL,
					    ARGS_CL_BINARY },
	[CL_CREATE_PROGRAM_WITH_IL] = { "clCreateProgramWithIL", RT_OPENCL, ARGS_CL_IL },
	[CL_BUILD_PROGRAM] = { "clBuildProgram", RT_OPENCL, ARGS_CL_BUILD },
	[CL_COMPILE_PROGRAM] = { "clCompileProgram", RT_OPENCL, ARGS_CL_BUILD },
	[CL_LINK_PROGRAM] = { "clLinkProgram", RT_OPENCL, ARGS_CL_LINK },
	[ZE_MODULE_CREATE] = { "zeModuleCreate", RT_ZE, ARGS_ZE_MODULE },
};

static const char *const runtimes
	[] = { [RT_CUDA] = "CUDA", [RT_HIP] = "HIP", [RT_OPENCL] = "OpenCL", [RT_ZE] = "Level Zero" };

static const struct gpu_fn *fn_of(unsigned int fn)
{
	return fn && fn < DLW_GPU_FN__COUNT ? &gpu_fns[fn] : NULL;
}

const char *event__gpu_fn(unsigned int fn)
{
	return fn_of(fn) ? fn_of(fn)->name : "?";
}

const char *event__gpu_runtime(unsigned int fn)
{
	return fn_of(fn) ? runtimes[fn_of(fn)->rt] : "?";
}

unsigned int event_gpu__parse_fn(const char *name)
{
	for (unsigned int k = 1; name && k < DLW_GPU_FN__COUNT; k++)
		if (!strcmp(name, gpu_fns[k].name))
			return k;
	return 0;
}

bool event_gpu__is_load(unsigned int fn)
{
	return fn_of(fn) && fn_of(fn)->args == ARGS_LOAD;
}

bool event_gpu__creates(unsigned int fn)
{
	return fn == CL_CREATE_PROGRAM_WITH_SOURCE || fn == CL_CREATE_PROGRAM_WITH_BINARY ||
	       fn == CL_CREATE_PROGRAM_WITH_IL || fn == CL_LINK_PROGRAM;
}

/* The results a module load may return: CUDA's and HIP's share their codes. */
static const struct gpu_result {
	int code;
	const char *cuda, *hip;
} gpu_results[] = {
	{ 0, "CUDA_SUCCESS", "hipSuccess" },
	{ 1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized" },
	{ 4, "CUDA_ERROR_DEINITIALIZED", "hipErrorDeinitialized" },
	{ 35, NULL, "hipErrorInsufficientDriver" },
	{ 100, "CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice" },
	{ 200, "CUDA_ERROR_INVALID_IMAGE", "hipErrorInvalidImage" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext" },
	{ 209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "hipErrorNoBinaryForGpu" },
	{ 218, "CUDA_ERROR_INVALID_PTX", "hipErrorInvalidKernelFile" },
	{ 221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", NULL },
	{ 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", NULL },
	{ 300, "CUDA_ERROR_INVALID_SOURCE", "hipErrorInvalidSource" },
	{ 301, "CUDA_ERROR_FILE_NOT_FOUND", "hipErrorFileNotFound" },
	{ 302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "hipErrorSharedObjectSymbolNotFound" },
	{ 303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "hipErrorSharedObjectInitFailed" },
	{ 304, "CUDA_ERROR_OPERATING_SYSTEM", "hipErrorOperatingSystem" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle" },
	{ 500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported" },
	{ 999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown" },
};

struct named_code {
	int64_t code;
	const char *name;
};

/* cl.h's error codes (cl_int), and cl_khr_icd's. */
static const struct named_code cl_results[] = {
	{ 0, "CL_SUCCESS" },
	{ -1, "CL_DEVICE_NOT_FOUND" },
	{ -2, "CL_DEVICE_NOT_AVAILABLE" },
	{ -3, "CL_COMPILER_NOT_AVAILABLE" },
	{ -4, "CL_MEM_OBJECT_ALLOCATION_FAILURE" },
	{ -5, "CL_OUT_OF_RESOURCES" },
	{ -6, "CL_OUT_OF_HOST_MEMORY" },
	{ -7, "CL_PROFILING_INFO_NOT_AVAILABLE" },
	{ -8, "CL_MEM_COPY_OVERLAP" },
	{ -9, "CL_IMAGE_FORMAT_MISMATCH" },
	{ -10, "CL_IMAGE_FORMAT_NOT_SUPPORTED" },
	{ -11, "CL_BUILD_PROGRAM_FAILURE" },
	{ -12, "CL_MAP_FAILURE" },
	{ -13, "CL_MISALIGNED_SUB_BUFFER_OFFSET" },
	{ -14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST" },
	{ -15, "CL_COMPILE_PROGRAM_FAILURE" },
	{ -16, "CL_LINKER_NOT_AVAILABLE" },
	{ -17, "CL_LINK_PROGRAM_FAILURE" },
	{ -18, "CL_DEVICE_PARTITION_FAILED" },
	{ -19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE" },
	{ -30, "CL_INVALID_VALUE" },
	{ -31, "CL_INVALID_DEVICE_TYPE" },
	{ -32, "CL_INVALID_PLATFORM" },
	{ -33, "CL_INVALID_DEVICE" },
	{ -34, "CL_INVALID_CONTEXT" },
	{ -35, "CL_INVALID_QUEUE_PROPERTIES" },
	{ -36, "CL_INVALID_COMMAND_QUEUE" },
	{ -37, "CL_INVALID_HOST_PTR" },
	{ -38, "CL_INVALID_MEM_OBJECT" },
	{ -39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR" },
	{ -40, "CL_INVALID_IMAGE_SIZE" },
	{ -41, "CL_INVALID_SAMPLER" },
	{ -42, "CL_INVALID_BINARY" },
	{ -43, "CL_INVALID_BUILD_OPTIONS" },
	{ -44, "CL_INVALID_PROGRAM" },
	{ -45, "CL_INVALID_PROGRAM_EXECUTABLE" },
	{ -46, "CL_INVALID_KERNEL_NAME" },
	{ -47, "CL_INVALID_KERNEL_DEFINITION" },
	{ -48, "CL_INVALID_KERNEL" },
	{ -49, "CL_INVALID_ARG_INDEX" },
	{ -50, "CL_INVALID_ARG_VALUE" },
	{ -51, "CL_INVALID_ARG_SIZE" },
	{ -52, "CL_INVALID_KERNEL_ARGS" },
	{ -53, "CL_INVALID_WORK_DIMENSION" },
	{ -54, "CL_INVALID_WORK_GROUP_SIZE" },
	{ -55, "CL_INVALID_WORK_ITEM_SIZE" },
	{ -56, "CL_INVALID_GLOBAL_OFFSET" },
	{ -57, "CL_INVALID_EVENT_WAIT_LIST" },
	{ -58, "CL_INVALID_EVENT" },
	{ -59, "CL_INVALID_OPERATION" },
	{ -60, "CL_INVALID_GL_OBJECT" },
	{ -61, "CL_INVALID_BUFFER_SIZE" },
	{ -62, "CL_INVALID_MIP_LEVEL" },
	{ -63, "CL_INVALID_GLOBAL_WORK_SIZE" },
	{ -64, "CL_INVALID_PROPERTY" },
	{ -65, "CL_INVALID_IMAGE_DESCRIPTOR" },
	{ -66, "CL_INVALID_COMPILER_OPTIONS" },
	{ -67, "CL_INVALID_LINKER_OPTIONS" },
	{ -68, "CL_INVALID_DEVICE_PARTITION_COUNT" },
	{ -69, "CL_INVALID_PIPE_SIZE" },
	{ -70, "CL_INVALID_DEVICE_QUEUE" },
	{ -71, "CL_INVALID_SPEC_ID" },
	{ -72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED" },
	{ -1001, "CL_PLATFORM_NOT_FOUND_KHR" },
};

/* ze_api.h's ze_result_t. */
static const struct named_code ze_results[] = {
	{ 0, "ZE_RESULT_SUCCESS" },
	{ 1, "ZE_RESULT_NOT_READY" },
	{ 0x70000001, "ZE_RESULT_ERROR_DEVICE_LOST" },
	{ 0x70000002, "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY" },
	{ 0x70000003, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY" },
	{ 0x70000004, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE" },
	{ 0x70000005, "ZE_RESULT_ERROR_MODULE_LINK_FAILURE" },
	{ 0x70000006, "ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET" },
	{ 0x70000007, "ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE" },
	{ 0x70010000, "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS" },
	{ 0x70010001, "ZE_RESULT_ERROR_NOT_AVAILABLE" },
	{ 0x70020000, "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE" },
	{ 0x70020001, "ZE_RESULT_WARNING_DROPPED_DATA" },
	{ 0x78000001, "ZE_RESULT_ERROR_UNINITIALIZED" },
	{ 0x78000002, "ZE_RESULT_ERROR_UNSUPPORTED_VERSION" },
	{ 0x78000003, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE" },
	{ 0x78000004, "ZE_RESULT_ERROR_INVALID_ARGUMENT" },
	{ 0x78000005, "ZE_RESULT_ERROR_INVALID_NULL_HANDLE" },
	{ 0x78000006, "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE" },
	{ 0x78000007, "ZE_RESULT_ERROR_INVALID_NULL_POINTER" },
	{ 0x78000008, "ZE_RESULT_ERROR_INVALID_SIZE" },
	{ 0x78000009, "ZE_RESULT_ERROR_UNSUPPORTED_SIZE" },
	{ 0x7800000a, "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT" },
	{ 0x7800000b, "ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT" },
	{ 0x7800000c, "ZE_RESULT_ERROR_INVALID_ENUMERATION" },
	{ 0x7800000d, "ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION" },
	{ 0x7800000e, "ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT" },
	{ 0x7800000f, "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY" },
	{ 0x78000010, "ZE_RESULT_ERROR_INVALID_GLOBAL_NAME" },
	{ 0x78000011, "ZE_RESULT_ERROR_INVALID_KERNEL_NAME" },
	{ 0x78000012, "ZE_RESULT_ERROR_INVALID_FUNCTION_NAME" },
	{ 0x78000018, "ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED" },
	{ 0x7ffffffe, "ZE_RESULT_ERROR_UNKNOWN" },
};

static const char *named(const struct named_code *t, size_t n, int64_t code)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

const char *event__gpu_result(unsigned int fn, int64_t result)
{
	const struct gpu_fn *f = fn_of(fn);

	if (!f)
		return NULL;
	if (f->rt == RT_OPENCL)
		return named(cl_results, sizeof(cl_results) / sizeof(cl_results[0]), result);
	if (f->rt == RT_ZE)
		return named(ze_results, sizeof(ze_results) / sizeof(ze_results[0]), result);
	for (size_t i = 0; i < sizeof(gpu_results) / sizeof(gpu_results[0]); i++)
		if (gpu_results[i].code == result)
			return f->rt == RT_HIP ? gpu_results[i].hip : gpu_results[i].cuda;
	return NULL;
}

/* "1 string", "2 devices"; OpenCL's 0 devices are all the program's. */
static const char *counted(char *buf, size_t len, unsigned int n, const char *what)
{
	if (!n && !strcmp(what, "device"))
		snprintf(buf, len, "all devices");
	else
		snprintf(buf, len, "%u %s%s", n, what, n == 1 ? "" : "s");
	return buf;
}

/* A CUDA or HIP load's arguments: the file, or the image in memory, and the size. */
static void load_args(const struct event *ev, bool resolved, char *buf, size_t len)
{
	const char *file = ev->u.gpu_load.file;
	char image[40] = "";

	/* A load from memory: where the image is, to match it with the code that built it. */
	if (ev->u.gpu_load.image)
		snprintf(image, sizeof(image), "image 0x%llx,",
			 (unsigned long long)ev->u.gpu_load.image);
	if (resolved)
		snprintf(buf, len, "%s%s) size %llu", file, image,
			 (unsigned long long)ev->u.gpu_load.image_size);
	else
		snprintf(buf, len, "%s%s%s%s size %llu)", file[0] ? "\"" : "", file,
			 file[0] ? "\"," : "", image,
			 (unsigned long long)ev->u.gpu_load.image_size);
}

/* The arguments, up to and with the closing parenthesis. */
static void args_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	const struct gpu_fn *f = fn_of(ev->u.gpu_load.function);
	unsigned long long bytes = (unsigned long long)ev->u.gpu_load.image_size;
	unsigned int n = ev->u.gpu_load.count;
	const char *opt = ev->u.gpu_load.options;
	char c[32];

	switch (f ? f->args : ARGS_LOAD) {
	case ARGS_CL_SOURCE:
		snprintf(buf, len, "%s, %llu bytes)", counted(c, sizeof(c), n, "string"), bytes);
		break;
	case ARGS_CL_BINARY:
		snprintf(buf, len, "%s, %llu bytes)", counted(c, sizeof(c), n, "device"), bytes);
		break;
	case ARGS_CL_IL: snprintf(buf, len, "%llu bytes)", bytes); break;
	case ARGS_CL_BUILD:
		snprintf(buf, len, "program 0x%llx, %s, \"%s\")",
			 (unsigned long long)ev->u.gpu_load.program,
			 counted(c, sizeof(c), n, "device"), opt);
		break;
	case ARGS_CL_LINK:
		snprintf(buf, len, "%s, \"%s\")", counted(c, sizeof(c), n, "program"), opt);
		break;
	case ARGS_ZE_MODULE:
		snprintf(buf, len, "%s, %llu bytes, \"%s\")",
			 n == 0 ? "SPIR-V" :
			 n == 1 ? "native" :
				  "format ?",
			 bytes, opt);
		break;
	default: load_args(ev, resolved, buf, len);
	}
}

void event_gpu__text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	unsigned int fn = ev->u.gpu_load.function;
	const char *res = ev->u.gpu_load.no_result ? NULL :
						     event__gpu_result(fn, ev->u.gpu_load.result);
	char args[700], ret[160], num[32];
	size_t used;

	args_text(ev, resolved, args, sizeof(args));
	/* Level Zero's results are hex in its header; the others decimal. */
	snprintf(num, sizeof(num), fn == ZE_MODULE_CREATE ? "0x%llx" : "%lld",
		 (long long)ev->u.gpu_load.result);
	if (event_gpu__creates(fn))
		snprintf(ret, sizeof(ret), "program 0x%llx%s%s%s%s%s",
			 (unsigned long long)ev->u.gpu_load.program,
			 ev->u.gpu_load.no_result ? "" : ", errcode ",
			 ev->u.gpu_load.no_result ? "" : num, res ? " (" : "", res ? res : "",
			 res ? ")" : "");
	else
		snprintf(ret, sizeof(ret), "%s%s%s%s", num, res ? " (" : "", res ? res : "",
			 res ? ")" : "");
	snprintf(buf, len, "%s(%s = %s", event__gpu_fn(fn), args, ret);
	used = strlen(buf);
	/* Traces from before durations were kept have none. */
	if (ev->u.gpu_load.duration_ns && used < len)
		snprintf(buf + used, len - used, " (%.3f ms)",
			 (double)ev->u.gpu_load.duration_ns / 1e6);
}

void event_gpu__decode(struct event *ev, const struct dlw_event *raw)
{
	unsigned int fn = (unsigned int)(raw->arg0 & DLW_GPU_FN_MASK);
	char *str;

	ev->u.gpu_load.function = fn < DLW_GPU_FN__COUNT ? fn : 0;
	ev->u.gpu_load.count = (unsigned int)(raw->arg0 >> 32);
	ev->u.gpu_load.no_result = raw->arg0 & DLW_GPU_NO_RESULT;
	/* The string is a file for a CUDA or HIP load, else build options. */
	str = event_gpu__is_load(fn) || !fn ? ev->u.gpu_load.file : ev->u.gpu_load.options;
	if (raw->str_state != DLW_STR_NULL) {
		size_t n = strnlen(raw->str, DLW_STR_LEN - 1);

		memcpy(str, raw->str, n);
		str[n] = '\0';
	}
	ev->u.gpu_load.image_size = raw->arg1;
	if (fn >= CL_CREATE_PROGRAM_WITH_SOURCE && fn <= CL_LINK_PROGRAM)
		ev->u.gpu_load.program = raw->arg2;
	else
		ev->u.gpu_load.image = raw->arg2;
	ev->u.gpu_load.result = raw->ret;
	ev->u.gpu_load.duration_ns = raw->duration_ns;
}
