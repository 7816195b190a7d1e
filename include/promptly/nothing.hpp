// promptly::nothing: the value a void result becomes where a value is needed
// (join() of two void callables returns std::pair<nothing, nothing>; a
// future<void>'s stored result).
#pragma once

namespace promptly {

struct nothing {
  friend bool operator==(nothing, nothing) = default;
};

}  // namespace promptly
