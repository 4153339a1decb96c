// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/templates/session_template.h"

#include "libbai/util/url.h"
#include "server-reference/common/wire/yaml_json.h"

#include <initializer_list>

namespace bai::manager::templates {

using nlohmann::json;

namespace {

Status Bad(std::string const& field, std::string const& why) {
  return Status(StatusCode::kInvalidArgument, field + ": " + why);
}

// The first of `names` that `object` has, or nullptr.
json const* Find(json const& object, std::initializer_list<char const*> names) {
  for (auto const* n : names) {
    if (auto it = object.find(n); it != object.end()) return &*it;
  }
  return nullptr;
}

// Moves the first present alias of `names` to `canonical` (dropping the others).
void Canonical(json& object, std::initializer_list<char const*> names, char const* canonical) {
  json const* found = Find(object, names);
  if (found == nullptr) return;
  json value = *found;
  for (auto const* n : names) object.erase(n);
  object[canonical] = std::move(value);
}

bool NullOrString(json const* v) { return v == nullptr || v->is_null() || v->is_string(); }

// Paths under /home/work the kernel's own files use (24.09's reserved vfolder names).
bool Reserved(std::string path) {
  constexpr std::string_view kHome = "/home/work/";
  if (path.rfind(kHome, 0) == 0) path = path.substr(kHome.size());
  std::string top = path.substr(0, path.find('/'));
  for (auto const* r : {".terminfo", ".jupyter", ".ssh", ".local", ".config", ".linuxbrew"}) {
    if (top == r) return true;
  }
  return false;
}

// A request value that counts as given: anything but null.
bool Given(json const& v) { return !v.is_null(); }

// Sets `key` of `into` from `value` unless the request spells it (by any of `aliases`).
void Default(json& into, json const& request, std::initializer_list<char const*> aliases,
             json value) {
  for (auto const* a : aliases) {
    if (auto it = request.find(a); it != request.end() && Given(*it)) return;
  }
  into[*aliases.begin()] = std::move(value);
}

// One word for /bin/sh, whatever it holds.
std::string ShellQuote(std::string const& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The string at `key`, or "" when it is absent or not a string (a template stored by an older
// release may lack keys its check now adds).
std::string StringAt(json const& object, char const* key) {
  json const* v = Find(object, {key});
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

std::string GitBootstrap(json const& git) {
  std::string repo = git["repository"].get<std::string>();
  std::string dest = StringAt(git, "dest_dir");
  if (dest.empty()) {
    // git's own choice: the last path component, less ".git".
    std::string base = repo;
    while (!base.empty() && base.back() == '/') base.pop_back();
    base = base.substr(base.find_last_of("/:") + 1);
    if (base.size() > 4 && base.compare(base.size() - 4, 4, ".git") == 0) {
      base.resize(base.size() - 4);
    }
    dest = base.empty() ? "repository" : base;
  }
  std::string url = repo;
  if (json const* c = Find(git, {"credential"}); c != nullptr && c->is_object()) {
    std::string user = StringAt(*c, "username");
    std::string pass = StringAt(*c, "password");
    auto scheme = url.find("://");
    if (!user.empty() && scheme != std::string::npos) {
      url.insert(scheme + 3, internal::EncodeSegment(user) +
                                 (pass.empty() ? "" : ":" + internal::EncodeSegment(pass)) + "@");
    }
  }
  std::string branch = StringAt(git, "branch");
  std::string commit = StringAt(git, "commit");
  std::string script = "# the template's repository (spec.kernel.git)\n";
  script += "if [ ! -e " + ShellQuote(dest) + "/.git ]; then\n  git clone --quiet" +
            (branch.empty() ? "" : " --branch " + ShellQuote(branch)) + " " + ShellQuote(url) +
            " " + ShellQuote(dest) + " || exit $?\n";
  if (!commit.empty()) {
    script += "  git -C " + ShellQuote(dest) + " checkout --quiet " + ShellQuote(commit) +
              " || exit $?\n";
  }
  return script + "fi\n";
}

// A key of another level of the template written at this one (`spec.startup_command` for
// `spec.kernel.run.startup_command`): refused with where it belongs, since it would otherwise be
// kept and never used. Keys of no level at all stay ignored (unknown keys are, everywhere).
static Status MisplacedKey(std::string const& path, json const& object,
                           std::initializer_list<std::pair<char const*, char const*>> moved) {
  for (auto const& [key, home] : moved) {
    if (object.contains(key)) {
      return Bad(path + key,
                 std::string("belongs at ") + home + ", not here (the template would ignore it)");
    }
  }
  return Status();
}

StatusOr<json> CheckTaskTemplate(json const& raw, std::string const& where) {
  if (!raw.is_object()) return Bad(where.empty() ? "template" : where, "must be an object");
  std::string const w = where.empty() ? "" : where + ".";
  json t = raw;
  Canonical(t, {"api_version", "apiVersion"}, "api_version");
  auto version = t.find("api_version");
  if (version == t.end() || !version->is_string()) {
    return Bad(w + "apiVersion", "required (a string, e.g. v1)");
  }
  auto kind = t.find("kind");
  if (kind == t.end() || !kind->is_string() ||
      (*kind != "taskTemplate" && *kind != "task_template")) {
    return Bad(w + "kind", "must be taskTemplate");
  }
  auto meta = t.find("metadata");
  if (meta == t.end() || !meta->is_object()) return Bad(w + "metadata", "required");
  auto name = meta->find("name");
  if (name == meta->end() || !name->is_string() || name->get_ref<std::string const&>().empty()) {
    return Bad(w + "metadata.name", "required (a string)");
  }
  if (!NullOrString(Find(*meta, {"tag"}))) return Bad(w + "metadata.tag", "must be a string");
  if (!meta->contains("tag")) (*meta)["tag"] = nullptr;
  if (auto m = MisplacedKey(w, t,
                            {{"kernel", "spec.kernel"},
                             {"session_type", "spec.session_type"},
                             {"resources", "spec.resources"},
                             {"mounts", "spec.mounts"}});
      !m.ok()) {
    return m;
  }
  auto spec = t.find("spec");
  if (spec == t.end() || !spec->is_object()) return Bad(w + "spec", "required");
  json& s = *spec;
  if (auto m = MisplacedKey(w + "spec.", s,
                            {{"image", "spec.kernel.image"},
                             {"environ", "spec.kernel.environ"},
                             {"architecture", "spec.kernel.architecture"},
                             {"git", "spec.kernel.git"},
                             {"run", "spec.kernel.run"},
                             {"startup_command", "spec.kernel.run.startup_command"},
                             {"startupCommand", "spec.kernel.run.startup_command"},
                             {"startup", "spec.kernel.run.startup_command"},
                             {"bootstrap", "spec.kernel.run.bootstrap"}});
      !m.ok()) {
    return m;
  }
  Canonical(s, {"session_type", "sessionType", "type"}, "session_type");
  if (!s.contains("session_type")) s["session_type"] = "interactive";
  auto const& type = s["session_type"];
  if (!type.is_string() || (type != "interactive" && type != "batch" && type != "inference")) {
    return Bad(w + "spec.session_type", "interactive, batch or inference");
  }
  auto kernel = s.find("kernel");
  if (kernel == s.end() || !kernel->is_object()) return Bad(w + "spec.kernel", "required");
  json& k = *kernel;
  if (auto m = MisplacedKey(w + "spec.kernel.", k,
                            {{"startup_command", "spec.kernel.run.startup_command"},
                             {"startupCommand", "spec.kernel.run.startup_command"},
                             {"startup", "spec.kernel.run.startup_command"},
                             {"bootstrap", "spec.kernel.run.bootstrap"},
                             {"resources", "spec.resources"},
                             {"mounts", "spec.mounts"},
                             {"scaling_group", "spec.scaling_group"},
                             {"agent_list", "spec.agent_list"},
                             {"session_type", "spec.session_type"}});
      !m.ok()) {
    return m;
  }
  auto image = k.find("image");
  if (image == k.end() || !image->is_string() || image->get_ref<std::string const&>().empty()) {
    return Bad(w + "spec.kernel.image", "required (a string)");
  }
  if (!k.contains("architecture") || k["architecture"].is_null()) k["architecture"] = "x86_64";
  if (!k["architecture"].is_string()) {
    return Bad(w + "spec.kernel.architecture", "must be a string");
  }
  if (!k.contains("environ") || k["environ"].is_null()) k["environ"] = json::object();
  if (!k["environ"].is_object()) return Bad(w + "spec.kernel.environ", "must be a map");
  for (auto const& [key, value] : k["environ"].items()) {
    if (!value.is_string()) {
      return Bad(w + "spec.kernel.environ." + key, "must be a string (quote it)");
    }
  }
  if (!k.contains("run")) k["run"] = nullptr;
  if (auto& run = k["run"]; !run.is_null()) {
    if (!run.is_object()) return Bad(w + "spec.kernel.run", "must be a map");
    Canonical(run, {"startup_command", "startup", "startupCommand"}, "startup_command");
    for (auto const* key : {"bootstrap", "startup_command"}) {
      if (!run.contains(key)) run[key] = nullptr;
      if (!NullOrString(&run[key])) {
        return Bad(w + "spec.kernel.run." + key, "must be a string");
      }
    }
  }
  if (!k.contains("git")) k["git"] = nullptr;
  if (auto& git = k["git"]; !git.is_null()) {
    if (!git.is_object()) return Bad(w + "spec.kernel.git", "must be a map");
    auto repo = git.find("repository");
    if (repo == git.end() || !repo->is_string()) {
      return Bad(w + "spec.kernel.git.repository", "required (a string)");
    }
    Canonical(git, {"dest_dir", "destination_dir", "destinationDir"}, "dest_dir");
    for (auto const* key : {"commit", "branch", "dest_dir"}) {
      if (!git.contains(key)) git[key] = nullptr;
      if (!NullOrString(&git[key])) return Bad(w + "spec.kernel.git." + key, "a string");
    }
    if (!git.contains("credential")) git["credential"] = nullptr;
    if (auto& c = git["credential"]; !c.is_null()) {
      if (!c.is_object()) return Bad(w + "spec.kernel.git.credential", "must be a map");
      for (auto const* key : {"username", "password"}) {
        if (!c.contains(key)) c[key] = nullptr;
        if (!NullOrString(&c[key])) {
          return Bad(w + "spec.kernel.git.credential." + key, "must be a string");
        }
      }
    }
  }
  if (!s.contains("scaling_group")) s["scaling_group"] = nullptr;
  if (!NullOrString(&s["scaling_group"])) {
    return Bad(w + "spec.scaling_group", "must be a string");
  }
  if (!s.contains("mounts") || s["mounts"].is_null()) s["mounts"] = json::object();
  if (!s["mounts"].is_object()) {
    return Bad(w + "spec.mounts", "must be a map of folder name to path (or null)");
  }
  for (auto const& [folder, path] : s["mounts"].items()) {
    if (folder.empty()) return Bad(w + "spec.mounts", "a folder name is empty");
    if (!NullOrString(&path)) return Bad(w + "spec.mounts." + folder, "a path or null");
    if (path.is_string() && Reserved(path.get<std::string>())) {
      return Bad(w + "spec.mounts." + folder,
                 "Path " + path.get<std::string>() + " is reserved for internal operations.");
    }
  }
  if (!s.contains("resources")) s["resources"] = nullptr;
  if (!s["resources"].is_null() && !s["resources"].is_object()) {
    return Bad(w + "spec.resources", "must be a map of slot to amount");
  }
  Canonical(s, {"agent_list", "agentList"}, "agent_list");
  if (!s.contains("agent_list")) s["agent_list"] = nullptr;
  if (auto const& agents = s["agent_list"]; !agents.is_null()) {
    bool strings = agents.is_array();
    for (auto const& a : agents) strings = strings && a.is_string();
    if (!strings) return Bad(w + "spec.agent_list", "must be a list of agent ids");
  }
  return t;
}

StatusOr<Payload> ParsePayload(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    auto docs = server::ParseYamlStream(text);
    if (!docs.ok()) {
      return Status(StatusCode::kInvalidArgument, "Malformed payload: " + docs.status().message());
    }
    if (docs->empty()) return Status(StatusCode::kInvalidArgument, "Malformed payload: empty");
    doc = docs->size() == 1 ? std::move(docs->front()) : json(*std::move(docs));
  }
  Payload out;
  json entries;
  std::string where;
  bool bare = false;  // errors then name the template's own fields ("spec.kernel.image")
  if (doc.is_object() && doc.contains("session_templates")) {
    entries = doc["session_templates"];
    where = "session_templates";
    out.one_answer = true;
    if (!entries.is_array()) return Bad(where, "must be a list");
  } else if (doc.is_array()) {
    entries = doc;
  } else if (doc.is_object() && doc.contains("template")) {
    entries = json::array({doc});
    out.one_answer = true;
  } else if (doc.is_object() && (doc.contains("kind") || doc.contains("spec"))) {
    entries = json::array({{{"template", doc}}});
    out.one_answer = true;
    bare = true;
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "Malformed payload: a template (apiVersion, kind, metadata, spec), a list of "
                  "{name, template}, or {\"session_templates\": [...]}");
  }
  if (entries.empty())
    return Status(StatusCode::kInvalidArgument, "Malformed payload: no template");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    auto const& e = entries[i];
    if (!e.is_object() || !e.contains("template")) return Bad(at, "must be {name?, template}");
    if (e.contains("user_uuid") || e.contains("group_id")) {
      // 24.09 lets a payload name any owner and project: bai takes them from the request
      // (owner_access_key, group), where they are checked.
      return Bad(at,
                 "user_uuid and group_id are not taken from a payload: use owner_access_key "
                 "and group");
    }
    auto checked = CheckTaskTemplate(e["template"], bare ? "" : at + ".template");
    if (!checked.ok()) return checked.status();
    Entry entry;
    if (auto n = e.find("name"); n != e.end() && !n->is_null()) {
      if (!n->is_string() || n->get_ref<std::string const&>().empty()) {
        return Bad(at + ".name", "must be a non-empty string");
      }
      entry.name = n->get<std::string>();
    } else {
      entry.name = (*checked)["metadata"]["name"].get<std::string>();
    }
    if (entry.name.size() > 128) return Bad(at + ".name", "at most 128 characters");
    entry.body = *std::move(checked);
    out.entries.push_back(std::move(entry));
  }
  return out;
}

StatusOr<json> CreationRequest(json const& t, Origin const& origin, json const& request) {
  json const& spec = t["spec"];
  json const& kernel = spec["kernel"];
  json out = json::object();
  // The bootstrap script: the template's run.bootstrap, then its repository's clone.
  std::string bootstrap;
  if (kernel["run"].is_object() && kernel["run"]["bootstrap"].is_string()) {
    bootstrap = kernel["run"]["bootstrap"].get<std::string>();
  }
  if (kernel["git"].is_object()) {
    if (!bootstrap.empty() && bootstrap.back() != '\n') bootstrap += '\n';
    bootstrap += GitBootstrap(kernel["git"]);
  }
  if (!bootstrap.empty()) {
    Default(out, request, {"bootstrap_script", "bootstrapScript"}, bootstrap);
  }
  Default(out, request, {"image", "lang"}, kernel["image"]);
  Default(out, request, {"architecture", "arch"}, kernel["architecture"]);
  Default(out, request, {"type", "sessionType"}, spec["session_type"]);
  if (!origin.domain_name.empty()) {
    Default(out, request, {"domain", "domainName", "domain_name"}, origin.domain_name);
  }
  if (!origin.group_name.empty()) {
    Default(out, request, {"group", "groupName", "group_name"}, origin.group_name);
  }
  if (auto const& tag = t["metadata"]["tag"]; tag.is_string()) {
    Default(out, request, {"tag"}, tag);
  }
  if (kernel["run"].is_object() && kernel["run"]["startup_command"].is_string()) {
    Default(out, request, {"startupCommand", "startup_command"}, kernel["run"]["startup_command"]);
  }
  json config = json::object();
  json const& asked = request.contains("config") && request["config"].is_object()
                          ? request["config"]
                          : json::object();
  if (spec["scaling_group"].is_string()) {
    Default(config, asked, {"scaling_group", "scalingGroup"}, spec["scaling_group"]);
  }
  // The 22.03 SDK sends `config.mounts: []` with every request: its own folders only when
  // it names some, or sends mount_map (its CLI's -m, and --no-mount, which sends both empty).
  bool own_mounts = asked.contains("mount_map") || asked.contains("mountMap");
  if (auto it = asked.find("mounts"); it != asked.end() && it->is_array() && !it->empty()) {
    own_mounts = true;
  }
  if (!own_mounts && !spec["mounts"].empty()) {
    json names = json::array();
    json map = json::object();
    for (auto const& [folder, path] : spec["mounts"].items()) {
      names.push_back(folder);
      if (path.is_string() && !path.get_ref<std::string const&>().empty()) map[folder] = path;
    }
    config["mounts"] = names;
    if (!map.empty()) config["mount_map"] = map;
  }
  if (!kernel["environ"].empty()) Default(config, asked, {"environ"}, kernel["environ"]);
  if (spec["resources"].is_object() && !spec["resources"].empty()) {
    Default(config, asked, {"resources"}, spec["resources"]);
  }
  if (spec["agent_list"].is_array()) {
    Default(config, asked, {"agent_list", "agentList"}, spec["agent_list"]);
  }
  // The request on top, as given (its nulls and empty values dropped).
  for (auto const& [key, value] : request.items()) {
    if (key == "template_id" || key == "config" || !Given(value)) continue;
    out[key] = value;
  }
  for (auto const& [key, value] : asked.items()) {
    if (!Given(value)) continue;
    if (!own_mounts && (key == "mounts" || key == "mount_map" || key == "mountMap")) continue;
    config[key] = value;
  }
  if (!config.empty()) out["config"] = std::move(config);
  return out;
}

}  // namespace bai::manager::templates
