/*
 * An extension built against Debian's reference BLAS, which its RUNPATH (.../blas) finds: it
 * calls cblas_dcabs1, which the reference libblas.so.3 defines and OpenBLAS's lacks.
 */
double cblas_dcabs1(const void *z);

double ref_blas_abs(void)
{
	double z[2] = { 3, -4 };

	return cblas_dcabs1(z);
}
