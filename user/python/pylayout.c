// SPDX-License-Identifier: GPL-2.0
/* The offsets of each CPython version, as its DWARF gives them (gdb's ptype/o). */
#include <stddef.h>

#include "pylayout.h"

/* clang-format off */
/* What every version shares: object headers, strings, bytes, dicts and the GIL's structure. */
#define PY_COMMON \
	.ob_type = 8, .tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, \
	.str_length = 16, .str_state = 32, .bytes_size = 16, .bytes_data = 32, \
	.gil_last_holder = 8, .gil_locked = 16, .gil_cond = 32, .gil_switch = 120, \
	.gil_size = 208, .ts_next = 8, .ts_interp = 16, .dict_keys = 32, .dict_values = 40, \
	.long_digits = 24, .module_dict = 16

static const struct py_layout layouts[] = {
	{
		PY_COMMON,
		.major = 3, .minor = 9, .frames = PY_FRAME_OBJECTS, .lines = PY_LNOTAB,
		.rt_finalizing = 16, .rt_interp_head = 32, .rt_gil = 352,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 856,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 104, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1,
		.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
		.co_linetable = 120, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 864, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 10, .frames = PY_FRAME_OBJECTS, .lines = PY_LINETABLE_310,
		.rt_finalizing = 16, .rt_interp_head = 32, .rt_gil = 352,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 856,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 96, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1,
		.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
		.co_linetable = 120, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 872, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 11, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 24, .rt_interp_head = 40, .rt_gil = 360,
		.is_next = 0, .is_tstate_head = 16, .is_gil_ptr = -1, .is_modules = 888,
		.ts_thread_id = 152, .ts_native_thread_id = 160, .ts_frame = -1, .ts_cframe = 56,
		.cframe_current = 8, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 48, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 69,
		.fr_is_entry = 68,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
		.co_linetable = 136, .co_code_adaptive = 184,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 872, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 0, .instance_dict = PY_MANAGED_311, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 12, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 24, .rt_interp_head = 40, .rt_gil = -1,
		.is_next = 0, .is_tstate_head = 72, .is_gil_ptr = 384, .is_modules = 944,
		.ts_thread_id = 136, .ts_native_thread_id = 144, .ts_frame = -1, .ts_cframe = 56,
		.cframe_current = 0, .ts_current_frame = -1,
		.fr_code = 0, .fr_previous = 8, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 70,
		.fr_is_entry = -1,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
		.co_linetable = 136, .co_code_adaptive = 192,
		.str_ascii_size = 40, .str_compact_size = 56,
		.ht_cached_keys = 880, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 0, .instance_dict = PY_MANAGED_312, .long_tagged = true,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 13, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 608, .rt_interp_head = 632, .rt_gil = -1,
		.is_next = 7264, .is_tstate_head = 7344, .is_gil_ptr = 16, .is_modules = 7656,
		.ts_thread_id = 152, .ts_native_thread_id = 160, .ts_frame = -1, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = 72,
		.fr_code = 0, .fr_previous = 8, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 70,
		.fr_is_entry = -1,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
		.co_linetable = 136, .co_code_adaptive = 200,
		.str_ascii_size = 40, .str_compact_size = 56,
		.ht_cached_keys = 880, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 8, .instance_dict = PY_MANAGED_313, .long_tagged = true,
	},
};
/* clang-format on */

const struct py_layout *py_layout__find(unsigned int major, unsigned int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}
