// Program plugins (promptly/server/plugin.hpp): a plugin built by the test
// CMake registers programs that run as jobs (fork-join in the job's pool on
// the host's workers); a library without the entry point and one with
// another ABI version are refused with errors naming the file, and nothing
// of them is registered.
#include "promptly/server/plugin.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "promptly/promptly.hpp"
#include "runtime_support.hpp"

namespace srv = promptly::server;
namespace fs = std::filesystem;

namespace {

const fs::path plugins = PROMPTLY_TEST_PLUGIN_DIR;

bool has_program(const srv::job_server& s, const std::string& name) {
  for (const auto& p : s.programs())
    if (p.name == name) return true;
  return false;
}

std::string load_error(srv::job_server& s, const fs::path& dir) {
  try {
    (void)srv::load_program_plugins(s, dir);
  } catch (const srv::plugin_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ServerPlugins, LoadsAPluginAndRunsItsPrograms) {
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  ASSERT_EQ(srv::load_program_plugins(s, plugins / "good"), 1u);
  ASSERT_TRUE(has_program(s, "plugin_square"));
  EXPECT_EQ(s.submit("plugin_square", {{"x", -12}}).wait().result.get<long>(), 144);
  const srv::job_info sum = s.submit("plugin_sum", {{"n", 1000}}).wait();
  ASSERT_EQ(sum.state, srv::job_state::done) << sum.error;
  EXPECT_EQ(sum.result["sum"].get<long>(), 999 * 1000 / 2);
  EXPECT_TRUE(sum.result["in_pool"].get<bool>()) << "the plugin's tasks ran outside the job's pool";
  // Its schema is enforced like a built-in program's.
  try {
    (void)s.submit("plugin_square", {{"x", 2000000}});
    FAIL() << "out-of-range argument accepted";
  } catch (const srv::error& e) {
    EXPECT_EQ(e.code(), srv::error_code::bad_args);
  }
}

TEST(ServerPlugins, APluginGetsTheWholePublicApiFuturesAndIoTimersIncluded) {
  // good.so calls io::sleep_for and async, which this executable does not
  // call itself: it loads only if the host exports every public symbol.
  promptly::runtime rt(config(2, "prompt"));
  srv::job_server s(rt);
  ASSERT_EQ(srv::load_program_plugins(s, plugins / "good"), 1u);
  const srv::job_info io = s.submit("plugin_io", {{"us", 200}}).wait();
  ASSERT_EQ(io.state, srv::job_state::done) << io.error;
  EXPECT_EQ(io.result["sum"].get<long>(), 42);
  EXPECT_TRUE(io.result["slept_enough"].get<bool>()) << io.result;
}

TEST(ServerPlugins, RefusesALibraryWithoutTheEntryPoint) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt);
  const std::string e = load_error(s, plugins / "no_entry");
  EXPECT_NE(e.find("no_entry.so"), std::string::npos) << e;
  EXPECT_NE(e.find("not a program plugin"), std::string::npos) << e;
  EXPECT_TRUE(s.programs().empty());
}

TEST(ServerPlugins, RefusesAnotherAbiVersionBeforeRegistering) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt);
  const std::string e = load_error(s, plugins / "wrong_abi");
  EXPECT_NE(e.find("wrong_abi.so"), std::string::npos) << e;
  EXPECT_NE(e.find("plugin ABI"), std::string::npos) << e;
  EXPECT_FALSE(has_program(s, "wrong_abi_program")) << "the registration ran despite the ABI mismatch";
}

TEST(ServerPlugins, RefusesAFileThatIsNoLibraryAndAMissingDirectory) {
  promptly::runtime rt(config(1, "prompt"));
  srv::job_server s(rt);
  const fs::path dir = fs::temp_directory_path() / ("promptly_plugin_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "junk.so") << "not an ELF file"; }
  { std::ofstream(dir / "readme.txt") << "ignored: not *.so"; }
  const std::string e = load_error(s, dir);
  EXPECT_NE(e.find("junk.so"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot be loaded"), std::string::npos) << e;
  fs::remove_all(dir);
  const std::string missing = load_error(s, dir);
  EXPECT_NE(missing.find(dir.string()), std::string::npos) << missing;
  // An empty directory loads nothing.
  fs::create_directories(dir);
  EXPECT_EQ(srv::load_program_plugins(s, dir), 0u);
  fs::remove_all(dir);
}
