// SPDX-License-Identifier: Apache-2.0
// The runc backend's pure parts: the OCI config, cgroup mapping (v1 and v2), images.
#include "libbai/protocol/wire_json.h"
#include "server-reference/agent/backend.h"
#include "server-reference/agent/images.h"
#include "server-reference/agent/runc_backend.h"
#include "tests/testing_util/layer_tar.h"
#include "tests/testing_util/subprocess.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

namespace bai::agent {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

json MountAt(json const& config, std::string const& dest) {
  for (auto const& m : config["mounts"]) {
    if (m["destination"] == dest) return m;
  }
  return json();
}

// A create_kernel `resources` map as the codec reads it.
protocol::ResourceSlots Slots(char const* text) {
  auto slots = internal::SlotsFromJson(json::parse(text));
  EXPECT_TRUE(slots.ok()) << text;
  return slots.ok() ? *slots : protocol::ResourceSlots{};
}

class OciConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.session_id = "0b2c0d6e-1111-2222-3333-444455556666";
    spec_.session_name = "train";
    spec_.session_type = "batch";
    spec_.image = "python";
    spec_.resources = Slots(R"({"cpu": "0.5", "mem": "268435456"})");
    spec_.environ = {{"FOO", "bar"}, {"BACKENDAI_SESSION_ID", "spoofed"}, {"HOME", "/x"}};
    spec_.mounts = {{"data", "/srv/vf/data", "", "ro"},
                    {"out", "/srv/vf/out", "results", "rw"},
                    {"evil", "/etc", "../../etc", "ro"}};
    image_.name = "python";
    image_.rootfs = "/var/lib/bai/images/python/rootfs";
    image_.host_mounts = {"/usr"};
    image_.labels = {{"ai.backend.runtime-type", "python"}};
    options_.agent_id = "a1";
    options_.tmp_size = "128m";
    options_.home_size = "2g";
    layout_ = {"/state/kernels/k", "/state/bin", "/bai/a1/k", nullptr, "2"};
  }
  json Config() { return json::parse(OciConfig(spec_, image_, options_, layout_)); }

  KernelSpec spec_;
  Image image_;
  RuncOptions options_;
  BundleLayout layout_;
};

TEST_F(OciConfigTest, IsolationAsDecided) {
  json c = Config();
  std::vector<std::string> ns;
  for (auto const& n : c["linux"]["namespaces"]) ns.push_back(n["type"]);
  EXPECT_THAT(ns, ::testing::UnorderedElementsAre("pid", "network", "ipc", "uts", "mount"));
  EXPECT_EQ(c["process"]["user"]["uid"], 1000);
  EXPECT_EQ(c["process"]["user"]["gid"], 1000);
  EXPECT_EQ(c["process"]["noNewPrivileges"], true);
  for (char const* set : {"bounding", "effective", "permitted", "inheritable", "ambient"}) {
    EXPECT_TRUE(c["process"]["capabilities"][set].empty()) << set;
  }
  EXPECT_EQ(c["root"]["readonly"], true);
  EXPECT_EQ(c["root"]["path"], image_.rootfs);
  EXPECT_EQ(c["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ALLOW");
  auto denied = c["linux"]["seccomp"]["syscalls"][0]["names"];
  for (char const* s : {"mount", "unshare", "setns", "bpf", "kexec_load", "reboot", "ptrace"}) {
    if (std::string(s) == "ptrace") continue;  // allowed: debuggers inside the kernel work
    EXPECT_THAT(denied, Contains(s));
  }
  EXPECT_EQ(c["linux"]["cgroupsPath"], "/bai/a1/k");
  EXPECT_EQ(c["hostname"], "main1");
  // The runner is the first process, from the read-only runner directory.
  EXPECT_EQ(c["process"]["args"][0], "/opt/bai/bin/bai-kernel-runner");
  EXPECT_EQ(MountAt(c, "/opt/bai/bin")["options"], json({"bind", "ro", "nosuid", "nodev"}));
  EXPECT_EQ(MountAt(c, "/opt/bai/run")["source"], "/state/kernels/k/run");
}

// Issue 43, 5g: the sandbox's refusals stand unless the operator grants an image an exception
// (--sandbox-exception IMAGE=NAME…); an image's own labels cannot.
TEST_F(OciConfigTest, OnlyTheOperatorLetsAnImagePastPartOfTheSandbox) {
  auto denied_names = [](json const& c) {
    std::set<std::string> out;
    for (auto const& rule : c["linux"]["seccomp"]["syscalls"]) {
      if (!rule.contains("args")) {
        for (auto const& n : rule["names"]) out.insert(n.get<std::string>());
      } else {
        out.insert(rule["names"][0].get<std::string>() + "(masked)");
      }
    }
    return out;
  };
  auto plain = denied_names(Config());
  for (char const* s : {"unshare", "mount", "io_uring_setup", "perf_event_open", "bpf",
                        "clone(masked)", "clone3"}) {
    EXPECT_TRUE(plain.count(s)) << s;
  }
  // The image asking for it changes nothing.
  image_.labels["ai.backend.bai.sandbox-exceptions"] = "userns,io_uring";
  EXPECT_EQ(denied_names(Config()), plain);
  // Granted for "python" (every tag): userns and io_uring come back, nothing else does.
  options_.sandbox_exceptions["python"] = {"userns", "io_uring"};
  auto granted = denied_names(Config());
  for (char const* s : {"unshare", "setns", "mount", "pivot_root", "io_uring_setup",
                        "io_uring_enter", "clone(masked)", "clone3"}) {
    EXPECT_FALSE(granted.count(s)) << s;
  }
  for (char const* s : {"perf_event_open", "bpf", "keyctl", "kexec_load", "reboot"}) {
    EXPECT_TRUE(granted.count(s)) << s;
  }
  // Granted for another image, or another tag: none here.
  options_.sandbox_exceptions = {{"shell", {"userns"}}, {"python:3.12", {"perf"}}};
  image_.aliases = {"python:3.11"};
  EXPECT_EQ(denied_names(Config()), plain);
  options_.sandbox_exceptions = {{"python:3.11", {"perf"}}};
  EXPECT_FALSE(denied_names(Config()).count("perf_event_open"));
  image_.aliases.clear();
}

TEST(SandboxExceptionTest, TheFlagNamesAnImageAndKnownExceptions) {
  auto ok = ParseSandboxException("pytorch:2.4=userns,io_uring");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->first, "pytorch:2.4");
  EXPECT_EQ(ok->second, (std::set<std::string>{"userns", "io_uring"}));
  for (char const* bad : {"python", "=userns", "python=", "python=userns,root", "python=bpf"}) {
    auto r = ParseSandboxException(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("userns, io_uring, perf")) << bad;
  }
}

TEST_F(OciConfigTest, LimitsFromSlots) {
  json r = Config()["linux"]["resources"];
  EXPECT_EQ(r["cpu"]["quota"], 50000);
  EXPECT_EQ(r["cpu"]["period"], 100000);
  EXPECT_EQ(r["cpu"]["cpus"], "2");
  EXPECT_EQ(r["memory"]["limit"], 268435456);
  EXPECT_EQ(r["pids"]["limit"], 4096);
  EXPECT_EQ(r["devices"][0]["allow"], false);
}

TEST_F(OciConfigTest, ScratchIsSizeLimitedTmpfsOwnedByWork) {
  json c = Config();
  json home = MountAt(c, "/home/work");
  EXPECT_EQ(home["type"], "tmpfs");
  EXPECT_THAT(home["options"], Contains("size=2g"));
  EXPECT_THAT(home["options"], Contains("uid=1000"));
  EXPECT_THAT(MountAt(c, "/tmp")["options"], Contains("size=128m"));
  EXPECT_THAT(MountAt(c, "/usr")["options"], Contains("ro"));
}

TEST_F(OciConfigTest, VfolderMountsKeepTheirPermissionAndStayUnderHome) {
  json c = Config();
  EXPECT_THAT(MountAt(c, "/home/work/data")["options"], Contains("ro"));
  EXPECT_EQ(MountAt(c, "/home/work/data")["source"], "/srv/vf/data");
  EXPECT_THAT(MountAt(c, "/home/work/results")["options"], Contains("rw"));
  // A kernel path that climbs out is dropped, not mounted.
  for (auto const& m : c["mounts"]) EXPECT_NE(m["source"], "/etc");
}

TEST_F(OciConfigTest, EnvironmentHasSessionVariablesThatUsersCannotSpoof) {
  std::vector<std::string> env = Config()["process"]["env"];
  EXPECT_THAT(env, Contains("FOO=bar"));
  EXPECT_THAT(env, Contains("BACKENDAI_SESSION_ID=" + spec_.session_id));
  EXPECT_THAT(env, Not(Contains("BACKENDAI_SESSION_ID=spoofed")));
  EXPECT_THAT(env, Contains("BACKENDAI_SESSION_NAME=train"));
  EXPECT_THAT(env, Contains("BACKENDAI_CLUSTER_ROLE=main"));
  EXPECT_THAT(env, Contains("BACKENDAI_MEM_LIMIT=268435456"));
  // A user value replaces a default rather than duplicating the key.
  EXPECT_THAT(env, Contains("HOME=/x"));
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](std::string const& e) { return e.rfind("HOME=", 0) == 0; }),
            1);
}

// Issue 46, item 5: an image of its own keeps its PATH, gets its corecount variables (unless the
// user sets them), and runs as the user the backend resolved, with its own passwd and group.
TEST_F(OciConfigTest, AnImagesOwnConfigShapesTheProcess) {
  image_.host_mounts.clear();
  image_.env = {"PATH=/opt/conda/bin:/usr/bin:/bin", "CONDA_DIR=/opt/conda"};
  image_.labels["ai.backend.envs.corecount"] = "OMP_NUM_THREADS,NPROC,FOO";
  layout_.cpus = "0-1,4";
  KernelUser jovyan{1000, 100, "jovyan"};
  layout_.user = &jovyan;
  layout_.etc_dir = "/state/kernels/k/etc";
  json c = Config();
  std::vector<std::string> env = c["process"]["env"];
  EXPECT_THAT(env, Contains("PATH=/opt/conda/bin:/usr/bin:/bin"));
  EXPECT_THAT(env, Contains("CONDA_DIR=/opt/conda"));
  EXPECT_THAT(env, Contains("OMP_NUM_THREADS=3"));
  EXPECT_THAT(env, Contains("NPROC=3"));
  EXPECT_THAT(env, Contains("FOO=bar")) << "the user's value wins over the label's";
  EXPECT_THAT(env, Contains("USER=jovyan"));
  EXPECT_EQ(c["process"]["user"]["uid"], 1000);
  EXPECT_EQ(c["process"]["user"]["gid"], 100);
  EXPECT_THAT(MountAt(c, "/home/work")["options"], Contains("gid=100"));
  EXPECT_EQ(MountAt(c, "/etc/passwd")["source"], "/state/kernels/k/etc/passwd");
  EXPECT_THAT(MountAt(c, "/etc/group")["options"], Contains("ro"));
  // Without a PATH of its own an image gets the usual one; a built-in keeps its synthesised /etc.
  image_.env.clear();
  layout_.etc_dir.clear();
  layout_.user = nullptr;
  c = Config();
  env = c["process"]["env"].get<std::vector<std::string>>();
  EXPECT_THAT(env, Contains("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  EXPECT_THAT(env, Contains("USER=work"));
  EXPECT_TRUE(MountAt(c, "/etc/passwd").is_null());
  EXPECT_EQ(c["process"]["user"]["uid"], 1000);
}

TEST(SandboxExceptionTest, TheImagesUserIsAnExceptionTheOperatorGrants) {
  auto granted = ParseSandboxException("127.0.0.1:5000/lab/app=image-user");
  ASSERT_TRUE(granted.ok()) << granted.status().message();
  Image image;
  image.name = "app-0123456789ab";
  image.aliases = {"127.0.0.1:5000/lab/app:1"};
  EXPECT_EQ(SandboxExceptionsFor({granted.value()}, image).count("image-user"), 1u)
      << "every tag of a registry's image (the port's colon is not a tag's)";
  image.aliases = {"127.0.0.1:5000/lab/other:1"};
  EXPECT_TRUE(SandboxExceptionsFor({granted.value()}, image).empty());
  // Granting it lets no system call back in.
  EXPECT_EQ(SeccompProfile({"image-user"}), SeccompProfile({}));
}

TEST(CgroupMapping, VersionOneAndTwo) {
  CgroupLimits l = LimitsFromResources(Slots(R"({"cpu": "1.5", "mem": "64m"})"), 128);
  EXPECT_EQ(l.memory_bytes, 67108864);
  // A bogus amount never reaches the backend: create_kernel carrying it is refused whole.
  EXPECT_FALSE(internal::SlotsFromJson(json::parse(R"({"mem": "bogus"})")).ok());
  EXPECT_EQ(LimitsFromResources({}, 1).memory_bytes, -1);
  l = LimitsFromResources(Slots(R"({"cpu": "1.5", "mem": 67108864})"), 128);
  EXPECT_EQ(l.cpu_quota_us, 150000);
  EXPECT_EQ(l.memory_bytes, 67108864);
  using Files = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(CgroupFiles(1, "/bai/a/k", l),
            (Files{{"cpu/bai/a/k/cpu.cfs_period_us", "100000"},
                   {"cpu/bai/a/k/cpu.cfs_quota_us", "150000"},
                   {"memory/bai/a/k/memory.limit_in_bytes", "67108864"},
                   {"pids/bai/a/k/pids.max", "128"}}));
  EXPECT_EQ(CgroupFiles(2, "/bai/a/k", l), (Files{{"/bai/a/k/cpu.max", "150000 100000"},
                                                  {"/bai/a/k/memory.max", "67108864"},
                                                  {"/bai/a/k/pids.max", "128"}}));
  CgroupLimits none = LimitsFromResources({}, 4096);
  EXPECT_EQ(CgroupFiles(2, "/x", none)[0].second, "max 100000");
  EXPECT_EQ(CgroupFiles(2, "/x", none)[1].second, "max");
  EXPECT_EQ(OomCounterFile(1, "/bai/a/k"), "memory/bai/a/k/memory.oom_control");
  EXPECT_EQ(OomCounterFile(2, "/bai/a/k"), "/bai/a/k/memory.events");
  // The smallest quota runc accepts.
  EXPECT_EQ(LimitsFromResources(Slots(R"({"cpu": "0.001"})"), 1).cpu_quota_us, 1000);
}

// Hardening (new user, 3): inside a cpu=1 kernel nproc reported the host's CPUs, and thread
// pools oversubscribed. A kernel is pinned to ceil(cpu) CPUs, the least loaded ones.
TEST(CpusetTest, KernelsGetTheirShareOfCpusSpreadOverTheLeastLoaded) {
  using protocol::Decimal;
  std::vector<int> host = {0, 1, 2, 3};
  auto d = [](char const* text) { return *Decimal::Parse(text); };
  EXPECT_EQ(PickCpus(host, {}, d("1")), (std::vector<int>{0}));
  EXPECT_EQ(PickCpus(host, {}, d("0.25")), (std::vector<int>{0}));
  EXPECT_EQ(PickCpus(host, {}, d("1.5")), (std::vector<int>{0, 1}));
  EXPECT_EQ(PickCpus(host, {}, d("16")), host);
  EXPECT_EQ(PickCpus(host, {}, Decimal::Unlimited()), host);
  // Loaded CPUs come last; ties go to the lowest.
  EXPECT_EQ(PickCpus(host, {{0, 2}, {1, 1}}, d("2")), (std::vector<int>{2, 3}));
  EXPECT_EQ(PickCpus(host, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}, d("1")), (std::vector<int>{0}));
  EXPECT_EQ(PickCpus({5, 9}, {{5, 1}}, d("1")), (std::vector<int>{9}));
  EXPECT_TRUE(PickCpus({}, {}, d("1")).empty());
  EXPECT_EQ(CpuList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(CpuList({3}), "3");
  EXPECT_EQ(CpuList({}), "");
  EXPECT_FALSE(AllowedCpus().empty());
}

TEST(ImageStoreTest, BuiltinsHaveASynthesisedEtcWithoutSecrets) {
  testing_util::TempDir dir;
  ImageStore store(dir.path() + "/images");
  ASSERT_TRUE(store.EnsureBuiltins().ok());
  auto py = store.Find("python");
  ASSERT_TRUE(py.ok()) << py.status().message();
  EXPECT_EQ(py->RuntimeType(), "python");
  EXPECT_EQ(py->RuntimePath(), "/usr/bin/python3");
  EXPECT_THAT(py->host_mounts, Contains("/usr"));
  namespace fs = std::filesystem;
  fs::path etc = fs::path(py->rootfs) / "etc";
  EXPECT_TRUE(fs::exists(etc / "passwd"));
  EXPECT_TRUE(fs::exists(etc / "ssl/certs/ca-certificates.crt"));
  EXPECT_TRUE(fs::exists(etc / "ld.so.cache"));
  for (char const* secret : {"shadow", "gshadow", "ssh", "sudoers"}) {
    EXPECT_FALSE(fs::exists(etc / secret)) << secret;
  }
  EXPECT_FALSE(fs::exists(fs::path(py->rootfs) / "root/.bashrc"));
  EXPECT_THAT(SynthesisedEtcFile("passwd", 1000, 1000), HasSubstr("work:x:1000:1000:"));
  EXPECT_EQ((fs::status(fs::path(py->rootfs) / "tmp").permissions() & fs::perms::sticky_bit),
            fs::perms::sticky_bit);
  // Names and aliases resolve; unknown ones and a registry's reference do not (a host image
  // is never a registry's: issue 46).
  EXPECT_TRUE(store.Find("python:latest").ok());
  EXPECT_EQ(store.Find("cr.backend.ai/stable/python").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Find("shell")->RuntimeType(), "shell");
  EXPECT_EQ(store.Find("tensorflow").status().code(), StatusCode::kNotFound);
  EXPECT_THAT(store.Names(), Contains("python"));
  // Each name and alias with its image's size: its own files (the host's /usr is not counted).
  auto listed = store.List();
  ASSERT_EQ(listed.size(), store.Names().size());
  std::int64_t python_bytes = -1;
  for (auto const& i : listed) {
    if (i.name.rfind("python", 0) != 0) continue;
    if (python_bytes < 0) python_bytes = i.size;
    EXPECT_EQ(i.size, python_bytes) << i.name;
  }
  EXPECT_GT(python_bytes, 1000);               // passwd, ld.so.cache, certificates…
  EXPECT_LT(python_bytes, 100 * 1024 * 1024);  // not /usr
}

TEST(ImageStoreTest, ImportsARootfsTarballAndRejectsBadNames) {
  testing_util::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() + "/src/bin");
  std::ofstream(dir.path() + "/src/bin/hello") << "#!/bin/sh\necho hi\n";  // 18 bytes
  fs::create_directories(dir.path() + "/src/data");
  std::ofstream(dir.path() + "/src/data/blob") << std::string(10000, 'x');
  fs::create_hard_link(dir.path() + "/src/data/blob", dir.path() + "/src/data/same-blob");
  fs::create_symlink("/usr", dir.path() + "/src/data/usr");  // not followed
  auto tar = testing_util::RunProcess(
      {"/usr/bin/tar", "-czf", dir.path() + "/rootfs.tar.gz", "-C", dir.path() + "/src", "."});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  ImageStore store(dir.path() + "/images");
  ASSERT_TRUE(store.Import(dir.path() + "/rootfs.tar.gz", "tiny").ok());
  auto img = store.Find("tiny");
  ASSERT_TRUE(img.ok());
  EXPECT_TRUE(fs::exists(fs::path(img->rootfs) / "bin/hello"));
  // Its size: each file once, links not followed; recorded at import.
  auto size_of = [&store](std::string const& name) -> std::int64_t {
    for (auto const& i : store.List()) {
      if (i.name == name) return i.size;
    }
    return -1;
  };
  EXPECT_EQ(size_of("tiny"), 18 + 10000);
  // A store made before sizes were recorded: measured when listed.
  std::string manifest = dir.path() + "/images/tiny/manifest.json";
  auto m = nlohmann::json::parse(std::ifstream(manifest));
  ASSERT_TRUE(m.contains("size"));
  m.erase("size");
  std::ofstream(manifest, std::ios::trunc) << m.dump();
  EXPECT_EQ(size_of("tiny"), 18 + 10000);
  EXPECT_EQ(store.Import(dir.path() + "/rootfs.tar.gz", "tiny").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store.Import(dir.path() + "/rootfs.tar.gz", "../evil").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Import(dir.path() + "/missing", "gone").code(), StatusCode::kNotFound);
  // A failed import leaves nothing behind.
  std::ofstream(dir.path() + "/notatar") << "garbage";
  EXPECT_FALSE(store.Import(dir.path() + "/notatar", "broken").ok());
  EXPECT_FALSE(store.Find("broken").ok());
}

TEST(ImageStoreTest, ImportsAnOciLayoutMadeByUmociWithLabelsAndWhiteouts) {
  if (testing_util::RunProcess({"/usr/bin/umoci", "--version"}).exit_code != 0) {
    GTEST_FAIL() << "umoci is not installed (scripts/install-deps.sh installs it)";
  }
  testing_util::TempDir dir;
  std::string layout = dir.path() + "/layout";
  auto run = [](std::vector<std::string> argv) {
    argv[0] = "/usr/bin/" + argv[0];
    auto r = testing_util::RunProcess(argv);
    EXPECT_EQ(r.exit_code, 0) << argv[1] << ": " << r.err;
    return r.exit_code == 0;
  };
  ASSERT_TRUE(run({"umoci", "init", "--layout", layout}));
  ASSERT_TRUE(run({"umoci", "new", "--image", layout + ":v1"}));
  ASSERT_TRUE(run({"umoci", "unpack", "--rootless", "--image", layout + ":v1", dir.path() + "/b"}));
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() + "/b/rootfs/app");
  std::ofstream(dir.path() + "/b/rootfs/app/keep") << "keep";
  std::ofstream(dir.path() + "/b/rootfs/app/gone") << "gone";
  ASSERT_TRUE(run({"umoci", "repack", "--image", layout + ":v1", dir.path() + "/b"}));
  // A second layer deletes a file: a whiteout.
  fs::remove(dir.path() + "/b/rootfs/app/gone");
  ASSERT_TRUE(run({"umoci", "repack", "--image", layout + ":v1", dir.path() + "/b"}));
  ASSERT_TRUE(run({"umoci", "config", "--image", layout + ":v1", "--config.label",
                   "ai.backend.runtime-type=python", "--config.label",
                   "ai.backend.service-ports=jupyter:http:8888", "--config.env", "APP=1"}));
  ImageStore store(dir.path() + "/images");
  auto s = store.Import(layout, "app", "v1");
  ASSERT_TRUE(s.ok()) << s.message();
  auto img = store.Find("app:v1");
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->RuntimeType(), "python");
  EXPECT_EQ(img->labels.at("ai.backend.service-ports"), "jupyter:http:8888");
  EXPECT_THAT(img->env, Contains("APP=1"));
  EXPECT_TRUE(fs::exists(fs::path(img->rootfs) / "app/keep"));
  EXPECT_FALSE(fs::exists(fs::path(img->rootfs) / "app/gone"));
  EXPECT_EQ(store.Import(layout, "other", "no-such-tag").code(), StatusCode::kNotFound);
}

// Issue 46, item 6 (air gap): a `docker save` tarball imports with its config and whiteouts; an
// image exports as an OCI layout or archive that imports again to the same files and config;
// a tarball naming members outside itself is refused; a host image is not exported.
TEST(ImageStoreTest, DockerSaveTarballsAndExportsImportIntoTheSameImage) {
  namespace fs = std::filesystem;
  using testing_util::LayerDir;
  using testing_util::LayerFile;
  testing_util::TempDir dir;
  std::string layout = dir.path() + "/layout";
  testing_util::WriteOciLayout(
      layout, "t",
      {{LayerDir("app"), LayerFile("app/keep", "keep"), LayerFile("app/gone", "gone"),
        LayerFile("x", "x")},
       {LayerFile(".wh.x", ""), LayerFile("app/.wh.gone", ""), LayerFile("app/new", "new")}},
      R"({"Env": ["APP=1"], "Cmd": ["/bin/sh", "-c", "echo hi"], "WorkingDir": "/app",
          "Labels": {"ai.backend.runtime-type": "shell"}})");
  // docker save's shape of the same image: manifest.json, the config, uncompressed layers.
  auto blob = [&](std::string const& digest) {
    return layout + "/blobs/sha256/" + digest.substr(7);
  };
  auto index = nlohmann::json::parse(testing_util::ReadFileBytes(layout + "/index.json"));
  auto manifest = nlohmann::json::parse(
      testing_util::ReadFileBytes(blob(index["manifests"][0]["digest"].get<std::string>())));
  std::string save = dir.path() + "/save";
  fs::create_directories(save);
  fs::copy_file(blob(manifest["config"]["digest"].get<std::string>()), save + "/config.json");
  nlohmann::json layer_names = nlohmann::json::array();
  for (std::size_t i = 0; i < manifest["layers"].size(); ++i) {
    std::string name = std::to_string(i) + "/layer.tar";
    fs::create_directories(save + "/" + std::to_string(i));
    auto tar = testing_util::RunProcess(
        {"/bin/gzip", "-dc", blob(manifest["layers"][i]["digest"].get<std::string>())});
    testing_util::WriteFileBytes(save + "/" + name, tar.out);
    layer_names.push_back(name);
  }
  testing_util::WriteFileBytes(
      save + "/manifest.json",
      nlohmann::json::array(
          {{{"Config", "config.json"}, {"RepoTags", {"lab/app:1"}}, {"Layers", layer_names}}})
          .dump());
  auto tar =
      testing_util::RunProcess({"/usr/bin/tar", "-cf", dir.path() + "/save.tar", "-C", save, "."});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;

  ImageStore store(dir.path() + "/images");
  auto check = [&](std::string const& name) {
    auto img = store.Find(name);
    ASSERT_TRUE(img.ok()) << name << ": " << img.status().message();
    EXPECT_EQ(testing_util::ReadFileBytes(img->rootfs + "/app/keep"), "keep") << name;
    EXPECT_EQ(testing_util::ReadFileBytes(img->rootfs + "/app/new"), "new") << name;
    EXPECT_FALSE(fs::exists(img->rootfs + "/app/gone")) << name;
    EXPECT_FALSE(fs::exists(img->rootfs + "/x")) << name;
    EXPECT_THAT(img->env, Contains("APP=1")) << name;
    EXPECT_EQ(img->cmd, (std::vector<std::string>{"/bin/sh", "-c", "echo hi"})) << name;
    EXPECT_EQ(img->working_dir, "/app") << name;
    EXPECT_EQ(img->RuntimeType(), "shell") << name;
  };
  auto saved = store.Import(dir.path() + "/save.tar", "saved", "1");
  ASSERT_TRUE(saved.ok()) << saved.message();
  check("saved:1");
  EXPECT_EQ(store.Import(dir.path() + "/save.tar", "other", "2").code(), StatusCode::kNotFound);
  // Exported as an archive and as a layout, each imports to the same image.
  auto archived = store.Export("saved", dir.path() + "/out.tar");
  ASSERT_TRUE(archived.ok()) << archived.status().message();
  EXPECT_THAT(*archived, ::testing::StartsWith("sha256:"));
  ASSERT_TRUE(store.Import(dir.path() + "/out.tar", "again").ok());
  check("again");
  ASSERT_TRUE(store.Export("again", dir.path() + "/out-layout").ok());
  ASSERT_TRUE(store.Import(dir.path() + "/out-layout", "third").ok());
  check("third");
  EXPECT_EQ(store.Export("again", dir.path() + "/out-layout").status().code(),
            StatusCode::kAlreadyExists)
      << "never over an earlier export";
  ASSERT_TRUE(store.EnsureBuiltins().ok());
  EXPECT_EQ(store.Export("python", dir.path() + "/py.tar").status().code(),
            StatusCode::kFailedPrecondition);
  // A tarball whose manifest names a member outside it: refused, nothing installed.
  testing_util::WriteFileBytes(
      save + "/manifest.json",
      nlohmann::json::array(
          {{{"Config", "config.json"}, {"Layers", {"../../../../etc/passwd", "1/layer.tar"}}}})
          .dump());
  tar =
      testing_util::RunProcess({"/usr/bin/tar", "-cf", dir.path() + "/evil.tar", "-C", save, "."});
  ASSERT_EQ(tar.exit_code, 0);
  EXPECT_EQ(store.Import(dir.path() + "/evil.tar", "evil").code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(store.Find("evil").ok());
  for (auto const& e : fs::directory_iterator(dir.path() + "/images")) {
    EXPECT_NE(e.path().filename().string().front(), '.') << "left behind: " << e.path();
  }
}

// Issue 46, item 4: a layer must hold what the image's config says it holds (its DiffID, the
// digest of the uncompressed tar); a layer swapped for another is refused naming it, and
// nothing is installed.
TEST(ImageStoreTest, ALayerThatIsNotWhatTheConfigSaysIsRefused) {
  namespace fs = std::filesystem;
  testing_util::TempDir dir;
  using testing_util::LayerFile;
  std::string layout = dir.path() + "/layout";
  testing_util::WriteOciLayout(layout, "v1", {{LayerFile("a", "1")}, {LayerFile("b", "2")}});
  auto blob = [&](std::string const& digest) {
    return layout + "/blobs/sha256/" + digest.substr(digest.find(':') + 1);
  };
  auto index = json::parse(testing_util::ReadFileBytes(layout + "/index.json"));
  auto manifest = json::parse(
      testing_util::ReadFileBytes(blob(index["manifests"][0]["digest"].get<std::string>())));
  std::string config_path = blob(manifest["config"]["digest"].get<std::string>());
  auto config = json::parse(testing_util::ReadFileBytes(config_path));
  ASSERT_EQ(config["rootfs"]["diff_ids"].size(), 2u);
  // The layers' own DiffIDs are what the config names: the layout imports.
  ImageStore store(dir.path() + "/images");
  ASSERT_TRUE(store.Import(layout, "good", "v1").ok());
  // The second layer said to be the first's: refused, naming the layer and both digests.
  auto wrong = config;
  wrong["rootfs"]["diff_ids"][1] = config["rootfs"]["diff_ids"][0];
  testing_util::WriteFileBytes(config_path, wrong.dump());
  auto s = store.Import(layout, "swapped", "v1");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.message();
  EXPECT_THAT(s.message(), HasSubstr("layer 2"));
  EXPECT_THAT(s.message(), HasSubstr(config["rootfs"]["diff_ids"][1].get<std::string>()));
  EXPECT_FALSE(store.Find("swapped").ok());
  EXPECT_FALSE(fs::exists(dir.path() + "/images/swapped"));
  // A config that names fewer layers than the manifest: refused before any is applied.
  auto short_config = config;
  short_config["rootfs"]["diff_ids"].erase(1);
  testing_util::WriteFileBytes(config_path, short_config.dump());
  s = store.Import(layout, "short", "v1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_THAT(s.message(), HasSubstr("names 1 layers"));
  EXPECT_FALSE(store.Find("short").ok());
}

// Issue 43: a layer's link, then a file through it, made GNU tar write outside the store as
// root; an image's `opt` or `tmp` linked outside made the import create or chmod host paths.
TEST(ImageStoreTest, AHostileLayoutWritesNothingOutside) {
  namespace fs = std::filesystem;
  testing_util::TempDir dir;
  std::string outside = dir.path() + "/outside";
  fs::create_directories(outside);
  fs::permissions(outside, fs::perms(0750));
  using testing_util::LayerFile;
  using testing_util::LayerLink;
  testing_util::WriteOciLayout(dir.path() + "/evil", "v1",
                               {{LayerLink("evil", outside)}, {LayerFile("evil/pwned", "owned")}});
  ImageStore store(dir.path() + "/images");
  auto s = store.Import(dir.path() + "/evil", "evil", "v1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_THAT(s.message(), HasSubstr("evil/pwned"));
  EXPECT_FALSE(store.Find("evil").ok());
  testing_util::WriteOciLayout(dir.path() + "/links", "v1",
                               {{LayerLink("tmp", outside), LayerLink("opt", outside)}});
  s = store.Import(dir.path() + "/links", "links", "v1");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_EQ(fs::status(outside).permissions(), fs::perms(0750));
  // The same image whose links name directories it has: imported, everything inside it.
  testing_util::WriteOciLayout(
      dir.path() + "/fine", "v1",
      {{testing_util::LayerDir("data"), LayerLink("tmp", "/data"), LayerLink("opt", "/data")},
       {LayerFile("opt/app", "inside")}});
  s = store.Import(dir.path() + "/fine", "fine", "v1");
  ASSERT_TRUE(s.ok()) << s.message();
  auto img = store.Find("fine");
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(testing_util::ReadFileBytes(img->rootfs + "/data/app"), "inside");
  EXPECT_TRUE(fs::is_directory(img->rootfs + "/data/bai/bin"));
  EXPECT_EQ(fs::status(img->rootfs + "/data").permissions(), fs::perms(01777));
  EXPECT_TRUE(fs::is_empty(outside));
}

// An image's service definition is read inside its root: a link to a host file is the image's
// path of that name, not the host's.
TEST(KernelAppsTest, ServiceDefinitionsAreReadInsideTheImage) {
  namespace fs = std::filesystem;
  testing_util::TempDir dir;
  std::string rootfs = dir.path() + "/rootfs";
  std::string host_def = dir.path() + "/host-def.json";
  testing_util::WriteFileBytes(host_def, R"({"url_template": "http://host-secret/"})");
  fs::create_directories(rootfs + "/etc/backend.ai/service-defs");
  fs::create_symlink(host_def, rootfs + "/etc/backend.ai/service-defs/web.json");
  testing_util::WriteFileBytes(rootfs + "/etc/backend.ai/service-defs/own.json",
                               R"({"url_template": "http://{host}:{port}/own"})");
  auto apps = KernelApps({{"ai.backend.service-ports", "web:http:8080,own:http:8081"}}, {}, rootfs);
  ASSERT_TRUE(apps.ok()) << apps.status().message();
  for (auto const& a : *apps) {
    if (a.name == "web") {
      EXPECT_FALSE(a.url_template.has_value());
    } else if (a.name == "own") {
      EXPECT_EQ(a.url_template.value_or(""), "http://{host}:{port}/own");
    }
  }
}

// Regression: the dummy agent's first commit failed (500) unless <state>/<agent id> existed.
TEST(CommitFileTest, MakesMissingParentsAndNeverOverwrites) {
  namespace fs = std::filesystem;
  testing_util::TempDir dir;
  std::string commits = dir.path() + "/state/agent-1/commits";
  auto path = CommitFile(commits, "s1", "snap.tar");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, commits + "/s1/snap.tar");
  EXPECT_EQ(fs::status(commits).permissions() & fs::perms::all, fs::perms::owner_all);
  std::ofstream(*path) << "x";
  EXPECT_EQ(CommitFile(commits, "s1", "snap.tar").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(CommitFile(commits, "s1", "../x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bai::agent
