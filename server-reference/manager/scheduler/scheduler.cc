// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/scheduler/scheduler.h"

#include "server-reference/common/wire/image_ref.h"

#include <algorithm>
#include <set>

namespace bai::manager::scheduler {
namespace {

Decimal Get(ResourceSlots const& slots, std::string const& name) {
  auto it = slots.find(name);
  return it == slots.end() ? Decimal() : it->second;
}

// True when every requested amount fits in capacity - occupied.
bool Fits(ResourceSlots const& requested, ResourceSlots const& capacity,
          ResourceSlots const& occupied) {
  for (auto const& [slot, amount] : requested) {
    if (amount.is_zero()) continue;
    auto free = Get(capacity, slot).Sub(Get(occupied, slot));
    if (!free || *free < amount) return false;
  }
  return true;
}

ResourceSlots FreeOf(Agent const& a) {
  ResourceSlots free;
  for (auto const& [slot, cap] : a.capacity) {
    auto f = cap.Sub(Get(a.occupied, slot));
    free[slot] = f ? *f : Decimal();
  }
  return free;
}

}  // namespace

namespace {

bool Listed(Agent const& a, Session const& s) {
  return s.agent_list.empty() ||
         std::find(s.agent_list.begin(), s.agent_list.end(), a.id) != s.agent_list.end();
}

// Whether `a` may run `s` at all, room aside.
bool Eligible(Agent const& a, Session const& s) {
  return a.schedulable && a.architecture == s.architecture && Listed(a, s) &&
         (s.pullable || OffersImage(a.images, s.image));
}

// How much of the session's request is free on the agent: per slot asked for, the share free
// (at most 1), summed.
double FreeScore(Agent const& a, Session const& s) {
  double score = 0;
  for (auto const& [slot, amount] : s.requested) {
    if (amount.is_zero()) continue;
    double ratio = Get(FreeOf(a), slot).ToDouble() / std::max(amount.ToDouble(), 1e-9);
    score += std::min(ratio, 1.0);
  }
  return score;
}

// The agent with the most free room for the session's slots: named in the waiting message.
Agent const* LargestFree(std::vector<Agent> const& agents, Session const& s) {
  Agent const* best = nullptr;
  double best_score = -1;
  for (auto const& a : agents) {
    if (!Eligible(a, s)) continue;
    double score = FreeScore(a, s);
    if (score > best_score) {
      best_score = score;
      best = &a;
    }
  }
  return best;
}

// Why `requested` would pass `whose` limit (slots absent from it: unlimited unless
// `unspecified_unlimited` is false), or nullopt.
std::optional<std::string> SlotLimitBlock(std::string const& whose, ResourceSlots const& limits,
                                          bool unspecified_unlimited, ResourceSlots const& occupied,
                                          ResourceSlots const& requested) {
  for (auto const& [slot, amount] : requested) {
    if (amount.is_zero()) continue;
    auto limit_it = limits.find(slot);
    Decimal limit = limit_it != limits.end()
                        ? limit_it->second
                        : (unspecified_unlimited ? Decimal::Unlimited() : Decimal());
    auto after = Get(occupied, slot).Add(amount);
    if (!after || *after > limit) {
      ResourceSlots one{{slot, limit}};
      ResourceSlots used{{slot, Get(occupied, slot)}};
      return "waiting: " + whose + " limit " + DescribeSlots(one) + " (using " +
             DescribeSlots(used) + ", needs " + DescribeSlots({{slot, amount}}) + " more)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> KeypairBlock(Session const& s, Keypair const& k) {
  if (k.max_concurrent_sessions > 0 && k.active_sessions >= k.max_concurrent_sessions) {
    return "waiting: the keypair already runs " + std::to_string(k.active_sessions) +
           " sessions (limit " + std::to_string(k.max_concurrent_sessions) + ")";
  }
  return SlotLimitBlock("keypair", k.total_resource_slots, k.unspecified_unlimited, k.occupied,
                        s.requested);
}

std::string Joined(std::vector<std::string> const& items) {
  std::string out;
  for (auto const& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Why `s` found no agent in this pass, in words; `starving` is set when its wait has reached
// the head guarantee although it could fit.
// `could_fit`: the room exists in the group, just not free now (the head guarantee may hold an
// agent for it once it has waited long enough).
std::string WhyWaiting(std::vector<Agent> const& agents, Session const& s, bool& could_fit) {
  // The room of every agent that could ever take it decides whether it could ever fit.
  bool any_agent = false;
  ResourceSlots total;
  for (auto const& a : agents) {
    if (!a.schedulable || a.architecture != s.architecture || !Listed(a, s)) continue;
    any_agent = true;
    AddInto(total, a.capacity);
  }
  if (!any_agent) {
    if (!s.agent_list.empty()) {
      return "waiting: none of the requested agents (" + Joined(s.agent_list) +
             ") is alive and schedulable in the resource group";
    }
    return "waiting: no schedulable " + s.architecture + " agent in the resource group";
  }
  bool offered =
      std::any_of(agents.begin(), agents.end(), [&](Agent const& a) { return Eligible(a, s); });
  if (!offered) return "waiting: no agent in the resource group offers image " + s.image;
  if (!Fits(s.requested, total, ResourceSlots{})) {
    return "waiting: needs " + DescribeSlots(s.requested) + ", more than " +
           (s.agent_list.empty() ? "all agents of the resource group"
                                 : "the requested agents (" + Joined(s.agent_list) + ")") +
           " have together (" + DescribeSlots(total) + ")";
  }
  Agent const* best = LargestFree(agents, s);
  ResourceSlots free;
  if (best) {
    for (auto const& [slot, amount] : s.requested) free[slot] = Get(FreeOf(*best), slot);
  }
  could_fit = true;
  return "waiting: needs " + DescribeSlots(s.requested) + "; largest free agent has " +
         DescribeSlots(free);
}

// What decides how the agents look to a session, room aside: the slots it asks for, its
// architecture and image, the agents it names.
std::string ShapeOf(Session const& s) {
  std::string key;
  for (auto const& [slot, amount] : s.requested) key += slot + "=" + amount.ToString() + ";";
  key += "|" + s.architecture + "|" + s.image + "|";
  for (auto const& id : s.agent_list) key += id + ",";
  return key;
}

// An agent held for a starving session: what the session needs, and what was placed there since
// the hold began (it must leave the session that room; the rest of the agent drains).
struct Hold {
  std::string session_id;
  ResourceSlots needs;
  ResourceSlots backfill;
  std::vector<Device> backfill_devices;  // the agent's devices with only the backfill on them
};

Hold HoldOn(Agent const& a, Session const& s, std::chrono::system_clock::time_point since) {
  Hold h;
  h.session_id = s.id;
  h.needs = s.requested;
  h.backfill_devices = a.devices;
  for (auto& d : h.backfill_devices) d.used = Decimal();
  for (auto const& p : a.placed) {
    if (p.scheduled_at < since) continue;
    AddInto(h.backfill, p.slots);
    Occupy(h.backfill_devices, p.devices);
  }
  return h;
}

// Whether the held session still fits `a` once the sessions there before the hold have ended,
// with `more` (placed on `devices`) started beside the backfill.
bool HeadFits(Hold const& h, Agent const& a, ResourceSlots const& more,
              std::vector<DeviceAllocation> const& devices) {
  ResourceSlots kept = h.backfill;
  AddInto(kept, more);
  if (!Fits(h.needs, a.capacity, kept)) return false;
  if (a.devices.empty()) return true;
  std::vector<Device> after = h.backfill_devices;
  Occupy(after, devices);
  return PlaceDevices(after, h.needs, a.device_policy).has_value();
}

}  // namespace

std::string WhyNeverFits(std::vector<ResourceSlots> const& capacities,
                         ResourceSlots const& requested, bool unoffered_ok) {
  if (capacities.empty()) return "";
  ResourceSlots total;
  for (auto const& c : capacities) AddInto(total, c);
  ResourceSlots wanted;  // the slots that count: asked for, and offered somewhere
  for (auto const& [slot, amount] : requested) {
    if (amount.is_zero()) continue;
    auto it = total.find(slot);
    if (it == total.end() || it->second.is_zero()) {
      if (unoffered_ok) continue;
      return "No agent of the resource group offers " + slot + ".";
    }
    wanted[slot] = amount;
  }
  for (auto const& c : capacities) {
    bool fits = true;
    for (auto const& [slot, amount] : wanted) {
      auto it = c.find(slot);
      if (it == c.end() || it->second < amount) fits = false;
    }
    if (fits) return "";
  }
  ResourceSlots largest;  // per slot, the most any one agent has
  for (auto const& c : capacities) {
    for (auto const& [slot, amount] : c) {
      if (!largest.count(slot) || largest[slot] < amount) largest[slot] = amount;
    }
  }
  ResourceSlots shown_total, shown_largest;
  for (auto const& [slot, amount] : wanted) {
    shown_total[slot] = total[slot];
    shown_largest[slot] = largest.count(slot) ? largest[slot] : Decimal();
  }
  return "The request (" + DescribeSlots(wanted) +
         ") is larger than any agent of the resource group holds: the group has " +
         DescribeSlots(shown_total) + " in all, its largest agent " + DescribeSlots(shown_largest) +
         ".";
}

std::string DescribeSlots(ResourceSlots const& slots) {
  std::string out;
  for (auto const& [slot, amount] : slots) {
    std::string text = amount.ToString();
    if (protocol::KnownSlotType(slot) == protocol::SlotType::kBytes && !amount.is_unlimited() &&
        !amount.is_zero()) {
      static constexpr char kUnits[] = "kmgtpe";
      protocol::Int128 units = amount.units() / Decimal::kUnitsPerOne;
      int power = 0;
      while (power < 6 && units % 1024 == 0 && units != 0) {
        units /= 1024;
        ++power;
      }
      if (power > 0 && amount.units() % Decimal::kUnitsPerOne == 0) {
        text = Decimal::FromUnits(units * Decimal::kUnitsPerOne)->ToString() + kUnits[power - 1];
      }
    }
    out += (out.empty() ? "" : " ") + slot + "=" + text;
  }
  return out.empty() ? "nothing" : out;
}

std::string WhyRefused(AdmissionLimits const& limits, PendingUsage const& pending,
                       std::int64_t cluster_size, ResourceSlots const& requested) {
  if (limits.max_containers_per_session > 0 && cluster_size > limits.max_containers_per_session) {
    return "You cannot create session with more than " +
           std::to_string(limits.max_containers_per_session) +
           " containers (the keypair's max_containers_per_session).";
  }
  if (limits.max_pending_session_count && pending.sessions >= *limits.max_pending_session_count) {
    return "You cannot create more than " + std::to_string(*limits.max_pending_session_count) +
           " pending session(s) (the keypair's max_pending_session_count; " +
           std::to_string(pending.sessions) + " wait now).";
  }
  if (limits.max_pending_session_resource_slots &&
      !limits.max_pending_session_resource_slots->empty()) {
    if (auto block = SlotLimitBlock("pending", *limits.max_pending_session_resource_slots, true,
                                    pending.slots, requested)) {
      return "Your pending session quota is exceeded: the keypair's "
             "max_pending_session_resource_slots " +
             DescribeSlots(*limits.max_pending_session_resource_slots) +
             " (waiting now: " + DescribeSlots(pending.slots) + ").";
    }
  }
  return "";
}

std::string WhyExpired(LiveSession const& s, std::chrono::system_clock::time_point now) {
  using std::chrono::seconds;
  if (s.max_session_lifetime > 0 && now - s.running_since >= seconds(s.max_session_lifetime)) {
    return "max-session-lifetime";
  }
  if (s.idle_timeout > 0 && !s.batch) {
    auto last = std::max(s.running_since, s.last_activity.value_or(s.running_since));
    if (now - last >= seconds(s.idle_timeout)) return "idle-timeout";
  }
  return "";
}

std::vector<Decision> Schedule(Input const& input) {
  std::vector<Agent> agents = input.agents;
  std::map<std::string, Keypair> keypairs = input.keypairs;
  std::map<std::string, Scope> domains = input.domains;
  std::map<std::string, Scope> projects = input.projects;
  std::vector<Session const*> order;
  for (auto const& s : input.pending) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](Session const* a, Session const* b) {
    return a->enqueue_seq < b->enqueue_seq;
  });

  // The head guarantee: a session that has waited `max_head_wait` while it could fit holds one
  // agent that can take it. What it needs stays reserved there beside the sessions placed since
  // the hold began (the backfill), so it starts as soon as the sessions that were there before
  // end; a later session starts there only if it leaves that room. Later sessions still start
  // on the other agents (they cannot delay it there).
  std::map<std::string, Hold> held;             // agent id -> the hold on it
  std::vector<char> is_held(agents.size(), 0);  // by position in `agents`
  std::set<std::string> held_sessions;          // the sessions held for
  // Sessions of one shape (the slots asked for, architecture, image, agents named) see the agents
  // alike: while no agent has changed (a placement, a hold) since one of them found no room, the
  // next finds none either, for the same reason, without another walk over every agent. A long
  // queue behind a full resource group (6,000 waiting x 1,000 agents) cost seconds a pass.
  std::uint64_t agents_version = 0;
  struct NoRoom {
    std::uint64_t version = 0;
    bool fragmented = false;
    std::string held_away;
    std::string why;         // WhyWaiting's text, when neither of the above
    bool could_fit = false;  // WhyWaiting's could_fit
    bool no_hold = false;    // hold_for found no agent to hold (at this version)
  };
  std::map<std::string, NoRoom> no_room;  // by ShapeOf
  auto hold_for = [&](Session const& s) -> std::string {
    auto since = s.enqueued_at + input.max_head_wait;
    std::string best;
    bool best_keeps = false;  // the session fits beside the agent's backfill so far
    double best_score = -1;
    std::size_t best_at = 0;
    for (std::size_t i = 0; i < agents.size(); ++i) {
      auto const& a = agents[i];
      if (is_held[i] || !Eligible(a, s) || !Fits(s.requested, a.capacity, {})) continue;
      Hold h = HoldOn(a, s, since);
      bool keeps = HeadFits(h, a, {}, {});
      double score = FreeScore(a, s);
      if ((keeps && !best_keeps) || (keeps == best_keeps && score > best_score)) {
        best_keeps = keeps;
        best_score = score;
        best = a.id;
        best_at = i;
      }
    }
    if (!best.empty()) {
      held[best] = HoldOn(agents[best_at], s, since);
      is_held[best_at] = 1;
      held_sessions.insert(s.id);
      ++agents_version;
    }
    return best;
  };
  std::string const guarantee =
      "the head guarantee after " + std::to_string(input.max_head_wait.count()) + " s";

  std::vector<Decision> decisions;
  for (Session const* s : order) {
    Decision d;
    d.session_id = s->id;
    if (!s->ready) {
      d.status_info = s->not_ready_reason;
      decisions.push_back(std::move(d));
      continue;
    }
    auto kp = keypairs.find(s->access_key);
    auto domain = domains.find(s->domain_name);
    auto project = projects.find(s->group_id);
    std::optional<std::string> block;
    if (kp != keypairs.end()) block = KeypairBlock(*s, kp->second);
    if (!block && domain != domains.end()) {
      block = SlotLimitBlock("domain " + s->domain_name, domain->second.limit, true,
                             domain->second.occupied, s->requested);
    }
    if (!block && project != projects.end()) {
      block = SlotLimitBlock("project", project->second.limit, true, project->second.occupied,
                             s->requested);
    }
    if (block) {
      d.status_info = *block;
      decisions.push_back(std::move(d));
      continue;
    }
    Agent* chosen = nullptr;
    bool fragmented = false;  // some agent had the room in total, but not on its GPUs
    std::string held_away;    // an agent that would fit, held for an older session
    std::string const shape = ShapeOf(*s);
    // A session an agent is held for sees that agent differently from its shape's others.
    bool held_for_it = held_sessions.count(s->id) != 0;
    auto memo = no_room.find(shape);
    bool const reuse =
        !held_for_it && memo != no_room.end() && memo->second.version == agents_version;
    if (reuse) {
      fragmented = memo->second.fragmented;
      held_away = memo->second.held_away;
    }
    for (auto& a : agents) {
      if (reuse) break;
      if (!Eligible(a, *s) || !Fits(s->requested, a.capacity, a.occupied)) continue;
      std::vector<DeviceAllocation> placed;
      if (!a.devices.empty()) {
        auto where = PlaceDevices(a.devices, s->requested, a.device_policy);
        if (!where) {
          fragmented = true;
          continue;
        }
        placed = *where;
      }
      if (auto h = held.find(a.id); h != held.end() && h->second.session_id != s->id) {
        if (!HeadFits(h->second, a, s->requested, placed)) {
          if (held_away.empty()) held_away = a.id + " (held for " + h->second.session_id + ")";
          continue;
        }
        AddInto(h->second.backfill, s->requested);
        Occupy(h->second.backfill_devices, placed);
      }
      Occupy(a.devices, placed);
      d.devices = std::move(placed);
      chosen = &a;
      break;
    }
    bool starving = input.now - s->enqueued_at >= input.max_head_wait;
    // hold_for, unless it already found no agent for this shape since the agents last changed
    // (whether one exists depends on the shape and the agents, not on the session).
    auto try_hold = [&]() -> std::string {
      bool cached = memo != no_room.end() && !held_for_it && memo->second.version == agents_version;
      if (cached && memo->second.no_hold) return "";
      auto agent = hold_for(*s);
      if (cached && agent.empty()) memo->second.no_hold = true;
      return agent;
    };
    if (!chosen && !reuse && !held_for_it) {
      auto& m = no_room[shape];
      m = NoRoom{agents_version, fragmented, held_away, "", false};
      if (held_away.empty() && !fragmented) m.why = WhyWaiting(agents, *s, m.could_fit);
      memo = no_room.find(shape);
    }
    if (chosen) {
      ++agents_version;
      AddInto(chosen->occupied, s->requested);
      if (kp != keypairs.end()) {
        kp->second.active_sessions += 1;
        AddInto(kp->second.occupied, s->requested);
      }
      if (domain != domains.end()) AddInto(domain->second.occupied, s->requested);
      if (project != projects.end()) AddInto(project->second.occupied, s->requested);
      d.agent_id = chosen->id;
    } else if (!held_away.empty()) {
      d.status_info = "waiting: needs " + DescribeSlots(s->requested) + "; agent " + held_away +
                      ", an older session past " + guarantee +
                      ", is the one with room and it would take "
                      "the room reserved there";
    } else if (fragmented) {
      d.status_info =
          "waiting: needs " + DescribeSlots(s->requested) +
          "; the agents have that much GPU in total but not free on their individual devices";
      if (starving) {
        if (auto agent = try_hold(); !agent.empty()) {
          d.status_info += "; agent " + agent + " is held for it (" + guarantee + ")";
        }
      }
    } else {
      // Could fit an agent, and waited past the guarantee.
      bool could_fit = false;
      if (memo != no_room.end() && !held_for_it) {
        d.status_info = memo->second.why;
        could_fit = memo->second.could_fit;
      } else {
        d.status_info = WhyWaiting(agents, *s, could_fit);
      }
      if (could_fit && starving) {
        if (auto agent = try_hold(); !agent.empty()) {
          d.status_info += "; agent " + agent + " is held for it (" + guarantee +
                           "): its room is reserved there, only what leaves that room starts "
                           "there";
        }
      }
    }
    decisions.push_back(std::move(d));
  }
  return decisions;
}

}  // namespace bai::manager::scheduler
