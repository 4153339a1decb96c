// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/events.h"

#include "bai/protocol/session_wire.h"

#include <nlohmann/json.hpp>

#include <map>

namespace bai::manager {

using nlohmann::json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);
constexpr auto kPingEvery = std::chrono::seconds(15);

// Past the start: running, or already ended.
bool Started(protocol::SessionStatus status) {
  using S = protocol::SessionStatus;
  return status != S::kPending && status != S::kScheduled && status != S::kPreparing &&
         status != S::kPulling;
}

}  // namespace

std::vector<std::size_t> EventCursor::Take(std::vector<std::int64_t> const& seqs,
                                           std::chrono::steady_clock::time_point now) {
  std::vector<std::size_t> fresh;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i] > floor_ && above_.insert(seqs[i]).second) fresh.push_back(i);
  }
  // Up over what was handed out; a hole waits for its transaction, then is given up on.
  while (!above_.empty()) {
    std::int64_t next = floor_ + 1;
    if (*above_.begin() == next) {
      above_.erase(above_.begin());
      missing_since_.erase(next);
      floor_ = next;
      continue;
    }
    auto [it, added] = missing_since_.emplace(next, now);
    if (now - it->second < gap_wait_) break;
    missing_since_.erase(it);
    floor_ = next;
  }
  return fresh;
}

EventHub::EventHub(SessionStore& sessions, BackgroundTaskStore& tasks)
    : sessions_(sessions), tasks_(tasks) {}

EventHub::~EventHub() { Stop(); }

void EventHub::Start() {
  auto last = sessions_.LastEventSeq();
  cursor_ = EventCursor(last.ok() ? *last : 0);
  next_ping_ = std::chrono::steady_clock::now() + kPingEvery;
  thread_ = std::thread([this] { Loop(); });
}

void EventHub::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : streams_) s.exchange->EndEventStream();
  streams_.clear();
  for (auto& t : task_streams_) t.exchange->EndEventStream();
  task_streams_.clear();
  waiters_.clear();
}

void EventHub::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void EventHub::Subscribe(std::shared_ptr<server::Exchange> exchange,
                         std::function<bool(EventRecord const&)> filter) {
  // A client that hangs up leaves at once, not at the next write.
  exchange->OnClose([this, raw = exchange.get()] {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.remove_if([raw](Stream const& s) { return s.exchange.get() == raw; });
  });
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back({std::move(exchange), std::move(filter)});
}

std::string EventHub::TaskEvent(BackgroundTask const& task) {
  if (!task.Finished()) {
    // Clients reconnect after 5 s if the stream drops mid-task (as Backend.AI sends it).
    return "event: bgtask_updated\r\ndata: " + task.EventData() + "\r\nretry: 5\r\n\r\n";
  }
  return "event: bgtask_" + std::string(protocol::ToString(task.status)) +
         "\r\ndata: " + task.EventData() + "\r\n\r\nevent: server_close\r\ndata: {}\r\n\r\n";
}

void EventHub::FollowTask(std::shared_ptr<server::Exchange> exchange, BackgroundTask const& task) {
  exchange->WriteEvent(TaskEvent(task));
  if (task.Finished()) {
    exchange->EndEventStream();
    return;
  }
  exchange->OnClose([this, raw = exchange.get()] {
    std::lock_guard<std::mutex> lock(mu_);
    task_streams_.remove_if([raw](TaskStream const& s) { return s.exchange.get() == raw; });
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_streams_.push_back({std::move(exchange), task.id, task.version});
  }
  Wake();
}

void EventHub::WaitForStart(std::string session_id,
                            std::optional<std::chrono::steady_clock::time_point> deadline,
                            std::shared_ptr<server::Exchange> exchange,
                            std::function<void(std::string const&)> done) {
  auto gone = std::make_shared<bool>(false);
  exchange->OnClose([this, gone] {
    std::lock_guard<std::mutex> lock(mu_);
    *gone = true;
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_.push_back(
        {std::move(session_id), deadline, std::move(exchange), std::move(done), gone});
  }
  Wake();
}

std::size_t EventHub::StreamCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

void EventHub::Every(std::chrono::milliseconds interval, std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back({interval, std::move(job), std::chrono::steady_clock::now() + interval});
}

std::string EventHub::EventData(EventRecord const& e) {
  protocol::SessionEventData data;
  data.session_id = e.session_id;
  data.session_name = e.session_name;
  data.owner_access_key = e.access_key;
  data.kernel_id = e.kernel_id;
  data.reason = e.reason;
  data.exit_code = e.exit_code;
  return protocol::EncodeSessionEventData(data);
}

void EventHub::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kPoll, [this] { return stop_ || woken_; });
    if (stop_) break;
    woken_ = false;
    lock.unlock();
    Tick();
    lock.lock();
  }
}

void EventHub::Watch(std::function<void(EventRecord const&)> watcher) {
  watchers_.push_back(std::move(watcher));
}

void EventHub::Tick() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::function<void()>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& j : jobs_) {
      if (now >= j.next) {
        j.next = now + j.interval;
        due.push_back(j.run);
      }
    }
  }
  for (auto& run : due) run();

  TickTasks();

  auto read = sessions_.EventsAfter(cursor_.floor(), 1000);
  if (!read.ok()) return;
  std::vector<std::int64_t> seqs;
  for (auto const& e : *read) seqs.push_back(e.seq);
  std::vector<EventRecord> events;
  for (auto i : cursor_.Take(seqs, now)) events.push_back(std::move((*read)[i]));
  for (auto const& e : events) {
    for (auto const& watch : watchers_) watch(e);
  }
  std::vector<Waiter> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto const& e : events) {
      std::string chunk = "event: " + e.name + "\r\ndata: " + EventData(e) + "\r\n\r\n";
      for (auto it = streams_.begin(); it != streams_.end();) {
        if (it->filter(e) && !it->exchange->WriteEvent(chunk)) {
          it = streams_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (now >= next_ping_) {
      next_ping_ = now + kPingEvery;
      // Both kinds of stream; a stream whose client has gone is dropped.
      auto ping = [](auto& streams) {
        for (auto it = streams.begin(); it != streams.end();) {
          it = it->exchange->WriteEvent(": ping\r\n\r\n") ? std::next(it) : streams.erase(it);
        }
      };
      ping(streams_);
      ping(task_streams_);
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (*it->gone) {
        it = waiters_.erase(it);
        continue;
      }
      ready.push_back(*it);
      ++it;
    }
  }
  // Status checks outside the lock: a database read per waiting request per tick is cheap, and
  // also catches changes made by other managers.
  std::vector<std::pair<Waiter, std::string>> answered;
  for (auto& w : ready) {
    auto s = sessions_.Get(w.session_id);
    if (!s.ok()) continue;
    auto status = *s ? (*s)->status : protocol::SessionStatus::kCancelled;
    if (Started(status)) {
      answered.emplace_back(w, std::string(protocol::ToString(status)));
    } else if (w.deadline && now >= *w.deadline) {
      answered.emplace_back(w, "TIMEOUT");
    }
  }
  if (answered.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto const& [w, status] : answered) {
      waiters_.remove_if([&](Waiter const& x) { return x.gone == w.gone; });
    }
  }
  for (auto& [w, status] : answered) w.done(status);
}

// One read per followed task per tick (every 100 ms, or at once on Wake()), and none without
// followers; the database is the source, so tasks advanced by other managers arrive too.
void EventHub::TickTasks() {
  std::vector<std::pair<std::string, std::int64_t>> followed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto const& t : task_streams_) followed.emplace_back(t.task_id, t.version);
  }
  if (followed.empty()) return;
  std::map<std::string, std::optional<BackgroundTask>> now;
  for (auto const& [id, version] : followed) {
    if (now.count(id) != 0) continue;
    auto t = tasks_.Get(id);
    if (t.ok()) now[id] = *std::move(t);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = task_streams_.begin(); it != task_streams_.end();) {
    auto found = now.find(it->task_id);
    if (found == now.end()) {  // the read failed: try again next tick
      ++it;
      continue;
    }
    if (!found->second) {  // expired or deleted meanwhile: nothing more will come
      it->exchange->WriteEvent("event: server_close\r\ndata: {}\r\n\r\n");
      it->exchange->EndEventStream();
      it = task_streams_.erase(it);
      continue;
    }
    auto const& task = *found->second;
    if (task.version == it->version) {
      ++it;
      continue;
    }
    it->version = task.version;
    bool alive = it->exchange->WriteEvent(TaskEvent(task));
    if (task.Finished() || !alive) {
      it->exchange->EndEventStream();
      it = task_streams_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace bai::manager
