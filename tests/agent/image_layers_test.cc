// SPDX-License-Identifier: Apache-2.0
// The agent's layer store and overlay roots (issue 46), as root: images pulled from a registry
// of the test's own (Debian's docker-registry on 127.0.0.1) keep each layer once, whiteouts and
// opaque directories read through overlayfs as the flat copy reads them, a hostile layer writes
// nothing outside its own directory, what a pull left half done is swept, and a kernel runs on
// a pulled busybox image whose overlay goes with it. Label `root`.
#include "bai/protocol/session_status.h"

#include "server-reference/agent/images.h"
#include "server-reference/agent/layer_store.h"
#include "server-reference/common/oci/reference.h"
#include "server-reference/common/oci/registry_client.h"
#include "tests/agent/registry_kernel_fixture.h"
#include "tests/testing_util/layer_tar.h"
#include "tests/testing_util/local_registry.h"
#include "tests/testing_util/tcp_relay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

namespace bai {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::LayerDir;
using testing_util::LayerFile;
using testing_util::LayerLink;
using testing_util::LayerMember;

// A base layer of busybox (its shell and a few applets) and 300 KiB of incompressible bytes.
std::vector<LayerMember> BusyboxBase() {
  std::string noise;
  std::uint32_t x = 777;
  for (int i = 0; i < 300 * 1024; ++i) {
    x = x * 1103515245 + 12345;
    noise += static_cast<char>(x >> 24);
  }
  std::vector<LayerMember> base{
      LayerDir("bin"), LayerFile("bin/busybox", runc_testing::ReadFile("/bin/busybox"), 0755),
      LayerFile("opt/base.bin", noise)};
  for (char const* applet : {"sh", "cat", "ls", "echo", "id", "mount"}) {
    base.push_back(LayerLink(std::string("bin/") + applet, "busybox"));
  }
  return base;
}

// Pushes an image of `layers` (and the image config's `config`) as `repository_tag`; "" or
// skopeo's words.
std::string Push(testing_util::LocalRegistry& registry, testing_util::TempDir& dir,
                 std::string const& repository_tag,
                 std::vector<std::vector<LayerMember>> const& layers,
                 std::string const& config = "{}") {
  std::string layout =
      dir.path() + "/layout-" + std::to_string(std::hash<std::string>()(repository_tag));
  testing_util::WriteOciLayout(layout, "t", layers, config);
  return registry.Push(layout, "t", repository_tag);
}

std::vector<std::vector<LayerMember>> App(std::string const& version) {
  return {BusyboxBase(), {LayerFile("etc/os-release", "NAME=\"bai-test app " + version + "\"\n")}};
}

// The merged view of a layered image, mounted read-only-ish for a test and unmounted after.
class Merged {
 public:
  Merged(agent::Image const& image, std::string const& dir) : target_(dir + "/merged") {
    status_ = agent::MountOverlay(image.layers, dir + "/upper", dir + "/work", target_);
  }
  ~Merged() { agent::Unmount(target_); }
  Status const& status() const { return status_; }
  std::string operator/(std::string const& path) const { return target_ + "/" + path; }

 private:
  std::string target_;
  Status status_;
};

class LayerStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (label 'root'; CI runs it as root)";
    ASSERT_EQ(registry_.error(), "");
    store_ = std::make_unique<agent::ImageStore>(dir_.path() + "/images");
    ASSERT_TRUE(store_->DetectLayered().ok());
    ASSERT_TRUE(store_->layered());
  }

  Status Pull(std::string const& repository_tag, std::string const& name) {
    auto ref = server::oci::ParseImageReference(registry_.host() + "/" + repository_tag);
    if (!ref.ok()) return ref.status();
    server::oci::RegistryClient client({registry_.url(), "", "", true});
    return store_->Pull(client, *ref, name);
  }

  testing_util::LocalRegistry registry_;
  testing_util::TempDir dir_;
  std::unique_ptr<agent::ImageStore> store_;
};

TEST_F(LayerStoreTest, TwoImagesSharingABaseStoreItOnce) {
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", App("1")), "");
  ASSERT_EQ(Push(registry_, dir_, "lab/app:2", App("2")), "");
  ASSERT_TRUE(Pull("lab/app:1", "app1").ok());
  std::int64_t after_one = agent::TreeBytes(dir_.path() + "/images");
  std::vector<agent::PullProgress> seen;
  auto ref = server::oci::ParseImageReference(registry_.host() + "/lab/app:2");
  server::oci::RegistryClient client({registry_.url(), "", "", true});
  ASSERT_TRUE(store_->Pull(client, *ref, "app2", [&](auto const& p) { seen.push_back(p); }).ok());
  std::int64_t growth = agent::TreeBytes(dir_.path() + "/images") - after_one;
  std::int64_t base = static_cast<std::int64_t>(fs::file_size("/bin/busybox")) + 300 * 1024;
  EXPECT_LT(growth, base / 20) << "app:2 stores only its own layer";
  EXPECT_EQ(store_->layer_store().List().size(), 3u) << "one base, two tops";
  // The base was there: said so, and the progress ends at the whole.
  ASSERT_FALSE(seen.empty());
  EXPECT_THAT(seen.front().words, HasSubstr("present already"));
  EXPECT_EQ(seen.back().layers_done, 2);
  EXPECT_EQ(seen.back().done, seen.back().total);

  for (auto const& [name, version] : {std::pair{"app1", "1"}, std::pair{"app2", "2"}}) {
    auto img = store_->Find(name);
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_TRUE(img->rootfs.empty());
    ASSERT_EQ(img->layers.size(), 3u) << "its top, then its two layers";
    Merged m(*img, dir_.path() + "/m-" + name);
    ASSERT_TRUE(m.status().ok()) << m.status().message();
    EXPECT_EQ(runc_testing::ReadFile(m / "etc/os-release"),
              std::string("NAME=\"bai-test app ") + version + "\"\n");
    EXPECT_TRUE(fs::is_directory(m / "home/work"));
    EXPECT_TRUE(fs::is_directory(m / "opt/bai/bin"));
  }
  // The registry reference is an alias, and both say their size (their layers').
  EXPECT_TRUE(store_->Find(registry_.host() + "/lab/app:2").ok());
  for (auto const& info : store_->List()) {
    if (info.name == "app1") {
      EXPECT_GT(info.size, base);
    }
  }
}

TEST_F(LayerStoreTest, WhiteoutsAndOpaqueDirectoriesReadAsTheFlatCopyDoes) {
  std::vector<std::vector<LayerMember>> layers{
      {LayerDir("d"), LayerFile("d/a", "a"), LayerFile("d/b", "b"), LayerFile("x", "x"),
       LayerDir("keep"), LayerFile("keep/old", "old")},
      {LayerFile(".wh.x", ""), LayerDir("d"), LayerFile("d/.wh..wh..opq", ""),
       LayerFile("d/c", "c"), LayerFile("keep/new", "new")}};
  ASSERT_EQ(Push(registry_, dir_, "lab/wh:1", layers), "");
  ASSERT_TRUE(Pull("lab/wh:1", "layered").ok());
  store_->set_layered(false);
  ASSERT_TRUE(Pull("lab/wh:1", "flat").ok());
  auto flat = store_->Find("flat");
  auto layered = store_->Find("layered");
  ASSERT_TRUE(flat.ok() && layered.ok());
  ASSERT_FALSE(flat->rootfs.empty());
  Merged m(*layered, dir_.path() + "/m");
  ASSERT_TRUE(m.status().ok()) << m.status().message();
  // Exported from the layer store (overlayfs's whiteouts and opaque directories written back
  // as the OCI spec's) and imported into another agent's store: the same view (issue 46,
  // item 6).
  ASSERT_TRUE(store_->Export("layered", dir_.path() + "/wh.tar").ok());
  agent::ImageStore other(dir_.path() + "/other");
  ASSERT_TRUE(other.DetectLayered().ok());
  auto imported = other.Import(dir_.path() + "/wh.tar", "back");
  ASSERT_TRUE(imported.ok()) << imported.message();
  auto back = other.Find("back");
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->rootfs.empty()) << "layered";
  Merged m2(*back, dir_.path() + "/m2");
  ASSERT_TRUE(m2.status().ok()) << m2.status().message();
  for (std::string root : {flat->rootfs, m / "", m2 / ""}) {
    EXPECT_FALSE(fs::exists(root + "/x")) << root;
    EXPECT_FALSE(fs::exists(root + "/d/a")) << root;
    EXPECT_FALSE(fs::exists(root + "/d/b")) << root;
    EXPECT_EQ(runc_testing::ReadFile(root + "/d/c"), "c") << root;
    EXPECT_EQ(runc_testing::ReadFile(root + "/keep/old"), "old") << root;
    EXPECT_EQ(runc_testing::ReadFile(root + "/keep/new"), "new") << root;
  }
}

// A layer's symbolic link to a host directory, then a file beneath it in the next layer: each
// layer unpacks into a directory of its own, so the file lands there, never on the host.
TEST_F(LayerStoreTest, AHostileLinkLayerWritesNothingOutside) {
  std::string outside = dir_.path() + "/outside";
  fs::create_directories(outside);
  ASSERT_EQ(Push(registry_, dir_, "lab/evil:1",
                 {{LayerLink("evil", outside), LayerLink("up", "../../../../../../..")},
                  {LayerFile("evil/pwned", "owned"), LayerFile("up" + outside + "/pwned2", "x")}}),
            "");
  auto s = Pull("lab/evil:1", "evil");
  EXPECT_TRUE(fs::is_empty(outside)) << "nothing written outside the layer";
  if (s.ok()) {
    auto img = store_->Find("evil");
    ASSERT_TRUE(img.ok());
    for (auto const& layer : img->layers) EXPECT_FALSE(fs::exists(layer + outside + "/pwned"));
  }
}

// What an agent that died mid-pull left: staging directories, a partial download, a layer
// directory without its record. The next start sweeps them; whole layers stay.
TEST_F(LayerStoreTest, WhatAnUnfinishedPullLeftIsSweptAtStart) {
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", App("1")), "");
  ASSERT_TRUE(Pull("lab/app:1", "app1").ok());
  std::string images = dir_.path() + "/images";
  fs::create_directories(images + "/.half.pull/top");
  fs::create_directories(images + "/blobs");
  testing_util::WriteFileBytes(images + "/blobs/abc.part", "partial");
  fs::create_directories(images + "/layers/0123456789abcdef01234567/etc");
  fs::create_directories(images + "/layers/.0123456789abcdef01234567.99.1");
  EXPECT_EQ(store_->SweepUnfinished(), 4);
  EXPECT_FALSE(fs::exists(images + "/.half.pull"));
  EXPECT_FALSE(fs::exists(images + "/blobs/abc.part"));
  EXPECT_FALSE(fs::exists(images + "/layers/0123456789abcdef01234567"));
  EXPECT_EQ(store_->layer_store().List().size(), 2u);
  EXPECT_TRUE(store_->Find("app1").ok());
}

// A kernel on a pulled image: its root is the image's (busybox, its own os-release), an
// overlay mounted for the kernel, kept when the agent restarts, and gone with the session.
using LayeredKernelTest = runc_testing::RegistryKernelTest;

TEST_F(LayeredKernelTest, AKernelRunsOnAPulledImageAndItsOverlayGoesWithIt) {
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", App("1")), "");
  auto pull = testing_util::RunProcess({testing_util::BinPath("bai-agent"), "image", "pull",
                                        registry_.host() + "/lab/app:1", "--name", "app1",
                                        "--state-dir", state_dir_});
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  ASSERT_EQ(Bai({"admin", "image", "rescan"}).exit_code, 0);
  auto job = Bai({"run", registry_.host() + "/lab/app:1", "--", "cat", "/etc/os-release"});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "NAME=\"bai-test app 1\"\n");

  // A session that stays (query mode: the image's shell runs the code).
  auto a = Bai({"run", "app1", "--name", "keep", "-c", "ls /bin/busybox"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, "/bin/busybox\n");
  std::string mounts = runc_testing::ReadFile("/proc/self/mountinfo");
  EXPECT_THAT(mounts, HasSubstr("/rootfs ")) << "the kernel's overlay";
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  agent_.reset();
  StartAgent();
  auto b = Bai({"run", "app1", "--name", "keep", "-c", "cat /etc/os-release"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "NAME=\"bai-test app 1\"\n") << "re-adopted on its overlay";
  EXPECT_EQ(Bai({"rm", "keep"}).exit_code, 0);
  for (int i = 0; i < 200; ++i) {
    if (runc_testing::ReadFile("/proc/self/mountinfo").find(agent_id_ + "/kernels/") ==
        std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_THAT(runc_testing::ReadFile("/proc/self/mountinfo"),
              Not(HasSubstr(agent_id_ + "/kernels/")));
}

// Issue 46's acceptance: a registry of the test's own with htpasswd auth holds three images
// sharing a base; `bai admin registry add … --password-stdin` and `bai admin image rescan`
// list them; a session on one pulls it (progress as PREPARING's status_info) and runs the
// image's own /etc/os-release; the next image grows the store by far less than the base; a
// corrupted layer ends its session in ERROR naming the digest, its slots freed.
class RegistrySessionTest : public runc_testing::RegistryKernelTest {
 protected:
  RegistrySessionTest() : RegistryKernelTest({"lab", "s3cret pass", "", ""}) {}
};

TEST_F(RegistrySessionTest, ARegistryImageIsPulledOnDemandAndRuns) {
  for (char const* v : {"1", "2", "3"}) {
    // app:2 needs at least 300 MiB (24.09's ai.backend.resource.min.* labels).
    std::string config =
        *v == '2' ? R"({"Labels": {"ai.backend.resource.min.mem": "300m"}})" : "{}";
    ASSERT_EQ(Push(registry_, dir_, std::string("lab/app:") + v, App(v), config), "");
  }
  std::string host = registry_.host();
  auto add = Bai({"admin", "registry", "add", host, "--url", registry_.url(), "--username", "lab",
                  "--password-stdin"},
                 "s3cret pass\n");
  ASSERT_EQ(add.exit_code, 0) << add.err;
  auto argv_secret = Bai({"admin", "registry", "add", "other.example", "--url",
                          "https://other.example", "--username", "u"});
  EXPECT_EQ(argv_secret.exit_code, 2) << "a username without --password-stdin is refused";
  auto ls = Bai({"-o", "json", "admin", "registry", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("\"*****\"")) << "the password is only said to be set";
  EXPECT_THAT(ls.out, Not(HasSubstr("s3cret")));
  auto rescan = Bai({"admin", "image", "rescan", host});
  ASSERT_EQ(rescan.exit_code, 0) << rescan.err;
  EXPECT_THAT(rescan.out, HasSubstr("3 images in 1 registry"));
  // One image by its reference (what a registry without a catalog allows).
  auto one = Bai({"admin", "image", "rescan", host + "/lab/app:2"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("1 image in 1 registry")) << one.err;
  EXPECT_NE(Bai({"admin", "image", "rescan", "nowhere.example/lab/app:2"}).exit_code, 0);
  auto images = Bai({"admin", "image", "ls"});
  for (char const* v : {"1", "2", "3"}) EXPECT_THAT(images.out, HasSubstr("lab/app")) << v;

  std::int64_t before = agent::TreeBytes(state_dir_ + "/images");
  auto job = Bai({"run", host + "/lab/app:1", "--", "cat", "/etc/os-release"});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "NAME=\"bai-test app 1\"\n");
  std::int64_t after_one = agent::TreeBytes(state_dir_ + "/images");
  std::int64_t base = static_cast<std::int64_t>(fs::file_size("/bin/busybox")) + 300 * 1024;
  EXPECT_GT(after_one - before, base) << "the base came with the first image";
  auto small = Bai({"run", "-r", "mem=256m", host + "/lab/app:2", "--", "true"});
  EXPECT_NE(small.exit_code, 0);
  EXPECT_THAT(small.err, HasSubstr("smaller than the minimum required by the image. (mem=300m)"));
  auto two = Bai({"run", host + "/lab/app:2", "--", "cat", "/etc/os-release"});
  EXPECT_EQ(two.out, "NAME=\"bai-test app 2\"\n") << two.err;
  EXPECT_LT(agent::TreeBytes(state_dir_ + "/images") - after_one, base / 20)
      << "app:2 brought only its own layer";
  // The pull was said: kernel_pulling events with the bytes, done at the end.
  auto events = manager_->store().db().Query(
      "SELECT reason FROM events WHERE name = 'kernel_pulling' ORDER BY seq DESC LIMIT 1");
  ASSERT_TRUE(events.ok() && !events->empty());
  auto pull = protocol::DecodePullInfo(events->front().Text(0));
  ASSERT_TRUE(pull) << events->front().Text(0);
  EXPECT_EQ(pull->image, host + "/lab/app:2");
  EXPECT_EQ(pull->done, pull->total);
  // Installed where it was pulled.
  auto listed = Bai({"-o", "json", "admin", "image", "ls"});
  EXPECT_THAT(listed.out, HasSubstr(agent_id_));

  // app:3's base is the same, so its own layer is corrupted: the session fails at once.
  auto manifest = testing_util::RunProcess({"/usr/bin/curl", "-sf", "-u", "lab:s3cret pass", "-H",
                                            "Accept: application/vnd.oci.image.manifest.v1+json",
                                            registry_.url() + "/v2/lab/app/manifests/3"});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  auto m = nlohmann::json::parse(manifest.out);
  std::string top = m["layers"][1]["digest"];
  std::string stored = registry_.BlobFile(top);
  std::string bytes = runc_testing::ReadFile(stored);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  testing_util::WriteFileBytes(stored, bytes);
  auto bad = Bai({"run", host + "/lab/app:3", "--", "cat", "/etc/os-release"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.out + bad.err, HasSubstr(top));
  auto sessions = manager_->store().db().Query(
      "SELECT status, status_history, status_info FROM sessions WHERE image = ? ORDER BY "
      "created_at DESC LIMIT 1",
      {host + "/lab/app:3"});
  ASSERT_TRUE(sessions.ok() && !sessions->empty());
  // ERROR (then TERMINATED: `bai run` removes what it started), at once, with the reason.
  EXPECT_THAT(sessions->front().Text(1), HasSubstr("\"ERROR\"")) << sessions->front().Text(1);
  EXPECT_THAT(sessions->front().Text(2), HasSubstr("kernel-creation-failed: pulling"));
}

// Issue 46, item 5: an image's config shapes its kernel. A batch session without a command runs
// the image's Entrypoint and Cmd in its WorkingDir, with its Env (its own PATH) and the CPU count
// in the variables `ai.backend.envs.corecount` names; `id -un` finds the work user in the
// image's own /etc/passwd; the image's User is honoured only where the operator grants it
// (--sandbox-exception IMAGE=image-user); an image naming no command is refused in words.
TEST_F(LayeredKernelTest, AnImagesConfigShapesItsKernel) {
  auto layers = App("cfg");
  layers.push_back({LayerDir("srv"), LayerDir("srv/app"), LayerFile("srv/app/run.txt", "x\n"),
                    LayerDir("etc"),
                    LayerFile("etc/passwd",
                              "root:x:0:0:root:/root:/bin/sh\napp:x:1234:1234::/srv/app:/bin/sh\n"),
                    LayerFile("etc/group", "root:x:0:\napp:x:1234:\n")});
  std::string config = R"({
    "Env": ["PATH=/opt/none:/bin", "GREETING=hello"],
    "WorkingDir": "/srv/app",
    "User": "app",
    "Entrypoint": ["/bin/sh", "-c"],
    "Cmd": ["echo \"$GREETING from $(pwd) as $(id -un) ($(id -u)) on $NPROC cpus; PATH=$PATH\""],
    "Labels": {"ai.backend.envs.corecount": "NPROC"}})";
  ASSERT_EQ(Push(registry_, dir_, "lab/cfg:1", layers, config), "");
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", App("1")), "");
  std::string cfg = registry_.host() + "/lab/cfg:1";
  for (auto const& ref : {cfg, registry_.host() + "/lab/app:1"}) {
    auto pull = testing_util::RunProcess(
        {testing_util::BinPath("bai-agent"), "image", "pull", ref, "--state-dir", state_dir_});
    ASSERT_EQ(pull.exit_code, 0) << pull.err;
  }
  ASSERT_EQ(Bai({"admin", "image", "rescan"}).exit_code, 0);
  // Each image says what it is: the built-ins are the host's, these were pulled.
  auto listed = Bai({"-o", "json", "admin", "image", "ls"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::map<std::string, std::string> kinds;
  auto parsed = nlohmann::json::parse(listed.out);
  for (auto const& i : parsed["images"]) {
    for (auto const& kv : i["labels"]) {
      if (kv["key"] == "bai.image-kind") {
        kinds[i["name"].get<std::string>()] = kv["value"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(kinds["python"], "host");
  EXPECT_EQ(kinds["lab/cfg"], "pulled") << listed.out;
  auto table = Bai({"admin", "image", "ls"});
  EXPECT_THAT(table.out, ::testing::ContainsRegex("python +latest +[a-z0-9_]+ +host "));
  auto job = Bai({"run", "-r", "cpu=1", cfg});
  EXPECT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "hello from /srv/app as work (1000) on 1 cpus; PATH=/opt/none:/bin\n");
  // A command given runs in /home/work as ever, with the image's passwd (the work user in it).
  auto given = Bai({"run", cfg, "--", "sh", "-c", "pwd; grep -c '^app:' /etc/passwd; id -un"});
  EXPECT_EQ(given.out, "/home/work\n1\nwork\n") << given.err;
  auto none = Bai({"run", registry_.host() + "/lab/app:1"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_THAT(none.err, HasSubstr("names no Entrypoint or Cmd"));
  // Granted: the image's own user.
  EXPECT_EQ(agent_->Stop(SIGTERM), 0);
  agent_.reset();
  StartAgent({"--sandbox-exception", registry_.host() + "/lab/cfg=image-user"});
  auto as_app = Bai({"run", "-r", "cpu=1", cfg});
  EXPECT_EQ(as_app.exit_code, 0) << as_app.err;
  EXPECT_EQ(as_app.out, "hello from /srv/app as app (1234) on 1 cpus; PATH=/opt/none:/bin\n");
}

// Issue 46, item 6: the store lets go of what nothing needs, never what a kernel uses:
// `bai-agent image rm` refuses an image in use and takes another (its own layer only: the base
// stays for the running kernel); `prune` takes nothing in use; once the session ends
// `prune --all` empties the store of pulled images and their layers.
TEST_F(LayeredKernelTest, NoRemovalTakesWhatAKernelUses) {
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", App("1")), "");
  ASSERT_EQ(Push(registry_, dir_, "lab/app:2", App("2")), "");
  auto agent_image = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {testing_util::BinPath("bai-agent"), "image"});
    args.insert(args.end(), {"--state-dir", state_dir_});
    return testing_util::RunProcess(args);
  };
  for (char const* v : {"1", "2"}) {
    auto pull =
        agent_image({"pull", registry_.host() + "/lab/app:" + v, "--name", std::string("app") + v});
    ASSERT_EQ(pull.exit_code, 0) << pull.err;
  }
  agent::LayerStore layers(state_dir_ + "/images/layers");
  ASSERT_EQ(layers.List().size(), 3u) << "one base, two tops";
  ASSERT_EQ(Bai({"admin", "image", "rescan"}).exit_code, 0);
  auto keep = Bai({"run", "app1", "--name", "keep", "-c", "true"});
  ASSERT_EQ(keep.exit_code, 0) << keep.err;

  auto refused = agent_image({"rm", "app1"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("in use by a kernel"));
  auto listed = agent_image({"ls"});
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("app1 +pulled .* yes"));
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("python +host "));
  // Through the manager (purge_images, 25.4's): app2 goes, app1 is refused in words.
  auto purged = Bai({"admin", "image", "purge", agent_id_, "app2", "app1"});
  EXPECT_EQ(purged.exit_code, 0) << purged.err;
  EXPECT_THAT(purged.out, HasSubstr("1 image purged from 1 agent"));
  EXPECT_THAT(purged.out, HasSubstr("app1: app1 is in use by a kernel"));
  EXPECT_EQ(layers.List().size(), 2u) << "app1's base and top stay";
  EXPECT_FALSE(fs::exists(state_dir_ + "/images/app2"));
  auto unknown = Bai({"admin", "image", "purge", "no-such-agent", "app1"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("no-such-agent"));
  auto pruned = agent_image({"prune", "--all"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("0 images, 0 layers"));
  auto still = Bai({"run", "app1", "--name", "keep", "-c", "cat /etc/os-release"});
  EXPECT_EQ(still.out, "NAME=\"bai-test app 1\"\n") << still.err;

  EXPECT_EQ(Bai({"rm", "keep"}).exit_code, 0);
  auto kernels_left = [&] {
    std::error_code ec;
    return fs::directory_iterator(state_dir_ + "/" + agent_id_ + "/kernels", ec) !=
           fs::directory_iterator();
  };
  for (int i = 0; i < 200 && kernels_left(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pruned = agent_image({"prune", "--all"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("1 images, 2 layers"));
  EXPECT_TRUE(layers.List().empty());
  EXPECT_FALSE(fs::exists(state_dir_ + "/images/app1"));
  EXPECT_TRUE(fs::exists(state_dir_ + "/images/python")) << "host images stay";
}

// Issue 46, item 3: sessions started together on an image the agent does not have yet share
// one pull: each layer is fetched from the registry once (its access log says so), and both run.
TEST_F(LayeredKernelTest, SessionsStartedTogetherShareOnePull) {
  auto layers = App("1");
  std::string noise;
  std::uint32_t x = 4242;
  for (int i = 0; i < 8 << 20; ++i) {  // 8 MiB more: a pull that takes a moment
    x = x * 1103515245 + 12345;
    noise += static_cast<char>(x >> 24);
  }
  layers.push_back({LayerFile("opt/big.bin", noise)});
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", layers), "");
  std::string host = registry_.host();
  ASSERT_EQ(Bai({"admin", "registry", "add", host, "--url", registry_.url()}).exit_code, 0);
  ASSERT_EQ(Bai({"admin", "image", "rescan", host}).exit_code, 0);
  testing_util::ProcessResult runs[2];
  std::thread second([&] {
    runs[1] = Bai({"run", host + "/lab/app:1", "--", "cat", "/etc/os-release"});
  });
  runs[0] = Bai({"run", host + "/lab/app:1", "--", "cat", "/etc/os-release"});
  second.join();
  for (auto const& r : runs) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "NAME=\"bai-test app 1\"\n");
  }
  auto manifest = testing_util::RunProcess({"/usr/bin/curl", "-sf", "-H",
                                            "Accept: application/vnd.oci.image.manifest.v1+json",
                                            registry_.url() + "/v2/lab/app/manifests/1"});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  auto m = nlohmann::json::parse(manifest.out);
  ASSERT_EQ(m["layers"].size(), 3u);
  for (auto const& l : m["layers"]) {
    std::string digest = l["digest"];
    EXPECT_EQ(registry_.Requests("GET", "/v2/lab/app/blobs/" + digest), 1)
        << digest << "\n"
        << registry_.Log().substr(0, 4000);
  }
}

// A registry that dies in the middle of a layer and comes back: the agent waits for it (pauses
// of 1, 2, 4 s…) and the download goes on from the bytes it had (Range), not from nothing. The
// registry is reached through a link of the test's own that slows its bytes to 4 MiB/s, is cut
// (connections broken, the port refusing) 6 MiB into the 16 MiB layer, and healed 2.5 s on.
TEST_F(LayeredKernelTest, ARegistryThatDiesMidLayerIsWaitedForAndThePullResumes) {
  auto layers = App("1");
  std::string noise;
  std::uint32_t x = 99;
  for (int i = 0; i < 16 << 20; ++i) {
    x = x * 1103515245 + 12345;
    noise += static_cast<char>(x >> 24);
  }
  layers.push_back({LayerFile("opt/big.bin", noise)});
  ASSERT_EQ(Push(registry_, dir_, "lab/app:1", layers), "");
  int registry_port = std::stoi(registry_.host().substr(registry_.host().rfind(':') + 1));
  testing_util::TcpRelay link(registry_port, 4 << 20);
  ASSERT_NE(link.port(), 0);
  std::string host = "127.0.0.1:" + std::to_string(link.port());
  ASSERT_EQ(Bai({"admin", "registry", "add", host, "--url", "http://" + host}).exit_code, 0);
  auto rescan = Bai({"admin", "image", "rescan", host});
  ASSERT_EQ(rescan.exit_code, 0) << rescan.err;
  std::int64_t before = link.bytes_down();
  testing_util::ProcessResult run;
  std::thread job([&] { run = Bai({"run", host + "/lab/app:1", "--", "cat", "/etc/os-release"}); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (link.bytes_down() - before < (6 << 20) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::int64_t at_cut = link.bytes_down() - before;
  link.Cut();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  link.Heal();
  job.join();
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "NAME=\"bai-test app 1\"\n");
  EXPECT_GE(at_cut, 6 << 20) << "the cut came in the middle of the layer";
  EXPECT_LT(at_cut, static_cast<std::int64_t>(noise.size())) << "the cut came before its end";
  // Every byte of the image came once (plus headers): the layer went on from where it broke.
  std::int64_t image_bytes = static_cast<std::int64_t>(noise.size()) +
                             static_cast<std::int64_t>(fs::file_size("/bin/busybox")) + 300 * 1024;
  EXPECT_LT(link.bytes_down() - before, image_bytes + (1 << 20))
      << "fetched again from nothing after the break";
  EXPECT_GE(link.bytes_down() - before, static_cast<std::int64_t>(noise.size()));
}

}  // namespace
}  // namespace bai
