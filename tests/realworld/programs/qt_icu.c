/* A plain C program linked against Qt5 (Core, Gui, OpenGL) and ICU: nothing loaded RTLD_LOCAL. */
int main(void)
{
	return 0;
}
