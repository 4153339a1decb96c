// SPDX-License-Identifier: Apache-2.0
#include "server-reference/webserver/webserver_impl.h"

namespace bai::webserver {

namespace {

std::string ContentTypeOf(std::string const& path) {
  auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext == "html") return "text/html; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "json" || ext == "map") return "application/json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  if (ext == "woff2") return "font/woff2";
  if (ext == "txt") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

// The page served when the console has not been built.
constexpr char kNotBuiltPage[] =
    "<!doctype html><meta charset=utf-8><title>bai console</title>"
    "<p>The console is not built. Run <code>make build</code> (it builds the console with npm) "
    "and restart bai-webserver with <code>--static-dir build/console</code>.</p>";

}  // namespace

// ---- the console's files ------------------------------------------------------------------

void WebServer::Impl::StaticFile(std::shared_ptr<Exchange> const& ex) {
  auto const& req = ex->request();
  auto decoded = server::PercentDecode(req.path);
  std::string path = decoded.value_or("");
  bool bad = path.empty() || path.front() != '/' || path.find("..") != std::string::npos ||
             path.find('\0') != std::string::npos;
  if (bad) return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
  if (options.static_dir.empty() ||
      ::access((options.static_dir + "/index.html").c_str(), R_OK) != 0) {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = kNotBuiltPage;
    return Answer(ex, std::move(r));
  }
  std::string file = path == "/" ? "/index.html" : path;
  std::string full = options.static_dir + file;
  struct stat st {};
  bool exists = ::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (!exists) {
    // A route of the single-page app (/sessions/…): its page; a missing asset: 404.
    if (file.find('.') != std::string::npos) {
      return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file: " + path));
    }
    file = "/index.html";
    full = options.static_dir + file;
    if (::stat(full.c_str(), &st) != 0) {
      return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
    }
  }
  if (file == "/index.html") return Page(ex, full);
  int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Answer(ex, Problem(ps::ProblemType::kUrlNotFound, "No such file."));
  HttpResponse r;
  r.content_type = ContentTypeOf(file);
  r.file = std::make_shared<server::FileBody>(fd, 0, static_cast<std::int64_t>(st.st_size));
  // Built assets carry a hash in their names; the page itself must be fetched again.
  r.headers.emplace_back("Cache-Control", file.rfind("/assets/", 0) == 0
                                              ? "public, max-age=31536000, immutable"
                                              : "no-cache");
  Answer(ex, std::move(r));
}

void WebServer::Impl::Page(std::shared_ptr<Exchange> const& ex, std::string const& full) {
  std::ifstream in(full, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string page = text.str();
  std::string nonce = LoginSessions::RandomToken(18);
  for (auto at = page.find("%NONCE%"); at != std::string::npos; at = page.find("%NONCE%")) {
    page.replace(at, 7, nonce);
  }
  // The storage proxies the page may send uploads to itself (in its policy and its markup).
  auto origins = StorageOrigins();
  std::string listed;
  for (auto const& o : origins) listed += (listed.empty() ? "" : " ") + o;
  for (auto at = page.find("%STORAGE_ORIGINS%"); at != std::string::npos;
       at = page.find("%STORAGE_ORIGINS%")) {
    page.replace(at, 17, listed);
  }
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::move(page);
  r.headers.emplace_back("Cache-Control", "no-store");
  Answer(ex, std::move(r), nonce, origins);
}

}  // namespace bai::webserver
