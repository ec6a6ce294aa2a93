// Built when MPI or PETSc is missing: the distributed path's entry points exist (link lines and
// front ends never change) and refuse with NotCompiled; a program runs on one process.
#include "fem/dist/detail/runtime.hpp"

namespace fem::dist::detail {
namespace {
[[noreturn]] void refuse(const std::string& what) {
  throw NotCompiled("MPI and PETSc", what +
                                         " (the distributed path, libfem_dist: scripts/install-deps.sh dist, "
                                         "then configure again)");
}
}  // namespace

bool available() noexcept { return false; }
void start(int&, char**&) { refuse("a distributed run"); }
void stop() {}
bool running() noexcept { return false; }
const Processes& world() noexcept { return Processes::one(); }
void abort_unless_all_failed(const std::string&, const std::string&, int) {}
void distribute(std::shared_ptr<const Mesh>, const std::string&, Store&) { refuse("distributing a mesh"); }
bool distributed(const Store&, const std::string&) { return false; }
std::shared_ptr<const Layout> index_map(const assembly::FunctionSpace&) {
  refuse("an index map over processes");
}
std::unique_ptr<solve::LinearSolver> make_solver(const assembly::FunctionSpace&,
                                                 const solve::Options& options) {
  refuse(fmt::format("the {} solver", solve::to_string(options.backend)));
}
void write_gathered(const std::string&, const Store&, const std::string&, std::span<const mesh::Field>,
                    std::span<const mesh::Field>) {
  refuse("gathering a distributed solution");
}

}  // namespace fem::dist::detail
