// The smallest complete Promptly program (shown in the README).
#include <promptly/promptly.hpp>

#include <cstdio>

long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = promptly::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

int main() {
  promptly::runtime rt;                         // one worker per available core
  long r = rt.run([] { return fib(30); });      // blocks until the task tree is done
  auto f = rt.submit([] { return fib(25); });   // a future, from any thread
  std::printf("fib(30) = %ld, fib(25) = %ld\n", r, f.get());
}
