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
  EXPECT_EQ(d.WaitExit(std::chrono::seconds(10)), 1);
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
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      const std::string port = std::to_string(port_);
      ::execl(LLMD_RPC_SERVER, LLMD_RPC_SERVER, "-H", "127.0.0.1", "-p", port.c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 100 && !Answers(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
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

std::string GreedyText(const std::vector<std::string>& extra) {
  DaemonProcess d(extra);
  if (!d.ready()) return "(not ready: " + d.log() + ")";
  LlmClient client(d.socket());
  GenerateOptions o;
  o.max_tokens = 24;
  o.temperature = 0.0f;
  auto g = client.GenerateStream("Tell me about rivers", o, nullptr);
  return g.has_value() ? g->text : "(error: " + g.error().ToString() + ")";
}

TEST(DaemonRpc, ASplitOverTwoRpcServersGivesTheSameTokensAsTheCpu) {
  RpcServer a, b;
  const long a_before = a.RssKb(), b_before = b.RssKb();
  const std::string cpu = GreedyText({});
  std::string split;
  long a_loaded = 0, b_loaded = 0;
  {
    DaemonProcess d({"--rpc", a.endpoint() + "," + b.endpoint(), "--device", "RPC0,RPC1", "--gpu-layers", "-1"});
    ASSERT_TRUE(d.ready()) << d.log();
    // The weights now live in the two servers' memory.
    a_loaded = a.RssKb() - a_before;
    b_loaded = b.RssKb() - b_before;
    LlmClient client(d.socket());
    GenerateOptions o;
    o.max_tokens = 24;
    o.temperature = 0.0f;
    auto g = client.GenerateStream("Tell me about rivers", o, nullptr);
    ASSERT_TRUE(g.has_value()) << g.error().ToString();
    split = g->text;
  }
  std::printf("RPC servers grew by %ld and %ld KiB while serving the split model\n", a_loaded, b_loaded);
  EXPECT_EQ(split, cpu) << "greedy output over RPC0+RPC1 equals the CPU-only run";
  EXPECT_GT(a_loaded, 2 * 1024) << "RPC0 holds part of the model";
  EXPECT_GT(b_loaded, 2 * 1024) << "RPC1 holds part of the model";
}

TEST(DaemonRpc, AnUnreachableServerIsAClearStartupError) {
  const std::string gone = "127.0.0.1:1";  // nothing listens on port 1
  DaemonProcess d({"--rpc", gone, "--device", "RPC0"});
  EXPECT_FALSE(d.ready());
  EXPECT_EQ(d.WaitExit(std::chrono::seconds(10)), 1);
  EXPECT_NE(d.log().find("cannot be reached"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace llmd::testing
