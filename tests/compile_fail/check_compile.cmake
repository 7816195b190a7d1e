# Runs one compile-fail case: cmake -DCXX=<compiler> -DSOURCE=<file.cpp>
#   -DINCLUDES=<dir|dir|...> -P check_compile.cmake
#
# A source with a line "// expect-compile: success" passes only if it
# compiles. Any other source passes only if it fails to compile AND the
# compiler's output matches every "// expect: <CMake regex>" line in it
# (newlines in the output are replaced by spaces first; at least one expect
# line is required, so a case cannot pass by failing for an unrelated reason
# without saying what it expects).
cmake_minimum_required(VERSION 3.20)
foreach(var CXX SOURCE INCLUDES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile.cmake: -D${var}=... is required")
  endif()
endforeach()

set(ENV{LC_ALL} C)  # plain ASCII quotes in diagnostics
string(REPLACE "|" ";" include_dirs "${INCLUDES}")
set(include_flags "")
foreach(dir ${include_dirs})
  list(APPEND include_flags "-I${dir}")
endforeach()

execute_process(
  COMMAND "${CXX}" -std=c++20 -fsyntax-only -fdiagnostics-color=never ${include_flags} "${SOURCE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
string(REPLACE "\n" " " flat "${output}")

file(STRINGS "${SOURCE}" must_compile REGEX "^// expect-compile: success")
if(must_compile)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} must compile but did not (${CXX}):\n${output}")
  endif()
  message(STATUS "compiled, as expected")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected (${CXX})")
endif()
file(STRINGS "${SOURCE}" expect_lines REGEX "^// expect: ")
if(NOT expect_lines)
  message(FATAL_ERROR "${SOURCE} has no '// expect: <regex>' line")
endif()
foreach(line ${expect_lines})
  string(REGEX REPLACE "^// expect: " "" pattern "${line}")
  if(NOT flat MATCHES "${pattern}")
    message(FATAL_ERROR "${SOURCE} failed to compile, but the diagnostic does not match '${pattern}' (${CXX}):\n${output}")
  endif()
  message(STATUS "diagnostic matches '${pattern}'")
endforeach()
