// A program plugin built for another plugin ABI version: the loader must
// refuse it before calling its registration (which would register a program).
#include <promptly/server/plugin.hpp>

extern "C" __attribute__((visibility("default"))) unsigned promptly_server_plugin_abi() {
  return PROMPTLY_SERVER_PLUGIN_ABI + (1u << 16);
}
extern "C" __attribute__((visibility("default"))) void promptly_server_plugin_register(void* server) {
  static_cast<promptly::server::job_server*>(server)->register_program(
      "wrong_abi_program", [](promptly::server::job_context&) -> promptly::server::json { return 0; });
}
