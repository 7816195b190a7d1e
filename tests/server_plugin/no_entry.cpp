// A shared library that is not a program plugin (no entry point): the loader
// must refuse it by name and run nothing of it.
extern "C" __attribute__((visibility("default"))) int not_a_plugin() { return 42; }
