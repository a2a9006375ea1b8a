// Boost.Filesystem, Boost.Thread and oneTBB in one process: each really used once.
#include <atomic>
#include <boost/filesystem.hpp>
#include <boost/thread.hpp>
#include <tbb/parallel_for.h>

int main()
{
	std::atomic<long> sum{ 0 };
	tbb::parallel_for(0, 1000, [&](int i) { sum += i; });
	boost::thread t([] { boost::filesystem::exists("/"); });
	t.join();
	return sum == 499500 ? 0 : 1;
}
