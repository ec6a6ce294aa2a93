// The process group of a distributed run: MPI and PETSc initialized for the life of a Session,
// errors agreed across processes (one failing rank makes every rank throw, nobody waits in a
// collective that will never come), and the collective clean-up of PETSc objects held by the
// store. Every function of fem::dist is collective over the session's communicator unless it
// says otherwise: every process calls it, in the same order (SPMD).
//
//   int main(int argc, char** argv) {
//     fem::dist::Session session(argc, argv);        // MPI_Init_thread + PetscInitialize
//     ...                                            // fem::dist::distribute, assemble, solve
//   }                                                // collective entries erased, PetscFinalize
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fem/error.hpp"
#include "fem/layout.hpp"
#include "fem/store.hpp"

namespace fem::dist {

/// MPI (thread level FUNNELED: OpenMP threads inside a rank, MPI from the main thread) and PETSc,
/// initialized by the first Session and finalized when the last one ends. MPI or PETSc that the
/// caller initialized before are left to the caller to finalize. PETSc objects that a worker
/// thread releases (the last holder of a store value) are destroyed on the main thread. Before PetscFinalize
/// the destructor erases every collective store entry (PETSc matrices, factorizations, preconditioners: their
/// release is collective) and destroys what they held on every process together.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  MPI_Comm comm() const noexcept { return MPI_COMM_WORLD; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

int rank(MPI_Comm comm);
int size(MPI_Comm comm);

/// Thrown on the processes that did not fail themselves when another one did: the message is
/// the failing rank's own, `rank()` says which (the lowest failing one).
class RemoteError : public Error {
 public:
  RemoteError(int rank, const std::string& what) : Error(what), rank_(rank) {}
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// RemoteError of a NumericalError: the class of the outcome is the same on every process (the
/// fem driver's exit code follows it).
class RemoteNumericalError : public NumericalError {
 public:
  RemoteNumericalError(int rank, const std::string& what) : NumericalError(what), rank_(rank) {}
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// Collective: every process passes its own outcome (nullptr: success). When any failed, the
/// process that failed rethrows its exception and every other one throws RemoteError (or
/// RemoteNumericalError, for a NumericalError) with the message of the lowest failing rank.
/// When all succeeded, nothing happens.
void agree(MPI_Comm comm, std::exception_ptr failure);

/// Collective: run f() on every process and agree() on the outcome; returns f's result.
template <class F>
auto collective(MPI_Comm comm, F&& f) -> std::invoke_result_t<F> {
  return agreed(std::forward<F>(f), [comm](std::exception_ptr failure) { agree(comm, failure); });
}

/// The processes of a communicator as the library's front ends and problem layer see them
/// (fem::Processes): agree, reductions, broadcast, merge, collective over `comm`.
class Group final : public Processes {
 public:
  explicit Group(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {}
  MPI_Comm comm() const noexcept { return comm_; }
  int size() const noexcept override;
  int rank() const noexcept override;
  void agree(std::exception_ptr failure) const override;
  double sum(double v) const override;
  std::int64_t sum(std::int64_t v) const override;
  double max(double v) const override;
  void broadcast(std::string& s) const override;
  std::vector<int> merge(std::vector<int> set) const override;

 private:
  MPI_Comm comm_;
};

/// Collective: whether a condition holds on every process (MPI_LAND).
bool all(MPI_Comm comm, bool local);
/// Collective sums and maxima of one number.
double sum(MPI_Comm comm, double local);
std::int64_t sum(MPI_Comm comm, std::int64_t local);
double max(MPI_Comm comm, double local);
std::int64_t max(MPI_Comm comm, std::int64_t local);

/// Collective: send[p] goes to process p; returns what each process sent here (received[p]).
/// T must be trivially copyable.
template <class T>
std::vector<std::vector<T>> exchange(MPI_Comm comm, const std::vector<std::vector<T>>& send);

/// The number of times the PETSc event `name` (e.g. "MatLUFactorNum") ran on this process since
/// the session began; 0 for an event PETSc has not registered yet.
std::int64_t petsc_event_count(const char* name);

/// The entry `key` of `store` holds a value whose release is collective (PETSc objects): the
/// Session erases it before PetscFinalize when `store` is the process-wide fem::store() (other
/// stores release their entries when destroyed; one that outlives the Session leaks them).
/// fem::dist registers its own entries.
void register_collective(Store& store, const std::string& key);

// --- implementation -------------------------------------------------------------------------

namespace detail {
std::vector<std::vector<char>> exchange_bytes(MPI_Comm comm, const std::vector<std::vector<char>>& send,
                                              std::size_t item_size);
}

template <class T>
std::vector<std::vector<T>> exchange(MPI_Comm comm, const std::vector<std::vector<T>>& send) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<std::vector<char>> bytes(send.size());
  for (std::size_t p = 0; p < send.size(); ++p) {
    bytes[p].resize(send[p].size() * sizeof(T));
    if (!send[p].empty()) std::memcpy(bytes[p].data(), send[p].data(), bytes[p].size());
  }
  auto got = detail::exchange_bytes(comm, bytes, sizeof(T));
  std::vector<std::vector<T>> out(got.size());
  for (std::size_t p = 0; p < got.size(); ++p) {
    out[p].resize(got[p].size() / sizeof(T));
    if (!got[p].empty()) std::memcpy(out[p].data(), got[p].data(), got[p].size());
  }
  return out;
}

}  // namespace fem::dist
