// Built against the installed package by `./run test`: proves the install
// tree (headers, library, CMake config, pkg-config file) is usable, and
// that the options structs, filled with designated initializers as the
// docs show, compile without warnings under -Wall -Wextra -Werror (GCC 12
// warned about every member without a default initializer that such an
// initializer left out, e.g. pool_options::elastic).
#include <promptly/promptly.hpp>

#include <cstdio>

static long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

int main() {
  promptly::runtime rt{promptly::runtime_config{.workers = 2, .policy = "fair", .fair = {.weights = {3, 1}}}};
  const long r = rt.run([] { return fib(20); });
  const promptly::pool background = rt.create_pool({.rank = 1});
  const long in_pool = rt.submit(background, [] { return fib(15); }).get();
  rt.remove_pool(background);
  std::printf("consumer: promptly %s, fib(20) = %ld, fib(15) in a pool = %ld\n", PROMPTLY_VERSION, r, in_pool);
  return r == 6765 && in_pool == 610 ? 0 : 1;
}
