/* oneDNN's C API: an engine made and released, so the library is initialised for real. */
#include <dnnl.h>

int main(void)
{
	dnnl_engine_t engine;

	if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
		return 1;
	return dnnl_engine_destroy(engine) != dnnl_success;
}
