// Runs one of the client scripts beside this header (openai.mjs, ai_sdk.mjs, langchain.mjs:
// real npm client libraries, unchanged, pinned in package.json / package-lock.json) against a
// real daemon's TCP listener, with the Node 22 the npm_clients fixture installs (install.sh).
// Header-only; the suites define LLMD_NPM_DIR (the install) and LLMD_CLIENTS_DIR (this folder).
#ifndef LLMD_TESTS_INTEGRATION_CLIENTS_RUN_CLIENT_H_
#define LLMD_TESTS_INTEGRATION_CLIENTS_RUN_CLIENT_H_

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/http_harness.h"

namespace llmd::testing {

struct ClientRun {
  int rc = -1;  // the script's exit status (124: the overall timeout)
  std::string output;
};

inline std::string JoinCases(const std::vector<std::string>& cases) {
  std::string s;
  for (const auto& c : cases) s += (s.empty() ? "" : ",") + c;
  return s;
}

// Runs `script` for exactly `cases` (LLMD_CLIENT_CASES); the script prints PASS/FAIL per case.
// `more_env`: extra VAR=value words for the script (e.g. LLMD_EMBED_MODEL=name).
inline ClientRun RunClientScript(HttpDaemon& d, const std::string& script, const std::vector<std::string>& cases,
                                 const std::string& more_env = "", int timeout_s = 840) {
  ClientRun run;
  struct stat st;
  if (::stat(LLMD_NPM_DIR "/node_modules/.llmd-installed", &st) != 0) {
    run.output = "the npm clients are not installed in " LLMD_NPM_DIR
                 ": run `ctest -R npm_clients` (tests/integration/clients/install.sh)";
    return run;
  }
  // Node resolves an ES module's imports from the module's own folder, so the scripts run
  // from a copy beside a link to the installed node_modules.
  const std::string dir = d.process().dir() + "/clients";
  const std::string out = dir + "/" + script + ".out";
  const std::string cmd =
      "mkdir -p " + dir + " && cp " LLMD_CLIENTS_DIR "/*.mjs " + dir + "/ && ln -sfn " LLMD_NPM_DIR
      "/node_modules " + dir + "/node_modules && cd " + dir +
      " && env NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost LLMD_BASE_URL=http://127.0.0.1:" +
      std::to_string(d.port()) + "/v1 LLMD_API_KEY=" + HttpDaemon::kApiKey + " LLMD_CLIENT_CASES=" +
      JoinCases(cases) + " " + more_env + " timeout " + std::to_string(timeout_s) + " node_modules/.bin/node " +
      script + " > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = ReadAll(out);
  return run;
}

// One gtest failure per case that did not print `PASS <case>`, with the script's reason.
inline void ExpectCasesPassed(const ClientRun& run, const std::vector<std::string>& cases) {
  std::set<std::string> passed;
  std::map<std::string, std::string> failed;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("PASS ")) passed.insert(line.substr(5));
    if (line.starts_with("FAIL ")) {
      const size_t colon = line.find(':');
      failed[line.substr(5, colon == std::string::npos ? std::string::npos : colon - 5)] = line;
    }
  }
  for (const auto& c : cases) {
    if (passed.contains(c)) continue;
    if (auto it = failed.find(c); it != failed.end()) {
      ADD_FAILURE() << it->second;
    } else {
      ADD_FAILURE() << "case " << c << " printed no result";
    }
  }
  EXPECT_EQ(run.rc, 0) << run.output;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_INTEGRATION_CLIENTS_RUN_CLIENT_H_
