// SPDX-License-Identifier: Apache-2.0
// Session templates' pure core (server-reference/manager/templates/session_template.h), the
// YAML reader and writer it uses (common/wire/yaml_json.h) and the list's wire type.
#include "server-reference/manager/templates/session_template.h"

#include "bai/protocol/admin_wire.h"

#include "server-reference/common/wire/yaml_json.h"
#include "tests/testing_util/subprocess.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace bai::manager::templates {
namespace {

using nlohmann::json;

// The sample of Backend.AI's session-template docs, as a user writes it.
constexpr char kDocsSample[] = R"(---
api_version: v1
kind: taskTemplate
metadata:
  name: template1234
  tag: example-tag
spec:
  kernel:
    environ:
      MYCONFIG: XXX
    image: python:3.6-ubuntu18.04
  resources:
    cpu: '2'
    mem: 4g
  mounts:
    hostpath-test: /home/work/hostDesktop
    test-vfolder:
  sessionType: interactive
)";

TEST(YamlJson, ResolvesPlainScalarsAsPyYamlDoes) {
  auto docs = server::ParseYamlStream(
      "a: 1\nb: -0x1F\nc: 1.5\nd: yes\ne: Off\nf: ~\ng: '2'\nh: 19.09\ni: \"true\"\nj: 1e5\n"
      "k: 0o17\nl: 017\nm: 1_000\nn: .5\no: null\np:\nq: hello world\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 1u);
  json const& d = docs->front();
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], -31);
  EXPECT_EQ(d["c"], 1.5);
  EXPECT_EQ(d["d"], true);
  EXPECT_EQ(d["e"], false);
  EXPECT_TRUE(d["f"].is_null());
  EXPECT_EQ(d["g"], "2");    // quoted: a string
  EXPECT_EQ(d["h"], 19.09);  // the docs' branch: '19.09' quoted, for this reason
  EXPECT_EQ(d["i"], "true");
  EXPECT_EQ(d["j"], "1e5");   // YAML 1.1 floats need a dot
  EXPECT_EQ(d["k"], "0o17");  // not a YAML 1.1 octal
  EXPECT_EQ(d["l"], 15);      // this one is
  EXPECT_EQ(d["m"], 1000);
  EXPECT_EQ(d["n"], 0.5);
  EXPECT_TRUE(d["o"].is_null());
  EXPECT_TRUE(d["p"].is_null());
  EXPECT_EQ(d["q"], "hello world");
}

TEST(YamlJson, ReadsStreamsAndRefusesWhatIsNotYaml) {
  auto two = server::ParseYamlStream("---\na: 1\n---\n- x\n- y\n");
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1], json::array({"x", "y"}));
  EXPECT_TRUE(server::ParseYamlStream("").value().empty());

  auto bad = server::ParseYamlStream("a: [1, 2\nb: 3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line"), std::string::npos) << bad.status().message();
  auto key = server::ParseYamlStream("? [a, b]\n: 1\n");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("keys must be scalars"), std::string::npos);
}

TEST(YamlJson, RefusesAliasBombsInsteadOfExpandingThem) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  auto r = server::ParseYamlStream(bomb);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
}

TEST(YamlJson, WritesBlockYamlThatReadsBackEqual) {
  json v = {{"name", "t1"},
            {"quoted", {"yes", "no", "~", "1.5", "0x1F", "", " pad", "a: b", "#c", "-x", "x,y"}},
            {"numbers", {1, -2, 2.5, 1e20, 0.1}},
            {"flags", {true, false, nullptr}},
            {"script", "#!/bin/sh\necho hi\n\n  indented\n"},
            {"script_no_newline", "line1\nline2"},
            {"script_blank_tail", "a\n\n\n"},
            {"nested",
             {{"list", json::array({json::object({{"a", 1}, {"b", {1, 2}}}), json::array({1})})},
              {"empty_map", json::object()},
              {"empty_list", json::array()}}},
            {"key with: colon", "v"},
            {"unicode", "이미지 ☃"}};
  std::string text = server::ToYaml(v);
  auto back = server::ParseYamlStream(text);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << text;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front(), v) << text;
  EXPECT_NE(text.find("script: |\n  #!/bin/sh\n  echo hi\n"), std::string::npos) << text;
  EXPECT_EQ(server::ToYaml(json("plain")), "plain\n");
}

TEST(SessionTemplateCore, TheDocsSampleReadsAsABareTemplate) {
  auto p = ParsePayload(kDocsSample);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->one_answer);
  ASSERT_EQ(p->entries.size(), 1u);
  auto const& e = p->entries.front();
  EXPECT_EQ(e.name, "template1234");
  EXPECT_EQ(e.body["api_version"], "v1");
  EXPECT_EQ(e.body["spec"]["session_type"], "interactive");
  EXPECT_FALSE(e.body["spec"].contains("sessionType"));
  EXPECT_EQ(e.body["spec"]["kernel"]["architecture"], "x86_64");
  EXPECT_EQ(e.body["spec"]["resources"]["cpu"], "2");
  EXPECT_TRUE(e.body["spec"]["mounts"]["test-vfolder"].is_null());
  EXPECT_EQ(e.body["metadata"]["tag"], "example-tag");
}

TEST(SessionTemplateCore, EachClientsPayloadShapeAndItsAnswer) {
  json tpl = {{"apiVersion", "v1"},
              {"kind", "task_template"},
              {"metadata", {{"name", "n1"}}},
              {"spec", {{"kernel", {{"image", "python"}}}}}};
  // 22.03's manager: {"session_templates": [...]}, answered with one object.
  auto old = ParsePayload(json({{"session_templates", {{{"template", tpl}}}}}).dump());
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->one_answer);
  EXPECT_EQ(old->entries[0].name, "n1");
  // 24.09: a list, answered with a list; an entry's name wins over metadata.name.
  auto list = ParsePayload(
      json::array({{{"name", "mine"}, {"template", tpl}}, {{"template", tpl}}}).dump());
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE(list->one_answer);
  ASSERT_EQ(list->entries.size(), 2u);
  EXPECT_EQ(list->entries[0].name, "mine");
  // A YAML stream of two entries is a list.
  auto stream = ParsePayload(
      "---\ntemplate:\n  apiVersion: v1\n  kind: taskTemplate\n  metadata: {name: a}\n"
      "  spec: {kernel: {image: python}}\n---\nname: b\ntemplate:\n"
      "  apiVersion: v1\n  kind: taskTemplate\n  metadata: {name: x}\n"
      "  spec: {kernel: {image: python}}\n");
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  EXPECT_FALSE(stream->one_answer);
  ASSERT_EQ(stream->entries.size(), 2u);
  EXPECT_EQ(stream->entries[1].name, "b");
}

TEST(SessionTemplateCore, RefusalsNameTheField) {
  auto message = [](std::string const& text) {
    auto p = ParsePayload(text);
    EXPECT_FALSE(p.ok()) << text;
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_NE(message("not: [valid").find("Malformed payload"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("[]").find("no template"), std::string::npos);
  EXPECT_NE(message("{\"x\": 1}").find("Malformed payload"), std::string::npos);
  EXPECT_NE(message("kind: taskTemplate\nmetadata: {name: a}\nspec: {kernel: {image: p}}")
                .find("apiVersion: required"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: clusterTemplate\nmetadata: {name: a}\nspec: {}")
                .find("kind: must be taskTemplate"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\nspec: {kernel: {}}")
                .find("spec.kernel.image: required"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p, environ: {A: 1}}}")
                .find("spec.kernel.environ.A: must be a string"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p}, type: daemon}")
                .find("spec.session_type"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p}, mounts: {f: /home/work/.ssh}}")
                .find("reserved"),
            std::string::npos);
  EXPECT_NE(message("session_templates:\n- template: {}\n  user_uuid: someone-else\n")
                .find("user_uuid and group_id are not taken"),
            std::string::npos);
  // Issue 43: a key of another level was kept and never used (the session ran without its
  // command); now refused, naming where it belongs.
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p}, startup_command: 'python3 train.py'}")
                .find("spec.startup_command: belongs at spec.kernel.run.startup_command"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p, startup_command: x}}")
                .find("spec.kernel.startup_command: belongs at spec.kernel.run.startup_command"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {kernel: {image: p, resources: {cpu: 1}}}")
                .find("spec.kernel.resources: belongs at spec.resources"),
            std::string::npos);
  EXPECT_NE(message("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                    "spec: {image: p, kernel: {image: p}}")
                .find("spec.image: belongs at spec.kernel.image"),
            std::string::npos);
  // A key of no level stays ignored (unknown keys are, as 24.09 does).
  EXPECT_TRUE(ParsePayload("apiVersion: v1\nkind: taskTemplate\nmetadata: {name: a}\n"
                           "spec: {kernel: {image: p}, x-note: mine}")
                  .ok());
}

TEST(SessionTemplateCore, TheRequestWinsKeyByKeyOverTheTemplate) {
  auto p = ParsePayload(
      "apiVersion: v1\nkind: taskTemplate\nmetadata: {name: t, tag: nightly}\n"
      "spec:\n  type: batch\n  scaling_group: gpu\n"
      "  kernel:\n    image: python:3.11\n    environ: {A: '1'}\n"
      "    run: {startup: python train.py}\n"
      "  mounts: {data: /home/work/d, models: null}\n  resources: {cpu: 2, mem: 1g}\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  json const& t = p->entries[0].body;
  Origin origin{"vision", "default"};
  // The 22.03 client's request: its defaults, the empty mounts list it always sends, nulls.
  json asked = {
      {"template_id", "abc"},
      {"name", "job-1"},
      {"group", "default"},
      {"reuseIfExists", true},
      {"tag", nullptr},
      {"config", {{"mounts", json::array()}, {"environ", nullptr}, {"resources", {{"cpu", 4}}}}}};
  auto body = CreationRequest(t, origin, asked);
  ASSERT_TRUE(body.ok()) << body.status().message();
  json const& b = *body;
  EXPECT_EQ(b["image"], "python:3.11");
  EXPECT_EQ(b["type"], "batch");
  EXPECT_EQ(b["startupCommand"], "python train.py");
  EXPECT_EQ(b["tag"], "nightly");    // a null in the request is not given
  EXPECT_EQ(b["group"], "default");  // the request names a project: it wins
  EXPECT_EQ(b["domain"], "default");
  EXPECT_EQ(b["name"], "job-1");
  EXPECT_FALSE(b.contains("template_id"));
  EXPECT_EQ(b["config"]["mounts"], json::array({"data", "models"}));  // not its [] alone
  EXPECT_EQ(b["config"]["mount_map"], json({{"data", "/home/work/d"}}));
  EXPECT_EQ(b["config"]["environ"], json({{"A", "1"}}));
  EXPECT_EQ(b["config"]["resources"], json({{"cpu", 4}}));  // the request's, whole
  EXPECT_EQ(b["config"]["scaling_group"], "gpu");

  // The 22.03 CLI's --no-mount and --no-env: empty values that are given.
  auto bare = CreationRequest(
      t, origin,
      {{"config",
        {{"mounts", json::array()}, {"mount_map", json::object()}, {"environ", json::object()}}}});
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ((*bare)["config"]["mounts"], json::array());
  EXPECT_EQ((*bare)["config"]["environ"], json::object());

  // Spelled with another alias, the request's value still wins (and the template's goes).
  auto other = CreationRequest(t, origin,
                               {{"lang", "ubuntu"},
                                {"sessionType", "interactive"},
                                {"config", {{"scalingGroup", "cpu"}, {"mounts", {"other"}}}}});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->contains("image"));
  EXPECT_EQ((*other)["lang"], "ubuntu");
  EXPECT_FALSE(other->contains("type"));
  EXPECT_FALSE((*other)["config"].contains("scaling_group"));
  EXPECT_EQ((*other)["config"]["mounts"], json::array({"other"}));
  EXPECT_FALSE(
      (*other)["config"].contains("mount_map"));  // the template's paths go with its folders
  EXPECT_EQ((*other)["group"], "vision");         // the template's project
}

TEST(SessionTemplateCore, BootstrapAndGitBecomeTheSessionsBootstrapScript) {
  auto git = ParsePayload(
      "apiVersion: v1\nkind: taskTemplate\nmetadata: {name: t}\n"
      "spec: {kernel: {image: p, run: {bootstrap: 'echo hi'}, git: {repository: "
      "'https://example.org/r.git', destinationDir: /home/work/r, branch: \"it's\", "
      "commit: abc123, credential: {username: 'me@x', password: 'p/ss word'}}}}\n");
  ASSERT_TRUE(git.ok()) << git.status().message();
  EXPECT_EQ(git->entries[0].body["spec"]["kernel"]["git"]["dest_dir"], "/home/work/r");
  auto r = CreationRequest(git->entries[0].body, {}, json::object());
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string script = (*r)["bootstrap_script"];
  // The template's own bootstrap first, then the clone; every value one shell word.
  EXPECT_EQ(script.rfind("echo hi\n", 0), 0U) << script;
  EXPECT_NE(script.find("git clone --quiet --branch 'it'\\''s' "
                        "'https://me%40x:p%2Fss%20word@example.org/r.git' '/home/work/r' "
                        "|| exit $?\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("git -C '/home/work/r' checkout --quiet 'abc123' || exit $?"),
            std::string::npos)
      << script;
  // The request's own script wins.
  auto own = CreationRequest(git->entries[0].body, {}, {{"bootstrap_script", "echo mine"}});
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((*own)["bootstrap_script"], "echo mine");
  // No bootstrap and no repository: no script at all.
  auto plain = ParsePayload(
      "apiVersion: v1\nkind: taskTemplate\nmetadata: {name: t}\nspec: {kernel: {image: p}}\n");
  ASSERT_TRUE(plain.ok());
  auto none = CreationRequest(plain->entries[0].body, {}, json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->contains("bootstrap_script"));
  // A credential that is not a map is refused, naming it.
  auto bad = ParsePayload(
      "apiVersion: v1\nkind: taskTemplate\nmetadata: {name: t}\n"
      "spec: {kernel: {image: p, git: {repository: r, credential: secret}}}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.kernel.git.credential"), std::string::npos);
}

// The script GitBootstrap writes, run by /bin/sh against a real repository: it clones into the
// destination (git's own name when none is given), checks the commit out, and does nothing the
// second time (a restarted kernel keeps its work).
TEST(SessionTemplateCore, TheGitBootstrapScriptClonesARealRepository) {
  if (std::system("git --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no git here";
  testing_util::TempDir dir;
  std::string const origin = dir.path() + "/origin";
  std::string setup = "set -e; git init -q -b main '" + origin + "'; cd '" + origin +
                      "'; echo one > f; git add f; git -c user.email=t@t -c user.name=t commit "
                      "-qm one; echo two > f; git -c user.email=t@t -c user.name=t commit -qam "
                      "two; git rev-parse HEAD~1 > ../first";
  ASSERT_EQ(std::system(("sh -c \"" + setup + "\" > /dev/null 2>&1").c_str()), 0);
  std::string first = testing_util::ReadFileBytes(dir.path() + "/first");
  first.erase(first.find_last_not_of('\n') + 1);
  std::string work = dir.path() + "/work";
  ASSERT_EQ(std::system(("mkdir -p '" + work + "'").c_str()), 0);
  json g = {{"repository", "file://" + origin}, {"branch", "main"}, {"commit", first}};
  testing_util::WriteFileBytes(dir.path() + "/boot.sh", GitBootstrap(g));
  std::string run = "cd '" + work + "' && sh ../boot.sh";
  ASSERT_EQ(std::system(run.c_str()), 0);
  EXPECT_EQ(testing_util::ReadFileBytes(work + "/origin/f"), "one\n");  // that commit's file
  ASSERT_EQ(std::system(run.c_str()), 0);                               // again: left as it is
  // A repository that does not exist ends the script with git's failure.
  testing_util::WriteFileBytes(dir.path() + "/bad.sh",
                               GitBootstrap({{"repository", "file://" + dir.path() + "/none"}}));
  EXPECT_NE(std::system(("cd '" + work + "' && sh ../bad.sh 2> /dev/null").c_str()), 0);
}

TEST(SessionTemplateWire, ListRoundTrips) {
  protocol::SessionTemplateInfo t;
  t.id = "0123456789abcdef0123456789abcdef";
  t.name = "train";
  t.created_at = "2026-11-26T10:00:00Z";
  t.is_owner = true;
  t.user = "u-1";
  t.group = "g-1";
  t.user_email = "ana@example.org";
  t.group_name = "vision";
  t.domain_name = "default";
  t.template_json = R"({"kind":"taskTemplate"})";
  auto text = protocol::EncodeSessionTemplates({t});
  auto back = protocol::DecodeSessionTemplates(text);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  auto const& b = back->front();
  EXPECT_EQ(b.id, t.id);
  EXPECT_EQ(b.name, "train");
  EXPECT_TRUE(b.is_owner);
  EXPECT_EQ(b.group_name, "vision");
  EXPECT_EQ(b.user_email, "ana@example.org");
  EXPECT_EQ(b.type, "task");
  EXPECT_EQ(json::parse(b.template_json), json::parse(t.template_json));
  EXPECT_FALSE(protocol::DecodeSessionTemplates("{}").ok());
}

}  // namespace
}  // namespace bai::manager::templates
