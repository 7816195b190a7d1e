// Loading program plugins (include/promptly/server/plugin.hpp).
//
// Invariants
//  * Nothing in a library runs before its ABI version was checked, except
//    its static initialisers (dlopen runs those; no loader can avoid it).
//  * A library whose registration ran is never closed: the programs it
//    registered point into it. A library refused before that is closed.
//  * Only files the operator's directory holds are opened; clients never
//    name a path (docs/server.md, "Security").
#include "promptly/server/plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace promptly::server {

namespace {

struct library {
  void* handle;
  ~library() {
    if (handle != nullptr) dlclose(handle);
  }
  void* keep() { return std::exchange(handle, nullptr); }
};

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%06x", v);
  return buf;
}

}  // namespace

void load_program_plugin(job_server& srv, const std::filesystem::path& file) {
  const std::string name = file.string();
  dlerror();  // clear
  library lib{dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (lib.handle == nullptr) {
    const char* why = dlerror();
    throw plugin_error("program plugin " + name + ": cannot be loaded: " + (why != nullptr ? why : "unknown dlopen error"));
  }
  void* abi = dlsym(lib.handle, PROMPTLY_SERVER_PLUGIN_ABI_SYMBOL);
  void* reg = dlsym(lib.handle, PROMPTLY_SERVER_PLUGIN_REGISTER_SYMBOL);
  if (abi == nullptr || reg == nullptr)
    throw plugin_error("program plugin " + name + ": not a program plugin (no " +
                       (abi == nullptr ? PROMPTLY_SERVER_PLUGIN_ABI_SYMBOL : PROMPTLY_SERVER_PLUGIN_REGISTER_SYMBOL) +
                       " entry point; define it with PROMPTLY_SERVER_PROGRAMS, promptly/server/plugin.hpp)");
  const unsigned version = reinterpret_cast<unsigned (*)()>(abi)();
  if (version != PROMPTLY_SERVER_PLUGIN_ABI)
    throw plugin_error("program plugin " + name + ": built for plugin ABI " + hex(version) + ", this server has " +
                       hex(PROMPTLY_SERVER_PLUGIN_ABI) + " (rebuild it against this Promptly)");
  void* kept = lib.keep();  // from here the library may have registered programs: it stays loaded
  (void)kept;
  try {
    reinterpret_cast<void (*)(void*)>(reg)(&srv);
  } catch (const std::exception& e) {
    throw plugin_error("program plugin " + name + ": its registration threw: " + e.what());
  } catch (...) {
    throw plugin_error("program plugin " + name + ": its registration threw a non-standard exception");
  }
}

std::size_t load_program_plugins(job_server& srv, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw plugin_error("program plugin directory " + dir.string() + ": " + (ec ? ec.message() : "not a directory"));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".so") continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) load_program_plugin(srv, f);
  return files.size();
}

}  // namespace promptly::server
