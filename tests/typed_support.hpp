// Shared by the typed_*_test.cpp suites.
#pragma once

#include "promptly/config.hpp"

// Two workers (the machine's count) and `levels` priority levels.
inline promptly::runtime_config typed_config(unsigned levels, bool detect_inversions = false) {
  promptly::runtime_config c;
  c.workers = 2;
  c.levels = levels;
  c.detect_inversions = detect_inversions;
  return c;
}
