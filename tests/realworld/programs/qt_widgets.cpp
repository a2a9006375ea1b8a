// A Qt5 widgets program that builds its objects without a display (offscreen platform).
#include <QtWidgets/QApplication>
#include <QtWidgets/QLabel>
#include <cstdlib>

int main(int argc, char **argv)
{
	setenv("QT_QPA_PLATFORM", "offscreen", 1);
	QApplication app(argc, argv);
	QLabel label("dlscope");
	label.show();
	return label.text().isEmpty();
}
