// `promptly --url`: the CLI's requests over the HTTP API (docs/server.md, "HTTP API").
#include <httplib.h>

#include "cli.hpp"
#include "server/daemon/socket.hpp"

namespace promptly::cli {

int http_call_and_print(const connection_options& conn, const std::string& method, const std::string& path,
                        const json& body) {
  if (conn.url.rfind("http://", 0) != 0)
    throw std::invalid_argument("--url " + conn.url + ": this CLI speaks http:// (for https use python/promptly_client.py)");
  if (conn.token_file.empty()) throw std::invalid_argument("--url needs --token-file");
  httplib::Client cl(conn.url);
  cl.set_bearer_token_auth(server::daemon::read_token_file(conn.token_file).c_str());
  cl.set_read_timeout(24 * 3600, 0);  // a wait lasts as long as its job
  httplib::Result r = method == "POST"     ? cl.Post(path.c_str(), body.dump(), "application/json")
                      : method == "DELETE" ? cl.Delete(path.c_str())
                                           : cl.Get(path.c_str());
  if (!r) throw std::runtime_error("cannot reach " + conn.url + ": " + httplib::to_string(r.error()));
  const json reply = json::parse(r->body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    throw std::runtime_error("HTTP " + std::to_string(r->status) + " from " + conn.url + " without a JSON reply");
  return print_reply(reply);
}

}  // namespace promptly::cli
