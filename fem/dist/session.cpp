// MPI and PETSc life cycle, cross-process agreement on errors, and collective clean-up.
#include "fem/dist/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "fem/dist/detail/petsc.hpp"

namespace fem::dist {
namespace {

std::atomic<int> live_sessions{0};
// What the first Session started (and the last one finishes): never what the caller started.
bool petsc_started_here = false, mpi_started_here = false;
// The thread that called MPI_Init_thread: the only one that may call PETSc (MPI_THREAD_FUNNELED).
std::thread::id main_thread;

// PETSc objects released on another thread (the last holder of a store value was a worker):
// handed to PETSc's garbage list on the main thread, at the next collect_garbage().
std::mutex pending_mutex;
std::vector<PetscObject>& pending() {
  static auto* objects = new std::vector<PetscObject>();  // never destroyed
  return *objects;
}
void drain_pending() {
  std::vector<PetscObject> objects;
  {
    std::lock_guard lock(pending_mutex);
    objects.swap(pending());
  }
  for (PetscObject& o : objects) PetscObjectDelayedDestroy(&o);
}

// Store entries to erase before PetscFinalize (their values hold PETSc objects).
std::mutex collective_mutex;
std::set<std::pair<Store*, std::string>>& collective_entries() {
  static auto* entries = new std::set<std::pair<Store*, std::string>>();  // never destroyed
  return *entries;
}

}  // namespace

namespace detail {

void throw_petsc(PetscErrorCode code, const char* call, const char* file, int line) {
  const char* text = nullptr;
  PetscErrorMessage(code, &text, nullptr);
  throw Error(fmt::format("PETSc: {} failed with error {} ({}) at {}:{}", call, static_cast<int>(code),
                          text ? text : "unknown", file, line));
}

void delayed_destroy(PetscObject* object) noexcept {
  if (!object || !*object) return;
  PetscBool initialized = PETSC_FALSE, finalized = PETSC_FALSE;
  PetscInitialized(&initialized);
  PetscFinalized(&finalized);
  if (!initialized || finalized) return;  // outlived the Session: nothing can be freed any more
  if (std::this_thread::get_id() != main_thread) {
    std::lock_guard lock(pending_mutex);
    pending().push_back(*object);
    *object = nullptr;
    return;
  }
  PetscObjectDelayedDestroy(object);
}

void collect_garbage(MPI_Comm comm) {
  drain_pending();
  FEM_PETSC(PetscGarbageCleanup(comm));
}

std::vector<std::vector<char>> exchange_bytes(MPI_Comm comm, const std::vector<std::vector<char>>& send,
                                              std::size_t item_size) {
  const int n = size(comm);
  FEM_EXPECTS(static_cast<int>(send.size()) == n, "exchange: {} send lists for {} processes", send.size(), n);
  std::vector<int> send_counts(n), recv_counts(n), send_offsets(n + 1, 0), recv_offsets(n + 1, 0);
  for (int p = 0; p < n; ++p) send_counts[p] = static_cast<int>(send[p].size() / item_size);
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  MPI_Datatype item;
  MPI_Type_contiguous(static_cast<int>(item_size), MPI_BYTE, &item);
  MPI_Type_commit(&item);
  for (int p = 0; p < n; ++p) {
    send_offsets[p + 1] = send_offsets[p] + send_counts[p];
    recv_offsets[p + 1] = recv_offsets[p] + recv_counts[p];
  }
  std::vector<char> out_buffer(static_cast<std::size_t>(send_offsets[n]) * item_size);
  for (int p = 0; p < n; ++p)
    std::copy(send[p].begin(), send[p].end(),
              out_buffer.begin() + static_cast<std::ptrdiff_t>(send_offsets[p] * item_size));
  std::vector<char> in_buffer(static_cast<std::size_t>(recv_offsets[n]) * item_size);
  MPI_Alltoallv(out_buffer.data(), send_counts.data(), send_offsets.data(), item, in_buffer.data(),
                recv_counts.data(), recv_offsets.data(), item, comm);
  MPI_Type_free(&item);
  std::vector<std::vector<char>> received(n);
  for (int p = 0; p < n; ++p)
    received[p].assign(in_buffer.begin() + static_cast<std::ptrdiff_t>(recv_offsets[p] * item_size),
                       in_buffer.begin() + static_cast<std::ptrdiff_t>(recv_offsets[p + 1] * item_size));
  return received;
}

}  // namespace detail

Session::Session(int& argc, char**& argv) {
  if (live_sessions.fetch_add(1) == 0) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
      mpi_started_here = true;
      if (provided < MPI_THREAD_FUNNELED) {
        live_sessions.fetch_sub(1);
        throw Error("MPI provides no MPI_THREAD_FUNNELED: the assembly's threads need it");
      }
    }
    main_thread = std::this_thread::get_id();
    PetscBool petsc = PETSC_FALSE;
    PetscInitialized(&petsc);
    if (!petsc) {
      FEM_PETSC(PetscInitialize(&argc, &argv, nullptr, nullptr));
      petsc_started_here = true;
    }
    // Errors come back as codes and become fem::Error; PETSc prints nothing itself.
    PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
    // Event counts (MatLUFactorNum, PCSetUp, ...) back the reuse counters.
    PetscLogDefaultBegin();
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
  if (live_sessions.fetch_sub(1) != 1) return;
  {
    std::lock_guard lock(collective_mutex);
    for (const auto& [store, key] : collective_entries()) store->erase(key);
    collective_entries().clear();
  }
  drain_pending();
  PetscGarbageCleanup(PETSC_COMM_WORLD);
  PetscPopErrorHandler();
  if (petsc_started_here) PetscFinalize();
  if (mpi_started_here) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

int rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int size(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

void agree(MPI_Comm comm, std::exception_ptr failure) {
  const int me = rank(comm), n = size(comm);
  int mine = failure ? me : n, lowest = n;
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  if (lowest == n) return;
  std::string message;
  int head[2] = {0, 0};  // message length, whether it is a NumericalError
  if (me == lowest) {
    try {
      std::rethrow_exception(failure);
    } catch (const NumericalError& e) {
      message = e.what();
      head[1] = 1;
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "unknown error";
    }
    head[0] = static_cast<int>(message.size());
  }
  MPI_Bcast(head, 2, MPI_INT, lowest, comm);
  message.resize(static_cast<std::size_t>(head[0]));
  MPI_Bcast(message.data(), head[0], MPI_CHAR, lowest, comm);
  if (failure) std::rethrow_exception(failure);
  if (head[1]) throw RemoteNumericalError(lowest, message);
  throw RemoteError(lowest, message);
}

namespace {
template <class T>
T allreduce(MPI_Comm comm, T local, MPI_Datatype type, MPI_Op op) {
  T out{};
  MPI_Allreduce(&local, &out, 1, type, op, comm);
  return out;
}
}  // namespace

bool all(MPI_Comm comm, bool local) { return allreduce(comm, local ? 1 : 0, MPI_INT, MPI_LAND) != 0; }
double sum(MPI_Comm comm, double local) { return allreduce(comm, local, MPI_DOUBLE, MPI_SUM); }
std::int64_t sum(MPI_Comm comm, std::int64_t local) { return allreduce(comm, local, MPI_INT64_T, MPI_SUM); }
double max(MPI_Comm comm, double local) { return allreduce(comm, local, MPI_DOUBLE, MPI_MAX); }
std::int64_t max(MPI_Comm comm, std::int64_t local) { return allreduce(comm, local, MPI_INT64_T, MPI_MAX); }

std::int64_t petsc_event_count(const char* name) {
  PetscLogEvent event = 0;
  if (PetscLogEventGetId(name, &event) != 0 || event < 0) return 0;
  PetscEventPerfInfo info{};
  if (PetscLogEventGetPerfInfo(0, event, &info) != 0) return 0;
  return info.count;  // stage 0: the main stage, where everything of fem::dist runs
}

void register_collective(Store& store, const std::string& key) {
  // Only the process-wide store outlives the Session for sure; another store's entries are
  // released by its destructor (each value's release is delayed, hence safe) or, when it
  // outlives the Session, leaked deliberately.
  if (&store != &fem::store()) return;
  std::lock_guard lock(collective_mutex);
  collective_entries().insert({&store, key});
}

int Group::size() const noexcept { return dist::size(comm_); }
int Group::rank() const noexcept { return dist::rank(comm_); }
void Group::agree(std::exception_ptr failure) const { dist::agree(comm_, failure); }
double Group::sum(double v) const { return dist::sum(comm_, v); }
std::int64_t Group::sum(std::int64_t v) const { return dist::sum(comm_, v); }
double Group::max(double v) const { return dist::max(comm_, v); }

void Group::broadcast(std::string& s) const {
  int n = static_cast<int>(s.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, comm_);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), n, MPI_CHAR, 0, comm_);
}

std::vector<int> Group::merge(std::vector<int> set) const {
  std::vector<std::vector<int>> send(static_cast<std::size_t>(size()), Processes::merge(std::move(set)));
  std::vector<int> all;
  for (const auto& got : dist::exchange<int>(comm_, send)) all.insert(all.end(), got.begin(), got.end());
  return Processes::merge(std::move(all));
}

}  // namespace fem::dist
