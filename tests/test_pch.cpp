// The source of promptly_test_pch, the target that builds the tests' shared precompiled header
// (tests/CMakeLists.txt); it has to compile something.
