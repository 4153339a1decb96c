// SPDX-License-Identifier: Apache-2.0
// `bai vfolder …` and `bai cp`: virtual folders from the shell (VFolderClient underneath).
// Results on stdout (a table, paths, or -o json), progress on stderr: a bar on a terminal,
// NDJSON with --progress json, nothing otherwise.
#include "cli/commands/vfolder.h"

#include "bai/vfolder_client.h"

#include "cli/commands/session_util.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

namespace bai::cli {
namespace {

using nlohmann::json;

json InfoJson(VFolderInfo const& f) {
  return {{"id", f.id},
          {"name", f.name},
          {"host", f.host},
          {"status", f.status},
          {"usage_mode", f.usage_mode},
          {"permission", f.permission},
          {"ownership_type", f.ownership_type},
          {"is_owner", f.is_owner},
          {"cloneable", f.cloneable},
          {"created_at", f.created_at},
          {"num_files", f.num_files ? json(*f.num_files) : json()},
          {"used_bytes", f.used_bytes},
          {"quota_bytes", f.max_size > 0 ? json(f.max_size) : json(nullptr)},
          {"quota_files", f.max_files > 0 ? json(f.max_files) : json(nullptr)}};
}

// A quota as typed: a size such as 10g, or 0 / none for no quota.
StatusOr<std::int64_t> QuotaBytes(std::string const& text) {
  if (text == "none") return std::int64_t{0};
  auto size = protocol::ParseBinarySize(text);
  if (!size.ok() || size->is_unlimited()) {
    return UsageError("a quota is a size such as 10g or 512m (0 or none: no quota), not '" + text +
                      "'");
  }
  return static_cast<std::int64_t>(size->units() / protocol::Decimal::kUnitsPerOne);
}

// Progress on stderr: NDJSON lines, or one bar line redrawn on a terminal (at most 5 times a
// second, and when a file finishes) with the size as people read it, the rate and the time left
// for the whole transfer.
class Progress {
 public:
  Progress(Context& ctx, std::string const& mode) : ctx_(ctx) {
    if (mode == "json") {
      kind_ = kJson;
    } else if (mode == "bar" || (mode.empty() && ::isatty(2))) {
      kind_ = kBar;
    }
  }
  ProgressCallback Callback() {
    if (kind_ == kNone) return {};
    return [this](TransferProgress const& p) { Report(p); };
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (kind_ == kBar && drawn_) ctx_.err() << "\n";
  }

 private:
  void Report(TransferProgress const& p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    auto& file = files_[p.path];
    file.done = p.done;
    file.total = p.total;
    if (!p.finished && now - file.drawn < std::chrono::milliseconds(200)) return;
    file.drawn = now;
    // Bytes this process moved in all, the rate since the first report, and what is left of
    // every file seen so far.
    std::int64_t done = 0, total = 0;
    for (auto const& [path, f] : files_) {
      done += f.done;
      total += f.total;
    }
    if (!started_) {
      started_ = true;
      start_ = now;
      start_done_ = done;
    }
    double elapsed = std::chrono::duration<double>(now - start_).count();
    double rate = elapsed > 0.2 ? static_cast<double>(done - start_done_) / elapsed : 0;
    if (kind_ == kJson) {
      ctx_.err() << json{{"path", p.path},
                         {"done", p.done},
                         {"total", p.total},
                         {"finished", p.finished},
                         {"bytes_per_second", static_cast<std::int64_t>(rate)}}
                        .dump()
                 << "\n";
      return;
    }
    double pct =
        p.total > 0 ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 100.0;
    std::string rate_text = rate > 0 ? HumanBytes(rate) + "/s" : "";
    std::string eta = rate > 0 && total > done
                          ? "  ETA " + HumanSeconds(static_cast<double>(total - done) / rate)
                          : "";
    char line[256];
    std::snprintf(line, sizeof line, "\r%-32.32s %5.1f%%  %s / %s  %s%s\x1b[K", p.path.c_str(), pct,
                  HumanBytes(static_cast<double>(p.done)).c_str(),
                  HumanBytes(static_cast<double>(p.total)).c_str(), rate_text.c_str(), eta.c_str());
    ctx_.err() << line << std::flush;
    drawn_ = true;
  }

  struct File {
    std::int64_t done = 0, total = 0;
    std::chrono::steady_clock::time_point drawn;
  };
  enum { kNone, kJson, kBar } kind_ = kNone;
  Context& ctx_;
  std::mutex mu_;
  std::map<std::string, File> files_;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_;
  std::int64_t start_done_ = 0;
  bool drawn_ = false;
};

int Report(Context& ctx, StatusOr<TransferReport> const& report) {
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kCancelled) {
      ctx.err() << "interrupted; run the same command again to resume\n";
      return kExitInterrupted;
    }
    return ReportError(ctx, report.status());
  }
  if (ctx.json()) {
    ctx.out() << json{{"files", report->files},
                      {"bytes", report->bytes},
                      {"resumed", report->resumed},
                      {"written", report->written},
                      {"exit_code", 0}}
                     .dump()
              << "\n";
  } else {
    for (auto const& w : report->written) ctx.out() << w << "\n";
  }
  return 0;
}

TransferOptions MakeTransfer(TransferFlags const& flags, Progress& progress) {
  TransferOptions o;
  o.remote_dir = flags.dst;
  o.recursive = flags.recursive;
  o.parallel = flags.parallel;
  o.progress = progress.Callback();
  CatchInterrupts();
  o.cancel = InterruptFlag();
  return o;
}

}  // namespace

int RunVFolderUpload(std::string const& folder, std::vector<std::string> const& files,
                     TransferFlags const& flags, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  Progress progress(ctx, flags.progress);
  auto report = VFolderClient(*client).Upload(folder, files, MakeTransfer(flags, progress));
  progress.Finish();
  return Report(ctx, report);
}

int RunVFolderDownload(std::string const& folder, std::vector<std::string> const& paths,
                       std::string const& local_dir, TransferFlags const& flags, Context& ctx) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  Progress progress(ctx, flags.progress);
  auto report = VFolderClient(*client).Download(folder, paths, local_dir.empty() ? "." : local_dir,
                                                MakeTransfer(flags, progress));
  progress.Finish();
  return Report(ctx, report);
}

int RunCp(std::vector<std::string> const& args, TransferFlags const& flags, Context& ctx) {
  if (args.size() < 2) {
    ctx.err() << "error: cp needs a source and a destination (VFOLDER:PATH on one side)\n";
    return kExitUsage;
  }
  Place dst = ParsePlace(args.back());
  std::vector<Place> sources;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) sources.push_back(ParsePlace(args[i]));
  std::string folder = dst.remote.empty() ? sources[0].remote : dst.remote;
  for (auto const& s : sources) {
    bool ok = dst.remote.empty() ? s.remote == folder && !folder.empty() : s.remote.empty();
    if (!ok) {
      ctx.err() << "error: copy between this machine and one folder: local sources and a "
                   "VFOLDER:PATH destination, or VFOLDER:PATH sources of one folder and a local "
                   "destination\n";
      return kExitUsage;
    }
  }
  std::vector<std::string> paths;
  for (auto const& s : sources) paths.push_back(s.path);
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  Progress progress(ctx, flags.progress);
  VFolderClient folders(*client);
  auto report = dst.remote.empty()
                    ? folders.CopyFromFolder(folder, paths, dst.path, MakeTransfer(flags, progress))
                    : folders.CopyToFolder(folder, paths, dst.path, MakeTransfer(flags, progress));
  progress.Finish();
  return Report(ctx, report);
}

int WithFolders(Context& ctx, std::function<Status(VFolderClient&)> const& body) {
  auto client = ctx.MakeClient();
  if (!client.ok()) return ReportError(ctx, client.status());
  VFolderClient folders(*client);
  Status s = body(folders);
  if (!s.ok()) return ReportError(ctx, s);
  return 0;
}

namespace {

struct Named {
  std::string name, other;
};
struct PathsFlag {
  std::string folder;
  std::vector<std::string> paths;
  bool flag = false;
};
struct Transfer {
  std::string folder;
  std::vector<std::string> paths;
  TransferFlags flags;
};

void AddTransferFlags(CLI::App* cmd, TransferFlags& t) {
  cmd->add_flag("-r,--recursive", t.recursive, "Directories with everything in them");
  cmd->add_option("--parallel", t.parallel, "Files at once (default 4)")->check(CLI::Range(1, 64));
  cmd->add_option("--progress", t.progress,
                  "bar (default on a terminal), json (NDJSON on stderr) or none")
      ->check(CLI::IsMember({"bar", "json", "none"}));
}

void AddCreate(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& create = set.Keep<VFolderCreateRequest>();
  auto* c = noun.add_subcommand("create", "Create a folder");
  c->add_option("NAME", create.name, "Folder name")->required();
  c->add_option("--host", create.host, "Storage host PROXY:VOLUME (default: the server's)");
  c->add_option("--usage-mode", create.usage_mode, "general, model or data");
  c->add_option("--permission", create.permission, "ro, rw or wd (project folders' members)");
  c->add_option("--group,--project", create.group, "A project: make a project folder");
  c->add_flag("--cloneable", create.cloneable, "Others may clone it");
  auto& quota = set.Keep<std::string>();
  c->add_option("--quota", quota,
                "The folder's own quota, e.g. 10g (its owner's scope quota holds besides)");
  set.OnRun(c, [&create, &quota, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      if (!quota.empty()) {
        auto bytes = QuotaBytes(quota);
        if (!bytes.ok()) return bytes.status();
        create.quota = *bytes;
      }
      auto made = f.Create(create);
      if (!made.ok()) return made.status();
      if (ctx.json()) {
        // The creation's answer lacks what `vfolder info` shows (its time, the caller's
        // ownership and permission): the folder as info gives it, one shape for both.
        auto info = f.Info(made->id);
        auto j = InfoJson(info.ok() ? *info : *made);
        j["exit_code"] = 0;
        ctx.out() << j.dump() << "\n";
      } else {
        ctx.out() << made->id << "\n";
      }
      return Status();
    });
  });
}

void AddList(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto* ls = noun.add_subcommand("ls", "List the folders you can use");
  ls->alias("list");
  set.OnRun(ls, [&ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto all = f.List();
      if (!all.ok()) return all.status();
      if (ctx.json()) {
        json out = json::array();
        for (auto const& v : *all) out.push_back(InfoJson(v));
        ctx.out() << json{{"folders", out}, {"exit_code", 0}}.dump() << "\n";
        return Status();
      }
      if (all->empty()) {
        if (ctx.stdout_tty()) ctx.out() << "no folders\n";
        return Status();
      }
      std::vector<std::vector<std::string>> rows{
          {"NAME", "HOST", "PERMISSION", "OWNERSHIP", "STATUS", "USAGE", "ID"}};
      for (auto const& v : *all) {
        rows.push_back(
            {v.name, v.host, v.permission, v.ownership_type, v.status, v.usage_mode, v.id});
      }
      PrintTable(ctx, rows);
      return Status();
    });
  });
}

void AddInfo(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& one = set.Keep<std::string>();
  auto* info = noun.add_subcommand("info", "A folder's details");
  info->add_option("FOLDER", one, "Folder name or id")->required();
  set.OnRun(info, [&one, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto v = f.Info(one);
      if (!v.ok()) return v.status();
      auto j = InfoJson(*v);
      if (ctx.json()) {
        j["exit_code"] = 0;
        ctx.out() << j.dump() << "\n";
        return Status();
      }
      for (auto const& [k, val] : j.items()) {
        ctx.out() << k << ": " << (val.is_string() ? val.get<std::string>() : val.dump()) << "\n";
      }
      return Status();
    });
  });
}

void AddSetQuota(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  struct Args {
    std::string folder, size;
    std::int64_t files = 0;
  };
  auto& a = set.Keep<Args>();
  auto* cmd = noun.add_subcommand(
      "set-quota", "Set a folder's own quota (its owner or an admin; 0 or none: no quota)");
  cmd->add_option("FOLDER", a.folder, "Folder name or id")->required();
  cmd->add_option("SIZE", a.size, "At most this much, e.g. 10g; 0 or none: no limit")->required();
  cmd->add_option("--max-files", a.files, "At most this many files (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  set.OnRun(cmd, [&a, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto bytes = QuotaBytes(a.size);
      if (!bytes.ok()) return bytes.status();
      if (auto s = f.SetQuota(a.folder, *bytes, a.files); !s.ok()) return s;
      PrintDone(ctx, *bytes > 0
                         ? "quota of " + a.folder + ": " + HumanBytes(static_cast<double>(*bytes))
                         : "no quota on " + a.folder);
      return Status();
    });
  });
}

// A verb on one folder that answers nothing but success: rm, restore, purge.
void AddOneFolder(CommandSet& set, CLI::App& noun, char const* verb, char const* help,
                  char const* words, Status (VFolderClient::*call)(std::string const&) const) {
  auto& ctx = set.ctx();
  auto& name = set.Keep<std::string>();
  auto* cmd = noun.add_subcommand(verb, help);
  cmd->add_option("FOLDER", name, "Folder name or id")->required();
  set.OnRun(cmd, [&name, &ctx, call, words] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto s = (f.*call)(name);
      if (s.ok()) PrintDone(ctx, std::string(words) + " " + name);
      return s;
    });
  });
}

void AddRename(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& rename = set.Keep<Named>();
  auto* rn = noun.add_subcommand("rename", "Rename a folder");
  rn->add_option("FOLDER", rename.name, "Folder")->required();
  rn->add_option("NEW_NAME", rename.other, "New name")->required();
  set.OnRun(rn, [&rename, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto s = f.Rename(rename.name, rename.other);
      if (s.ok()) PrintDone(ctx, "renamed " + rename.name + " to " + rename.other);
      return s;
    });
  });
}

void AddMkdir(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& mk = set.Keep<PathsFlag>();
  auto* mkdir = noun.add_subcommand("mkdir", "Make directories in a folder (parents too)");
  mkdir->add_option("FOLDER", mk.folder, "Folder")->required();
  mkdir->add_option("PATHS", mk.paths, "Directories")->required();
  mkdir->add_flag("-p,--exist-ok", mk.flag, "No error when one exists");
  set.OnRun(mkdir, [&mk, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      for (auto const& p : mk.paths) {
        if (auto s = f.Mkdir(mk.folder, p, true, mk.flag); !s.ok()) return s;
      }
      PrintDone(ctx, "made " + std::to_string(mk.paths.size()) + " directories");
      return Status();
    });
  });
}

void AddRmFiles(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& rmf = set.Keep<PathsFlag>();
  auto* rmfiles = noun.add_subcommand("rm-files", "Delete files (and, with -r, directories)");
  rmfiles->add_option("FOLDER", rmf.folder, "Folder")->required();
  rmfiles->add_option("PATHS", rmf.paths, "Files and directories")->required();
  rmfiles->add_flag("-r,--recursive", rmf.flag, "Directories with everything in them");
  set.OnRun(rmfiles, [&rmf, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto s = f.DeleteFiles(rmf.folder, rmf.paths, rmf.flag);
      if (s.ok()) PrintDone(ctx, "deleted " + std::to_string(rmf.paths.size()) + " paths");
      return s;
    });
  });
}

void AddMove(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& mv = set.Keep<PathsFlag>();
  auto* mvc = noun.add_subcommand("mv", "Move or rename a file within a folder: FOLDER SRC DST");
  mvc->add_option("FOLDER", mv.folder, "Folder")->required();
  mvc->add_option("PATHS", mv.paths, "Source and destination")->required()->expected(2);
  set.OnRun(mvc, [&mv, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto s = f.Move(mv.folder, mv.paths[0], mv.paths[1]);
      if (s.ok()) PrintDone(ctx, "moved " + mv.paths[0] + " to " + mv.paths[1]);
      return s;
    });
  });
}

void AddFiles(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& listing = set.Keep<Named>();
  auto* files = noun.add_subcommand("files", "List a directory of a folder");
  files->alias("ls-files");
  files->add_option("FOLDER", listing.name, "Folder")->required();
  files->add_option("PATH", listing.other, "Directory (default: the folder's root)");
  set.OnRun(files, [&listing, &ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto list = f.Files(listing.name, listing.other);
      if (!list.ok()) return list.status();
      if (ctx.json()) {
        json out = json::array();
        for (auto const& e : *list) {
          out.push_back({{"name", e.name},
                         {"type", e.type},
                         {"size", e.size},
                         {"mode", e.mode},
                         {"modified", e.modified}});
        }
        ctx.out() << json{{"files", out}, {"exit_code", 0}}.dump() << "\n";
        return Status();
      }
      std::vector<std::vector<std::string>> rows{{"TYPE", "MODE", "SIZE", "MODIFIED", "NAME"}};
      for (auto const& e : *list) {
        rows.push_back({e.type, e.mode, std::to_string(e.size), e.modified.substr(0, 19), e.name});
      }
      PrintTable(ctx, rows);
      return Status();
    });
  });
}

void AddHosts(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto* hosts = noun.add_subcommand("hosts", "Storage hosts you may create folders on");
  set.OnRun(hosts, [&ctx] {
    return WithFolders(ctx, [&](VFolderClient& f) -> Status {
      auto h = f.Hosts();
      if (!h.ok()) return h.status();
      if (ctx.json()) {
        ctx.out()
            << json{{"default", h->default_host}, {"allowed", h->allowed}, {"exit_code", 0}}.dump()
            << "\n";
        return Status();
      }
      for (auto const& a : h->allowed) {
        ctx.out() << a << (a == h->default_host ? "  (default)" : "") << "\n";
      }
      return Status();
    });
  });
}

void AddUpload(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& up = set.Keep<Transfer>();
  auto* upload = noun.add_subcommand(
      "upload", "Upload files into a folder: FOLDER FILE… [--dst DIR]; resumes an interrupted one");
  upload->add_option("FOLDER", up.folder, "Folder")->required();
  upload->add_option("FILES", up.paths, "Local files (directories with -r)")->required();
  upload->add_option("--dst", up.flags.dst, "Directory in the folder (default: its root)");
  AddTransferFlags(upload, up.flags);
  set.OnRun(upload, [&up, &ctx] { return RunVFolderUpload(up.folder, up.paths, up.flags, ctx); });
}

void AddDownload(CommandSet& set, CLI::App& noun) {
  auto& ctx = set.ctx();
  auto& down = set.Keep<Transfer>();
  auto* download = noun.add_subcommand(
      "download", "Download files from a folder: FOLDER PATH… [--dst DIR]; resumes");
  download->add_option("FOLDER", down.folder, "Folder")->required();
  download->add_option("PATHS", down.paths, "Files in the folder (directories with -r)")
      ->required();
  download->add_option("--dst", down.flags.dst, "Local directory (default: .)");
  AddTransferFlags(download, down.flags);
  set.OnRun(download, [&down, &ctx] {
    return RunVFolderDownload(down.folder, down.paths, down.flags.dst, down.flags, ctx);
  });
}

// `bai cp`: a top-level verb, beside `bai session cp`.
void AddCp(CommandSet& set) {
  auto& ctx = set.ctx();
  auto& cp = set.Keep<Transfer>();
  auto* cpc = set.root().add_subcommand(
      "cp", "Copy between this machine and a folder: SRC… DST, one side VFOLDER:PATH");
  if (set.names_only()) return;
  cpc->add_option("PATHS", cp.paths, "Sources, then the destination")->required();
  AddTransferFlags(cpc, cp.flags);
  set.OnRun(cpc, [&cp, &ctx] { return RunCp(cp.paths, cp.flags, ctx); });
}

}  // namespace

void AddVFolderCommands(CommandSet& set) {
  auto* noun = set.root().add_subcommand("vfolder", "Virtual folders: create, list, move files");
  noun->alias("vf");
  if (set.names_only()) {
    AddCp(set);
    return;
  }
  noun->require_subcommand(1);
  AddCreate(set, *noun);
  AddList(set, *noun);
  AddInfo(set, *noun);
  AddSetQuota(set, *noun);
  AddOneFolder(set, *noun, "rm", "Move a folder to the trash", "trashed", &VFolderClient::Delete);
  AddOneFolder(set, *noun, "restore", "Bring a folder back from the trash", "restored",
               &VFolderClient::Restore);
  AddOneFolder(set, *noun, "purge",
               "Remove a folder in the trash for good (where the server has no trash: the folder)",
               "purged", &VFolderClient::Purge);
  AddRename(set, *noun);
  AddMkdir(set, *noun);
  AddRmFiles(set, *noun);
  AddMove(set, *noun);
  AddFiles(set, *noun);
  AddHosts(set, *noun);
  AddUpload(set, *noun);
  AddDownload(set, *noun);
  AddCp(set);
  AddVFolderSharingCommands(set, noun);
}

}  // namespace bai::cli
