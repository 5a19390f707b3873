#pragma once
// The refusals every options struct of graph/options_text.h owes its users: each bad text
// throws std::invalid_argument whose message holds what the case expects (the item, and
// the fix), never a default read in its place.
#include <doctest/doctest.h>

#include <initializer_list>
#include <stdexcept>

namespace tg::testing {

struct OptionRefusal {
  const char* text;
  const char* why;  // a fragment of the message
};

template <typename Options>
void check_option_refusals(std::initializer_list<OptionRefusal> cases) {
  for (const OptionRefusal& c : cases) {
    CAPTURE(c.text);
    CHECK_THROWS_WITH_AS(Options::from_string(c.text), doctest::Contains(c.why), std::invalid_argument);
  }
}

}  // namespace tg::testing
