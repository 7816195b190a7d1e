// Readable names of priority types, for run-time messages (exceptions,
// detector reports). A priority may name itself with a static member
//   struct ui { static constexpr std::string_view name = "ui"; };
// otherwise the compiler's spelling of the type is used (gcc and clang both
// put it in __PRETTY_FUNCTION__ as "T = <type>"). Compile-time diagnostics
// do not need this: the compilers print template arguments themselves.
#pragma once

#include <concepts>
#include <initializer_list>
#include <string_view>

namespace promptly::detail {

template <class T>
constexpr std::string_view pretty_function_of() noexcept {
  return __PRETTY_FUNCTION__;
}

template <class T>
constexpr std::string_view compiler_type_name() noexcept {
  std::string_view s = pretty_function_of<T>();
  const std::size_t start = s.find("T = ");
  if (start == std::string_view::npos) return s;
  s.remove_prefix(start + 4);
  s = s.substr(0, s.find_first_of(";]"));
  // A priority declared in an unnamed namespace: drop the noise.
  for (std::string_view anonymous : {std::string_view("{anonymous}::"), std::string_view("(anonymous namespace)::")})
    if (s.starts_with(anonymous)) s.remove_prefix(anonymous.size());
  return s;
}

template <class P>
constexpr std::string_view priority_name() noexcept {
  if constexpr (requires {
                  { P::name } -> std::convertible_to<std::string_view>;
                })
    return std::string_view(P::name);
  else
    return compiler_type_name<P>();
}

}  // namespace promptly::detail
