// Test cases for tests/discovery/discovery_guard_test.sh, which runs these
// binaries by hand: they are never registered with ctest themselves.
#include <doctest/doctest.h>

TEST_CASE("discovery probe: a plain name, with a comma") { CHECK(1 + 1 == 2); }

#ifdef TG_PROBE_UNSAFE_NAME
// Every character that CMake lists (; [ ] \ $ " #), bracket quoting ({ })
// or doctest's filters (* ?) treat specially.
TEST_CASE("discovery probe: a;b [c] \\d $e \"f\" #g {h} *? end") { CHECK(2 + 2 == 4); }
#endif
