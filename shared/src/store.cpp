// The store: one map of entries under a reader/writer lock, a reverse-dependency index so that
// replacing an input drops what was derived from it, LRU eviction of cache entries, in-flight
// deduplication of get_or_compute, and the two cycle checks (a computation that asks for its own
// key, an entry published with an input derived from it).
#include "fem/store.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <shared_mutex>

namespace fem {
namespace {

struct Entry {
  std::shared_ptr<const void> value;
  std::string type;
  Version version = 0;
  std::size_t bytes = 0;
  bool evictable = false;
  Residency residency = Residency::host;
  std::vector<Input> inputs;
  // Touched under the shared lock by concurrent readers.
  mutable std::atomic<std::uint64_t> last_use{0};
  mutable std::atomic<std::uint64_t> hits{0};
};

struct InFlight {
  std::string type;
  std::vector<Input> inputs;
  std::shared_future<std::shared_ptr<const void>> result;
};

// The get_or_compute computations running on this thread, innermost last. A computation that
// asks for a key on this stack (of the same store) would wait for its own future forever.
struct Computing {
  const void* store;
  std::string key;
};
thread_local std::vector<Computing> computing;

struct ComputingScope {
  ComputingScope(const void* store, std::string_view key) { computing.push_back({store, std::string(key)}); }
  ~ComputingScope() { computing.pop_back(); }
  ComputingScope(const ComputingScope&) = delete;
  ComputingScope& operator=(const ComputingScope&) = delete;
};

void throw_if_computing(const void* store, std::string_view key) {
  for (std::size_t i = 0; i < computing.size(); ++i) {
    if (computing[i].store != store || computing[i].key != key) continue;
    std::vector<std::string> cycle;
    for (std::size_t j = i; j < computing.size(); ++j)
      if (computing[j].store == store) cycle.push_back(computing[j].key);
    cycle.emplace_back(key);
    throw CycleError(std::move(cycle),
                     fmt::format("store key '{}' is asked for by its own computation (get_or_compute on the "
                                 "same thread): a dependency cycle",
                                 key));
  }
}

CycleError publish_cycle(std::string_view key, std::vector<std::string> cycle) {
  const std::string input = cycle.at(1);
  return CycleError(std::move(cycle),
                    fmt::format("store key '{}' cannot be derived from '{}', which is derived "
                                "from '{}': a dependency cycle",
                                key, input, key));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string printable(std::string_view key) {
  std::string out;
  for (char c : key.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  if (key.size() > 80) out += "...";
  return out;
}

}  // namespace

struct Store::Impl {
  mutable std::shared_mutex mutex;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> entries;
  // input key -> keys of the entries derived from it
  std::map<std::string, std::set<std::string>, std::less<>> dependents;
  std::size_t total_bytes = 0;
  std::size_t budget = unlimited;
  Version next_version = 1;

  mutable std::atomic<std::uint64_t> tick{0};
  mutable std::atomic<std::uint64_t> hits{0}, misses{0};
  std::atomic<std::uint64_t> puts{0}, replacements{0}, erases{0}, evictions{0}, invalidations{0}, computes{0};

  std::mutex inflight_mutex;
  std::map<std::string, std::vector<std::shared_ptr<InFlight>>, std::less<>> inflight;

  mutable std::mutex counters_mutex;
  std::map<std::string, std::int64_t, std::less<>> counters;

  enum class Why { erase, replace, evict, invalidate, clear };

  void touch(const Entry& e) const {
    e.last_use.store(tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    e.hits.fetch_add(1, std::memory_order_relaxed);
    hits.fetch_add(1, std::memory_order_relaxed);
  }

  std::vector<std::string> nearest_keys(std::string_view key) const {
    std::vector<std::pair<std::size_t, std::string>> scored;
    const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
    for (const auto& [k, e] : entries) {
      const bool contains = k.find(key) != std::string::npos || key.find(k) != std::string_view::npos;
      const std::size_t d = edit_distance(key, k);
      if (d <= limit || contains) scored.emplace_back(contains ? std::min(d, limit) : d, k);
    }
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scored.size() && i < 5; ++i) out.push_back(scored[i].second);
    return out;
  }

  // The cycle that publishing `key` with these inputs would close: `key`, then the input and the
  // entries it was (transitively) derived from, down to `key` again; empty when there is none.
  // A breadth-first walk down the inputs of the inputs (an entry's inputs never change).
  std::vector<std::string> cycle_through_locked(std::string_view key,
                                                const std::vector<Input>& inputs) const {
    if (inputs.empty() || dependents.find(key) == dependents.end()) return {};  // nothing derives from key
    std::map<std::string_view, std::string_view> parent;  // key -> the key that has it as an input
    std::vector<std::string_view> queue;
    for (const Input& in : inputs)
      if (parent.emplace(in.key, key).second) queue.push_back(in.key);
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const std::string_view k = queue[q];
      if (k == key) {
        std::vector<std::string> cycle{std::string(key)};
        std::string_view at = parent.at(k);
        for (; at != key; at = parent.at(at)) cycle.emplace_back(at);
        cycle.emplace_back(key);
        std::reverse(cycle.begin(), cycle.end());  // key, its input, ..., key
        return cycle;
      }
      auto it = entries.find(k);
      if (it == entries.end()) continue;
      for (const Input& in : it->second->inputs)
        if (parent.emplace(in.key, k).second) queue.push_back(in.key);
    }
    return {};
  }

  bool inputs_current(const std::vector<Input>& inputs) const {
    for (const Input& in : inputs) {
      auto it = entries.find(in.key);
      if (it == entries.end() || it->second->version != in.version) return false;
    }
    return true;
  }

  // Remove `key` and, transitively, every entry derived from it. Values go to `graveyard`, to be
  // released after the lock is dropped (a factorization's destructor can take a while).
  void remove_locked(const std::string& key, Why why, std::vector<std::shared_ptr<const void>>& graveyard) {
    auto it = entries.find(key);
    if (it == entries.end()) return;
    std::unique_ptr<Entry> entry = std::move(it->second);
    entries.erase(it);
    total_bytes -= entry->bytes;
    graveyard.push_back(std::move(entry->value));
    switch (why) {
      case Why::erase:
        erases.fetch_add(1, std::memory_order_relaxed);
        break;
      case Why::evict:
        evictions.fetch_add(1, std::memory_order_relaxed);
        break;
      case Why::invalidate:
        invalidations.fetch_add(1, std::memory_order_relaxed);
        break;
      case Why::replace:
      case Why::clear:
        break;
    }
    unlink_inputs(key, entry->inputs);
    drop_dependents(key, why == Why::evict ? Why::evict : Why::invalidate, graveyard);
  }

  void drop_dependents(const std::string& key, Why why, std::vector<std::shared_ptr<const void>>& graveyard) {
    auto dep = dependents.find(key);
    if (dep == dependents.end()) return;
    const std::set<std::string> derived = std::move(dep->second);
    dependents.erase(dep);
    for (const std::string& d : derived) remove_locked(d, why, graveyard);
  }

  void unlink_inputs(const std::string& key, const std::vector<Input>& inputs) {
    for (const Input& in : inputs) {
      auto dep = dependents.find(in.key);
      if (dep == dependents.end()) continue;
      dep->second.erase(key);
      if (dep->second.empty()) dependents.erase(dep);
    }
  }

  Version publish_locked(std::string_view key_view, std::shared_ptr<const void> value, std::string_view type,
                         std::size_t bytes, bool evictable, Residency residency, std::vector<Input> inputs,
                         std::vector<std::shared_ptr<const void>>& graveyard) {
    std::string key(key_view);
    auto it = entries.find(key);
    if (it != entries.end()) {
      // Replace in place: what was derived from the old value is now stale.
      Entry& e = *it->second;
      drop_dependents(key, Why::invalidate, graveyard);
      unlink_inputs(key, e.inputs);
      total_bytes -= e.bytes;
      graveyard.push_back(std::move(e.value));
      replacements.fetch_add(1, std::memory_order_relaxed);
    } else {
      it = entries.emplace(key, std::make_unique<Entry>()).first;
    }
    Entry& e = *it->second;
    e.value = std::move(value);
    e.type = std::string(type);
    e.version = next_version++;
    e.bytes = bytes;
    e.evictable = evictable;
    e.residency = residency;
    e.inputs = std::move(inputs);
    e.last_use.store(tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    e.hits.store(0, std::memory_order_relaxed);
    for (const Input& in : e.inputs) dependents[in.key].insert(key);
    total_bytes += bytes;
    puts.fetch_add(1, std::memory_order_relaxed);
    const Version v = e.version;
    enforce_budget_locked(key, graveyard);
    return v;
  }

  void enforce_budget_locked(const std::string& protect,
                             std::vector<std::shared_ptr<const void>>& graveyard) {
    while (total_bytes > budget) {
      const std::string* victim = nullptr;
      std::uint64_t oldest = ~std::uint64_t{0};
      for (const auto& [k, e] : entries) {
        if (!e->evictable || k == protect) continue;
        const std::uint64_t t = e->last_use.load(std::memory_order_relaxed);
        if (t < oldest) {
          oldest = t;
          victim = &k;
        }
      }
      if (victim == nullptr) return;  // only user data (or the new entry) left
      remove_locked(std::string(*victim), Why::evict, graveyard);
    }
  }
};

Store::Store(std::size_t byte_budget) : impl_(std::make_unique<Impl>()) { impl_->budget = byte_budget; }

Store::~Store() = default;

void Store::validate_key(std::string_view key) {
  if (key.empty()) throw InvalidKey(std::string(key), "a key must not be empty");
  if (key.size() > 512)
    throw InvalidKey(printable(key),
                     fmt::format("it is {} characters long, at most 512 are allowed", key.size()));
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c <= 0x20 || c >= 0x7f)
      throw InvalidKey(printable(key),
                       fmt::format("character {} at position {} is not allowed (keys are printable "
                                   "ASCII without spaces)",
                                   c == ' ' ? std::string("' '") : fmt::format("\\x{:02x}", c), i));
  }
}

namespace {
void validate_inputs(std::string_view key, const std::vector<Input>& inputs) {
  for (const Input& in : inputs) {
    Store::validate_key(in.key);
    FEM_EXPECTS(in.key != key, "store key '{}' cannot be derived from itself", key);
  }
}
}  // namespace

Version Store::put_erased(std::string_view key, std::shared_ptr<const void> value, std::string_view type,
                          PutOptions options) {
  validate_key(key);
  validate_inputs(key, options.inputs);
  std::vector<std::shared_ptr<const void>> graveyard;
  Version v;
  {
    std::unique_lock lock(impl_->mutex);
    for (const Input& in : options.inputs) {
      auto it = impl_->entries.find(in.key);
      if (it == impl_->entries.end()) throw KeyError(in.key, impl_->nearest_keys(in.key));
      FEM_EXPECTS(it->second->version == in.version,
                  "store key '{}': input '{}' is at version {}, not {}: the value would be stale", key,
                  in.key, it->second->version, in.version);
    }
    if (auto cycle = impl_->cycle_through_locked(key, options.inputs); !cycle.empty())
      throw publish_cycle(key, std::move(cycle));
    v = impl_->publish_locked(key, std::move(value), type, *options.bytes, options.evictable,
                              options.residency.value_or(Residency::host), std::move(options.inputs),
                              graveyard);
  }
  return v;  // graveyard released here, outside the lock
}

std::pair<std::shared_ptr<const void>, Version> Store::get_erased(std::string_view key, std::string_view type,
                                                                  bool required) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) {
    impl_->misses.fetch_add(1, std::memory_order_relaxed);
    if (required) throw KeyError(std::string(key), impl_->nearest_keys(key));
    return {nullptr, 0};
  }
  const Entry& e = *it->second;
  if (e.type != type) throw TypeError(std::string(key), std::string(type), e.type);
  impl_->touch(e);
  return {e.value, e.version};
}

std::shared_ptr<const void> Store::get_or_compute_erased(std::string_view key, std::string_view type,
                                                         std::vector<Input> inputs, bool evictable,
                                                         const std::function<Computed()>& compute) {
  validate_key(key);
  validate_inputs(key, inputs);
  Impl& s = *impl_;
  throw_if_computing(&s, key);

  auto cached = [&]() -> std::shared_ptr<const void> {
    std::shared_lock lock(s.mutex);
    auto it = s.entries.find(key);
    if (it == s.entries.end()) return nullptr;
    const Entry& e = *it->second;
    if (e.type != type) throw TypeError(std::string(key), std::string(type), e.type);
    if (e.inputs != inputs) return nullptr;
    s.touch(e);
    return e.value;
  };
  if (auto hit = cached()) return hit;
  {
    // A result that could never be published: fail before computing it.
    std::shared_lock lock(s.mutex);
    if (auto cycle = s.cycle_through_locked(key, inputs); !cycle.empty())
      throw publish_cycle(key, std::move(cycle));
  }

  std::promise<std::shared_ptr<const void>> promise;
  std::shared_ptr<InFlight> mine;
  {
    std::unique_lock lock(s.inflight_mutex);
    for (const auto& f : s.inflight[std::string(key)]) {
      if (f->type == type && f->inputs == inputs) {
        auto result = f->result;
        lock.unlock();
        auto value = result.get();  // rethrows the computing thread's exception
        s.hits.fetch_add(1, std::memory_order_relaxed);
        return value;
      }
    }
    if (auto hit = cached()) return hit;  // published while we waited for the lock
    mine = std::make_shared<InFlight>();
    mine->type = std::string(type);
    mine->inputs = inputs;
    mine->result = promise.get_future().share();
    s.inflight[std::string(key)].push_back(mine);
  }
  auto finish = [&] {
    std::lock_guard lock(s.inflight_mutex);
    auto& list = s.inflight[std::string(key)];
    list.erase(std::find(list.begin(), list.end(), mine));
    if (list.empty()) s.inflight.erase(std::string(key));
  };

  s.misses.fetch_add(1, std::memory_order_relaxed);
  Computed computed;
  try {
    const ComputingScope scope(&s, key);
    computed = compute();
  } catch (...) {
    promise.set_exception(std::current_exception());
    finish();
    throw;
  }
  s.computes.fetch_add(1, std::memory_order_relaxed);

  std::vector<std::shared_ptr<const void>> graveyard;
  std::vector<std::string> cycle;
  {
    std::unique_lock lock(s.mutex);
    auto it = s.entries.find(key);
    const bool type_clash = it != s.entries.end() && it->second->type != type;
    if (!type_clash && s.inputs_current(inputs)) {
      cycle = s.cycle_through_locked(key, inputs);  // checked above; the inputs' entries cannot have changed
      if (cycle.empty())
        s.publish_locked(key, computed.value, type, computed.bytes, evictable, computed.residency,
                         std::move(inputs), graveyard);
    }
  }
  if (!cycle.empty()) {
    const CycleError error = publish_cycle(key, std::move(cycle));
    promise.set_exception(std::make_exception_ptr(error));
    finish();
    throw error;
  }
  promise.set_value(computed.value);
  finish();
  return computed.value;
}

bool Store::holds(std::string_view key, const std::vector<Input>& inputs) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->entries.find(key);
  return it != impl_->entries.end() && it->second->inputs == inputs;
}

bool Store::contains(std::string_view key) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  return impl_->entries.find(key) != impl_->entries.end();
}

Version Store::version(std::string_view key) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) throw KeyError(std::string(key), impl_->nearest_keys(key));
  return it->second->version;
}

std::string Store::type_of(std::string_view key) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) throw KeyError(std::string(key), impl_->nearest_keys(key));
  return it->second->type;
}

EntryInfo Store::info(std::string_view key) const {
  validate_key(key);
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) throw KeyError(std::string(key), impl_->nearest_keys(key));
  const Entry& e = *it->second;
  return {
      it->first,  e.type, e.version, e.bytes, e.evictable, e.inputs, e.hits.load(std::memory_order_relaxed),
      e.residency};
}

bool Store::erase(std::string_view key) {
  validate_key(key);
  std::vector<std::shared_ptr<const void>> graveyard;
  std::unique_lock lock(impl_->mutex);
  if (impl_->entries.find(key) == impl_->entries.end()) return false;
  impl_->remove_locked(std::string(key), Impl::Why::erase, graveyard);
  lock.unlock();
  return true;
}

void Store::clear() {
  std::vector<std::shared_ptr<const void>> graveyard;
  std::unique_lock lock(impl_->mutex);
  for (auto& [k, e] : impl_->entries) graveyard.push_back(std::move(e->value));
  impl_->entries.clear();
  impl_->dependents.clear();
  impl_->total_bytes = 0;
  lock.unlock();
}

std::vector<EntryInfo> Store::list(std::string_view prefix) const {
  std::shared_lock lock(impl_->mutex);
  std::vector<EntryInfo> out;
  for (auto it = impl_->entries.lower_bound(prefix);
       it != impl_->entries.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    const Entry& e = *it->second;
    out.push_back({it->first, e.type, e.version, e.bytes, e.evictable, e.inputs,
                   e.hits.load(std::memory_order_relaxed), e.residency});
  }
  return out;
}

StoreStats Store::stats() const {
  StoreStats st;
  std::shared_lock lock(impl_->mutex);
  const Impl& s = *impl_;
  st.entries = s.entries.size();
  st.bytes = s.total_bytes;
  for (const auto& [k, e] : s.entries) {
    if (e->evictable) {
      ++st.evictable_entries;
      st.evictable_bytes += e->bytes;
    }
    if (e->residency == Residency::device) st.device_bytes += e->bytes;
  }
  st.byte_budget = s.budget;
  st.hits = s.hits.load();
  st.misses = s.misses.load();
  st.puts = s.puts.load();
  st.replacements = s.replacements.load();
  st.erases = s.erases.load();
  st.evictions = s.evictions.load();
  st.invalidations = s.invalidations.load();
  st.computes = s.computes.load();
  return st;
}

void Store::reset_stats() {
  Impl& s = *impl_;
  for (auto* c : {&s.puts, &s.replacements, &s.erases, &s.evictions, &s.invalidations, &s.computes})
    c->store(0);
  s.hits.store(0);
  s.misses.store(0);
  std::lock_guard lock(s.counters_mutex);
  s.counters.clear();
}

void Store::set_byte_budget(std::size_t bytes) {
  std::vector<std::shared_ptr<const void>> graveyard;
  std::unique_lock lock(impl_->mutex);
  impl_->budget = bytes;
  impl_->enforce_budget_locked({}, graveyard);
  lock.unlock();
}

std::size_t Store::byte_budget() const {
  std::shared_lock lock(impl_->mutex);
  return impl_->budget;
}

void Store::count(std::string_view name, std::int64_t delta) {
  std::lock_guard lock(impl_->counters_mutex);
  auto it = impl_->counters.find(name);
  if (it == impl_->counters.end()) it = impl_->counters.emplace(std::string(name), 0).first;
  it->second += delta;
}

std::int64_t Store::counter(std::string_view name) const {
  std::lock_guard lock(impl_->counters_mutex);
  auto it = impl_->counters.find(name);
  return it == impl_->counters.end() ? 0 : it->second;
}

std::map<std::string, std::int64_t> Store::counters() const {
  std::lock_guard lock(impl_->counters_mutex);
  return {impl_->counters.begin(), impl_->counters.end()};
}

Store& store() {
  // Never destroyed: values may have deleters in kernel libraries (or CUDA resources) that are
  // gone by the time static destructors run. The OS reclaims the memory at exit.
  static Store* const instance = new Store();
  return *instance;
}

}  // namespace fem
