/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The GPU module loaders: CUDA's and HIP's module loads, OpenCL's and Level Zero's builds.
 * A part of dlwatch.bpf.c, included there in order.
 */
#ifndef DLSCOPE_DLWATCH_GPU_H
#define DLSCOPE_DLWATCH_GPU_H

/* The size of a CUDA image: a fatbin header says it, a cubin's ELF header implies it. */
static __always_inline u64 image_size(const void *image)
{
	struct {
		u32 magic;
		u16 version, header_size;
		u64 fat_size;
	} fb;
	Elf64_Ehdr eh;

	if (!image || bpf_probe_read_user(&fb, sizeof(fb), image))
		return 0;
	if (fb.magic == 0xBA55ED50)
		return fb.header_size + fb.fat_size;
	if (fb.magic == 0x464c457f && !bpf_probe_read_user(&eh, sizeof(eh), image))
		return eh.e_shoff + (u64)eh.e_shnum * eh.e_shentsize;
	return 0;
}

/* cuModuleLoad(mod, fname), cuModuleLoadData(mod, image), cuModuleLoadDataEx(mod, image, ...),
 * cuModuleLoadFatBinary(mod, fatbin), cuLibraryLoadData(lib, code, ...),
 * cuLibraryLoadFromFile(lib, fname, ...): the cookie says which. */
SEC("uprobe")
int BPF_KPROBE(cuda_load_enter, void *handle, const void *image)
{
	u64 fn = bpf_get_attach_cookie(ctx);
	bool by_name = fn == CUDA_MODULE_LOAD || fn == CUDA_LIBRARY_LOAD_FILE ||
		       fn == HIP_MODULE_LOAD;

	return GUARDED(call_enter(DLW_GPU_LOAD, by_name ? image : NULL, fn,
				  by_name ? 0 : image_size(image), by_name ? 0 : (u64)image));
}

/* The return of every GPU function probed, CUDA's, HIP's, OpenCL's and Level Zero's. */
SEC("uretprobe")
int BPF_KRETPROBE(cuda_load_exit, long ret)
{
	return GUARDED(call_exit(ctx, DLW_GPU_LOAD, ret));
}

/* The sum of the first source strings' lengths (clCreateProgramWithSource's lengths[]). */
static __always_inline u64 cl_source_bytes(const u64 *lengths, u64 count)
{
	u64 sum = 0, len;

	for (int i = 0; i < 8; i++) {
		if (i >= count || bpf_probe_read_user(&len, sizeof(len), &lengths[i]))
			break;
		sum += len;
	}
	return sum;
}

/* The x86-64 stack argument @n (7 for the seventh), at a function's entry. */
static __always_inline u64 stack_arg(struct pt_regs *ctx, int n)
{
	u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
	return v;
}

/*
 * OpenCL's program calls, in the ICD loader, and Level Zero's zeModuleCreate, in its loader:
 * the cookie says which. Their result is read at return (gpu_result): an OpenCL create call
 * keeps its errcode_ret in arg2 until then.
 *   clCreateProgramWithSource(ctx, count, strings, lengths, errcode_ret)
 *   clCreateProgramWithBinary(ctx, ndev, devices, lengths, binaries, status, errcode_ret)
 *   clCreateProgramWithIL(ctx, il, length, errcode_ret)
 *   clBuildProgram(program, ndev, devices, options, notify, data)
 *   clCompileProgram(program, ndev, devices, options, nheaders, headers, names, notify, data)
 *   clLinkProgram(ctx, ndev, devices, options, ninputs, inputs, notify, data, errcode_ret)
 *   zeModuleCreate(ctx, device, desc, module, build_log)
 */
static __always_inline int gpu_build(struct pt_regs *ctx)
{
	u64 fn = bpf_get_attach_cookie(ctx);
	u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	u64 a4 = PT_REGS_PARM4(ctx), a5 = PT_REGS_PARM5(ctx);
	struct {
		u32 stype;
		u32 pad;
		u64 next;
		u32 format;
		u32 pad2;
		u64 size, input, flags;
	} zd = {};
	u64 len = 0;

	switch (fn) {
	case CL_CREATE_PROGRAM_WITH_SOURCE:
		return call_enter(DLW_GPU_LOAD, NULL, dlw_gpu_arg0(fn, a2),
				  a4 ? cl_source_bytes((const u64 *)a4, a2) : 0, a5);
	case CL_CREATE_PROGRAM_WITH_BINARY:
		if (a4)
			bpf_probe_read_user(&len, sizeof(len), (void *)a4);
		return call_enter(DLW_GPU_LOAD, NULL, dlw_gpu_arg0(fn, a2), len, stack_arg(ctx, 7));
	case CL_CREATE_PROGRAM_WITH_IL: return call_enter(DLW_GPU_LOAD, NULL, fn, a3, a4);
	case CL_BUILD_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a2), 0, a1);
	case CL_COMPILE_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a2), 0, a1);
	case CL_LINK_PROGRAM:
		return call_enter(DLW_GPU_LOAD, (const void *)a4, dlw_gpu_arg0(fn, a5), 0,
				  stack_arg(ctx, 9));
	case ZE_MODULE_CREATE:
		if (a3)
			bpf_probe_read_user(&zd, sizeof(zd), (void *)a3);
		return call_enter(DLW_GPU_LOAD, (const void *)zd.flags, dlw_gpu_arg0(fn, zd.format),
				  zd.size, zd.input);
	default: return 0;
	}
}

SEC("uprobe")
int BPF_KPROBE(gpu_build_enter)
{
	return GUARDED(gpu_build(ctx));
}

#endif
