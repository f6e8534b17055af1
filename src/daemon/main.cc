// llmd: the on-device LLM daemon.
#include <cstdio>
#include <map>
#include <string>

#include "common/log.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "engine/llama/llama_engine.h"

extern char** environ;

int main(int argc, char** argv) {
  llmd::daemon::BlockSignals();
  llmd::config::ConfigSources sources;
  sources.args.assign(argv + 1, argv + argc);
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    if (size_t eq = kv.find('='); eq != std::string::npos) sources.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto parsed = llmd::config::ParseConfig(sources);
  if (!parsed.has_value()) {
    std::fprintf(stderr, "llmd: %s\n", parsed.error().message().c_str());
    return 2;
  }
  if (parsed->exit_now) {
    std::fputs(parsed->output.c_str(), stdout);
    return parsed->exit_code;
  }
  if (parsed->list_devices) {
    if (auto s = llmd::engine::AddRpcServers(parsed->config.engine.rpc_servers); !s.ok()) {
      std::fprintf(stderr, "llmd: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("%-24s %-6s %12s %12s  %s\n", "device", "type", "free MiB", "total MiB", "description");
    for (const auto& d : llmd::engine::DescribeLlamaDevices()) {
      std::printf("%-24s %-6s %12llu %12llu  %s\n", d.name.c_str(), d.type.c_str(),
                  static_cast<unsigned long long>(d.free_bytes >> 20),
                  static_cast<unsigned long long>(d.total_bytes >> 20), d.description.c_str());
    }
    return 0;
  }
  llmd::LogLevel level;
  if (llmd::ParseLogLevel(parsed->config.log_level, &level)) llmd::SetLogLevel(level);
  llmd::daemon::Daemon daemon(std::move(*parsed), std::move(sources));
  return daemon.Run();
}
