// An extension with its own copy of point.proto's generated code (-DEXT names it apart).
#include "point.pb.h"

extern "C" int EXT(void)
{
	dlscope::demo::Point p;

	p.set_x(3);
	return (int)p.ByteSizeLong();
}
