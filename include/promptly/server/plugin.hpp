// Programs from shared libraries: a plugin is a shared library (a CMake
// MODULE) that registers programs with a job_server when the server loads
// it. It is compiled against the installed package's headers and links none
// of Promptly's code (target promptly::server_plugin): its tasks run on the
// host's scheduler, through the host's exported symbols. The host links all
// of libpromptly and promptly_server and exports it (promptlyd does), so a
// plugin may use any public API, io:: and futures included.
//
//   #include <promptly/server/plugin.hpp>
//
//   PROMPTLY_SERVER_PROGRAMS(srv) {
//     srv.register_program("square", [](promptly::server::job_context& ctx) -> promptly::server::json {
//       const auto x = ctx.args()["x"].get<std::int64_t>();
//       return x * x;
//     }, promptly::server::arg_schema{}.integer("x", {.min = -1000000, .max = 1000000}));
//   }
//
// The macro defines two extern "C" entry points: one returning the plugin
// ABI version the library was compiled with, one calling the body. The
// loader checks the version before it calls anything else, and refuses a
// library compiled against another version (the layout of job_server,
// std::function and nlohmann::json must match the host's). Loading runs the
// library's static initialisers (as any dlopen does) and then only the body.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "promptly/server/job_server.hpp"

// Bumped whenever job_server's registration interface, program_fn, job_context
// or the JSON library's major/minor version changes what a plugin sees.
#define PROMPTLY_SERVER_PLUGIN_ABI_BASE 1u
// The version a plugin reports: the base and nlohmann-json's major and
// minor version (both sides must agree on the json layout).
#define PROMPTLY_SERVER_PLUGIN_ABI                                                                      \
  ((PROMPTLY_SERVER_PLUGIN_ABI_BASE << 16) | (static_cast<unsigned>(NLOHMANN_JSON_VERSION_MAJOR) << 8) | \
   static_cast<unsigned>(NLOHMANN_JSON_VERSION_MINOR))

// The symbols the loader looks up.
#define PROMPTLY_SERVER_PLUGIN_ABI_SYMBOL "promptly_server_plugin_abi"
#define PROMPTLY_SERVER_PLUGIN_REGISTER_SYMBOL "promptly_server_plugin_register"

// Defines the plugin's entry points; the braces that follow are the body,
// with `srv` (a promptly::server::job_server&) in scope.
#define PROMPTLY_SERVER_PROGRAMS(srv)                                                                       \
  static void promptly_server_plugin_body(::promptly::server::job_server& srv);                            \
  extern "C" __attribute__((visibility("default"))) unsigned promptly_server_plugin_abi() {                \
    return PROMPTLY_SERVER_PLUGIN_ABI;                                                                      \
  }                                                                                                         \
  extern "C" __attribute__((visibility("default"))) void promptly_server_plugin_register(void* server) { \
    promptly_server_plugin_body(*static_cast<::promptly::server::job_server*>(server));                     \
  }                                                                                                         \
  static void promptly_server_plugin_body(::promptly::server::job_server& srv)

namespace promptly::server {

// A library that is not a valid plugin: its message names the file and
// what is wrong (not loadable, no entry point, another ABI version, or the
// exception its registration threw).
class plugin_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads every regular file named *.so in `dir` (not recursively, in name
// order): dlopen, check the ABI version, call the registration. Returns the
// number of libraries loaded. Throws plugin_error at the first bad library
// (those before it stay loaded, their programs registered), and for a dir
// that does not exist or is not a directory. Loaded libraries stay loaded
// for the life of the process (their programs may run at any time).
std::size_t load_program_plugins(job_server& srv, const std::filesystem::path& dir);

// Loads one library as above.
void load_program_plugin(job_server& srv, const std::filesystem::path& file);

}  // namespace promptly::server
