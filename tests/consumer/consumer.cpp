// Built against the installed package by `./run test`: proves the install
// tree (headers, library, CMake config, pkg-config file) is usable.
#include <promptly/promptly.hpp>

#include <cstdio>

static long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

int main() {
  promptly::runtime rt;
  const long r = rt.run([] { return fib(20); });
  std::printf("consumer: promptly %s, fib(20) = %ld\n", PROMPTLY_VERSION, r);
  return r == 6765 ? 0 : 1;
}
