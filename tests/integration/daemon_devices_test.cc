// Devices and CPU placement against the real daemon: --list-devices, pinning the compute
// threads, and a model split over two ggml RPC servers (issue 8), on loopback only.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

// The CPUs each of the daemon's threads may run on, by thread id.
std::map<std::string, std::string> ThreadAffinities(pid_t pid) {
  std::map<std::string, std::string> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("Cpus_allowed_list:")) out[task.path().filename()] = line.substr(line.find_first_not_of(" \t", 18));
    }
  }
  return out;
}

TEST(DaemonCpuPlacement, PinsTheComputeThreadsToTheConfiguredCpus) {
  DaemonProcess d({"--cpu-affinity", "0", "--threads", "2"});
  ASSERT_TRUE(d.ready());
  EXPECT_EQ(d.CountLog("llmd info cpu_placement threads=2 cpus=0 "), 1u) << d.log();
  LlmClient client(d.socket());
  ASSERT_TRUE(client.Generate("Hello", 4).has_value());  // the scheduler's thread decodes, and is pinned then
  int pinned = 0;
  for (const auto& [tid, cpus] : ThreadAffinities(d.pid())) pinned += cpus == "0";
  // ggml pins its worker and the thread that created the pool; the scheduler's thread, which
  // drives decoding, is pinned too (it inherits the mask, and the engine pins whichever thread
  // decodes, so a reload with new CPUs moves it).
  EXPECT_GE(pinned, 3) << "the ggml worker, the loading thread and the decoding thread";
}

TEST(DaemonCpuPlacement, RefusesCpusThatAreNotOnline) {
  DaemonProcess d({"--cpu-affinity", "4000"});
  EXPECT_FALSE(d.ready());
  EXPECT_EQ(d.WaitExit(), 1);
  EXPECT_NE(d.log().find("not online"), std::string::npos) << d.log();
}


TEST(DaemonDevices, ListDevicesShowsEveryDeviceWithItsMemory) {
  const std::string dir = MakeTempDir();
  const int rc = std::system((std::string(LLMD_BINARY) + " --list-devices > " + dir + "/devices.txt").c_str());
  const std::string out = ReadAll(dir + "/devices.txt");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(rc, 0);
  EXPECT_NE(out.find("free MiB"), std::string::npos) << out;
  std::istringstream lines(out);
  std::string header, cpu, name, type;
  std::getline(lines, header);
  std::getline(lines, cpu);
  std::istringstream fields(cpu);
  long free_mib = -1, total_mib = -1;
  fields >> name >> type >> free_mib >> total_mib;
  EXPECT_EQ(name, "CPU");
  EXPECT_EQ(type, "cpu");
  EXPECT_GT(total_mib, 0);
  EXPECT_LE(free_mib, total_mib);
}

// A ggml-rpc-server bound to 127.0.0.1 on a free port (RPC is unauthenticated: never wider).
class RpcServer {
 public:
  RpcServer() {
    int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::close(probe);
    pid_ = ::fork();
    if (pid_ == 0) {
      DieWithParent();
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      const std::string port = std::to_string(port_);
      ::execl(LLMD_RPC_SERVER, LLMD_RPC_SERVER, "-H", "127.0.0.1", "-p", port.c_str(), nullptr);
      ::_exit(127);
    }
    // Until it accepts connections (a liveness bound only): a daemon started before then
    // would find no server and fail its startup.
    EXPECT_TRUE(WaitFor([&] { return Answers(); })) << "ggml-rpc-server never listened on port " << port_;
  }
  ~RpcServer() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  long RssKb() const { return ProcessRssKb(pid_); }

 private:
  bool Answers() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }
  int port_ = 0;
  pid_t pid_ = -1;
};

// A greedy, streamed generation of `max_tokens` on the daemon at `socket`.
auto Greedy(const std::string& socket, uint32_t max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.temperature = 0.0f;
  return LlmClient(socket).GenerateStream("Tell me about rivers", o, nullptr);
}

std::string GreedyText(const std::vector<std::string>& extra) {
  DaemonProcess d(extra);
  if (!d.ready()) return "(not ready: " + d.log() + ")";
  auto g = Greedy(d.socket(), 24);
  return g.has_value() ? g->text : "(error: " + g.error().ToString() + ")";
}

// The daemon's "placement_device" log fields for `device`: layers, planned and allocated MiB.
std::map<std::string, std::string> PlacementOf(const std::string& log, const std::string& device) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("placement_device") == std::string::npos || line.find(" device=" + device + " ") == std::string::npos) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  return fields;
}

TEST(DaemonRpc, ASplitOverTwoRpcServersGivesTheSameTokensAsTheCpu) {
  RpcServer a, b;
  const long a_before = a.RssKb(), b_before = b.RssKb();
  const std::string cpu = GreedyText({});
  std::string split;
  long a_loaded = 0, b_loaded = 0;
  std::map<std::string, long> weights_kib;  // what the log says each server holds
  {
    DaemonProcess d({"--rpc", a.endpoint() + "," + b.endpoint(), "--device", "RPC0,RPC1", "--gpu-layers", "-1"});
    ASSERT_TRUE(d.ready()) << d.log();
    // The weights now live in the two servers' memory.
    a_loaded = a.RssKb() - a_before;
    b_loaded = b.RssKb() - b_before;
    auto g = Greedy(d.socket(), 24);
    ASSERT_TRUE(g.has_value()) << g.error().ToString();
    split = g->text;
    // The planner's split (equal free memory: both layers on RPC0, the head on RPC1) is
    // what llama.cpp allocated.
    for (const std::string device : {"RPC0", "RPC1"}) {
      auto p = PlacementOf(d.log(), device);
      EXPECT_EQ(p["weights_mib"], p["planned_weights_mib"]) << device << "\n" << d.log();
      weights_kib[device] = static_cast<long>(std::stod(p["weights_mib"]) * 1024);
    }
    EXPECT_EQ(PlacementOf(d.log(), "RPC0")["layers"], "2");
    EXPECT_EQ(PlacementOf(d.log(), "RPC1")["output"], "yes");
    // HealthCheck's npu_core names the main device in use: RPC0, after the CPU in ggml's list.
    auto health = LlmClient(d.socket()).HealthCheck();
    ASSERT_TRUE(health.has_value());
    EXPECT_EQ(health->npu_core, 1);
  }
  std::printf("RPC servers grew by %ld and %ld KiB while serving the split model\n", a_loaded, b_loaded);
  EXPECT_EQ(split, cpu) << "greedy output over RPC0+RPC1 equals the CPU-only run";
  // Each server holds its part's weights; their KV pages are committed only as tokens use
  // them (patches/llama.cpp/0001), so the weights are what must show.
  EXPECT_GE(a_loaded, weights_kib["RPC0"] * 9 / 10) << "RPC0 holds its layers";
  EXPECT_GE(b_loaded, weights_kib["RPC1"] * 9 / 10) << "RPC1 holds the output head";
}

// The 0.6B shape with one 512-token slot and none reserved: small enough for two loopback servers, layers
// big enough (~8.5 MiB) for the caps to decide the split.
const std::vector<std::string> kSmallContext = {"--threads", "2", "--parallel", "1", "--reserved-sequences", "0",
                                                  "--context", "512"};

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(DaemonRpc, ThePlannersSplitIsTheOneLlamaCppUses) {
  RpcServer a, b;
  // Equal free memory would split 15/14 (llama.cpp's default); the caps make it 9/19 + head.
  const auto split_args = With(kSmallContext, {"--rpc", a.endpoint() + "," + b.endpoint(), "--device", "RPC0,RPC1",
                                               "--gpu-layers", "all", "--device-memory", "RPC0=200M,RPC1=700M"});
  std::string log;
  std::string split;
  {
    DaemonProcess d(split_args, Qwen06bQ4Path());
    ASSERT_TRUE(d.ready()) << d.log();
    auto g = Greedy(d.socket(), 8);
    ASSERT_TRUE(g.has_value()) << g.error().ToString();
    split = g->text;
    log = d.log();
  }
  EXPECT_NE(log.find("placement_plan model=qwen3-0.6b-q4_0 part=\"RPC0 layers 0-8, "), std::string::npos) << log;
  EXPECT_NE(log.find("placement_plan model=qwen3-0.6b-q4_0 part=\"RPC1 layers 9-27 + output, "), std::string::npos) << log;
  for (const std::string device : {"CPU", "RPC0", "RPC1"}) {
    auto p = PlacementOf(log, device);
    ASSERT_FALSE(p.empty()) << device << "\n" << log;
    // What llama.cpp allocated for weights on each device is what the planner put there.
    EXPECT_EQ(p["weights_mib"], p["planned_weights_mib"]) << device;
    EXPECT_LE(std::stod(p["weights_mib"]) + std::stod(p["context_mib"]) + std::stod(p["compute_mib"]),
              std::stod(p["planned_mib"]))
        << device << ": the plan's estimate covers what was allocated";
  }
  EXPECT_EQ(PlacementOf(log, "RPC0")["layers"], "9");
  EXPECT_EQ(PlacementOf(log, "RPC1")["layers"], "19");
  // Token identity with the CPU is the tiny model's test above: here the CPU would run Q4_0
  // through its repacked kernels, which round differently from the servers' plain ones, and
  // random weights turn that into a different greedy token within a few steps.
  EXPECT_FALSE(split.empty());
}

TEST(DaemonRpc, AModelThatCannotFitIsRefusedBeforeLoadingAndFitOffloadsWhatFits) {
  RpcServer a, b;
  const auto base = With(kSmallContext, {"--rpc", a.endpoint() + "," + b.endpoint(), "--device", "RPC0,RPC1",
                                         "--device-memory", "RPC0=100M,RPC1=250M"});
  {
    DaemonProcess d(With(base, {"--gpu-layers", "all"}), Qwen06bQ4Path());
    EXPECT_FALSE(d.ready());
    EXPECT_EQ(d.WaitExit(), 1);
    const std::string log = d.log();
    EXPECT_NE(log.find("the model does not fit with 29 of 29 layers offloaded"), std::string::npos) << log;
    EXPECT_NE(log.find("RPC1 would need"), std::string::npos) << log;
    EXPECT_NE(log.find("would fit: set gpu_layers = "), std::string::npos) << log;
    EXPECT_EQ(log.find("load_tensors"), std::string::npos) << "refused before llama.cpp loads anything";
  }
  DaemonProcess d(With(base, {"--gpu-layers", "fit"}), Qwen06bQ4Path());
  ASSERT_TRUE(d.ready()) << d.log();
  auto cpu = PlacementOf(d.log(), "CPU");
  EXPECT_GT(std::stoi(cpu["layers"]), 0) << "the layers that do not fit stay on the CPU\n" << d.log();
  EXPECT_EQ(PlacementOf(d.log(), "RPC1")["output"], "yes");
  EXPECT_LE(std::stod(PlacementOf(d.log(), "RPC0")["planned_mib"]), 100.0);
  EXPECT_LE(std::stod(PlacementOf(d.log(), "RPC1")["planned_mib"]), 250.0);
}

TEST(DaemonRpc, AnUnreachableServerIsAClearStartupError) {
  const std::string gone = "127.0.0.1:1";  // nothing listens on port 1
  DaemonProcess d({"--rpc", gone, "--device", "RPC0"});
  EXPECT_FALSE(d.ready());
  EXPECT_EQ(d.WaitExit(), 1);
  EXPECT_NE(d.log().find("cannot be reached"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace llmd::testing
