// libfem_flow (flow.hpp): steady solves, the force functional and the projection scheme.
#include "fem/flow/flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "fem/assembly/assembler.hpp"
#include "fem/error.hpp"
#include "fem/newton/assembled.hpp"

namespace fem::flow {

SteadyResult solve_steady(std::shared_ptr<const MixedSpace> W, const Flow& flow,
                          const assembly::DirichletValues& bc, bool pressure_null_space, std::span<double> w,
                          const SteadyOptions& options, const std::string& name, Store& store,
                          std::shared_ptr<solve::LinearSolver> solver) {
  FEM_EXPECTS(W != nullptr, "solve_steady '{}': no mixed space", name);
  FEM_EXPECTS(w.size() == static_cast<std::size_t>(W->num_dofs()),
              "solve_steady '{}': w has {} entries, the space {}", name, w.size(), W->num_dofs());
  assembly::set_dirichlet(bc, w);
  if (!solver) solver = solve::make_solver(options.newton.linear);
  if (!pressure_null_space) {
    // Velocity data on every boundary DOF leave the pressure's constant free: a singular matrix
    // (an outflow tag that `all` covered too), refused here in words rather than by the solver.
    // Each process looks at its part's boundary (a part's cut facets can only find it open).
    const Processes& processes = solver->layout().processes();
    bool open = false;
    processes.collective([&] {
      for (int k = 0; k < W->dim() && !open; ++k)
        for (index_t d :
             assembly::condition_values(W->velocity(), {assembly::FacetSet::all(), nullptr, k}).dofs)
          if (!std::binary_search(bc.dofs.begin(), bc.dofs.end(), d)) {
            open = true;
            break;
          }
    });
    FEM_EXPECTS(
        processes.max(open ? 1.0 : 0.0) > 0,
        "solve_steady '{}': the velocity is given on the whole boundary, every component, so the "
        "pressure is determined up to a constant only and no outflow or traction fixes it: solve with "
        "the pressure's null space (the drivers: no --outflow), or leave the velocity free on an outflow",
        name);
  }
  SteadyResult result;
  if (flow.convection && flow.density != 0 && options.picard_steps > 0) {
    Flow picard = flow;
    picard.linearization = assembly::Linearization::picard;
    newton::Options o = options.newton;
    o.max_iterations = options.picard_steps;
    o.monitor = nullptr;
    result.picard =
        newton::solve(newton::flow_problem(W, picard, bc, pressure_null_space, name, store, solver), w, o);
  }
  Flow exact = flow;
  exact.linearization = assembly::Linearization::newton;
  result.newton = newton::solve(newton::flow_problem(W, exact, bc, pressure_null_space, name, store, solver),
                                w, options.newton);
  return result;
}

solve::Options solver_options(const MixedSpace& W, const Flow& flow, bool pressure_null_space,
                              solve::Options options, const std::string& name, Store& store) {
  if (options.backend != solve::Backend::fieldsplit) return options;
  std::vector<double> values(static_cast<std::size_t>(W.pattern()->nnz()));
  // With convection and an outflow, the PCD preconditioner M⁻¹ F_p A_p⁻¹: M minus the plain
  // pressure mass, F_p and A_p published by newton::flow_problem at each Jacobian's state (they
  // need the velocity data). Otherwise the Schur complement's mass over μ' alone: Stokes, u–p
  // elasticity, and enclosed flows, whose pinned Neumann A_p and F_p did worse than the mass (a
  // Re 100 cavity: 114, 191, 187 iterations against 92, 118, 149).
  const bool pcd = flow.convection && flow.density != 0 && flow.compressibility == 0 && !flow.material &&
                   !pressure_null_space;
  assembly::schur_mass_into(W, pcd ? assembly::Flow::stokes(1.0) : flow, values);
  if (pcd) {
    options.schur_laplacian = name + "/schur/laplacian";
    options.schur_convection = name + "/schur/convection";
  }
  const std::string key = name + "/schur";
  const auto old = store.find<CsrMatrix>(key);
  if (!old || old->pattern_ptr() != W.pattern() ||
      !std::equal(values.begin(), values.end(), old->values().begin()))
    store.put(key, CsrMatrix(W.pattern(), std::move(values)));
  options.schur_preconditioner = key;
  return options;
}

std::vector<index_t> boundary_nodes(const assembly::FunctionSpace& V, assembly::FacetSet where,
                                    const Layout& layout) {
  FEM_EXPECTS(where.whole_boundary || !where.tags.empty(), "boundary_nodes: no facet tags");
  const auto values = layout.processes().collective([&] {
    return assembly::condition_values(V, {std::move(where), nullptr, V.components() > 1 ? 0 : -1});
  });
  std::vector<index_t> nodes;
  if (layout.distributed()) {  // the nodes a process shares with the part that holds their facets
    std::vector<double> marked(static_cast<std::size_t>(V.num_dofs()), 0.0);
    for (index_t d : values.dofs) marked[static_cast<std::size_t>(d)] = 1.0;
    layout.maximize(marked);
    for (index_t node = 0; node < V.dofmap().num_nodes; ++node)
      if (marked[static_cast<std::size_t>(node * V.components())] > 0) nodes.push_back(node);
    return nodes;
  }
  for (index_t d : values.dofs) nodes.push_back(d / V.components());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::array<double, 3> force(const MixedSpace& W, const Flow& flow, std::span<const double> w,
                            std::span<const index_t> nodes, std::span<const double> inertia,
                            const Layout& layout) {
  std::vector<double> F(w.size(), 0.0);
  const int dim = W.dim();
  layout.processes().collective([&] {
    FEM_EXPECTS(inertia.empty() || inertia.size() == static_cast<std::size_t>(W.pressure_offset()),
                "force: the inertia has {} entries, the velocity {}", inertia.size(), W.pressure_offset());
    assembly::flow_into(W, flow, w, {}, F);
  });
  layout.accumulate(F);
  std::array<double, 3> f{};
  for (index_t n : nodes)
    for (int k = 0; k < dim; ++k) {
      const auto i = static_cast<std::size_t>(n * dim + k);
      if (layout.owns(static_cast<index_t>(i)))
        f[static_cast<std::size_t>(k)] -= F[i] + (inertia.empty() ? 0.0 : inertia[i]);
    }
  if (layout.distributed())
    for (double& v : f) v = layout.processes().sum(v);
  return f;
}

time::FirstOrder monolithic(std::shared_ptr<const MixedSpace> W, const Flow& flow, bool pressure_null_space,
                            const std::string& name, Store& store, std::function<void(double)> at_time) {
  FEM_EXPECTS(W != nullptr, "monolithic '{}': no mixed space", name);
  std::vector<double> mass(static_cast<std::size_t>(W->pattern()->nnz()));
  assembly::velocity_mass_into(*W, flow.density, mass);
  store.put(name + "/M", CsrMatrix(W->pattern(), std::move(mass)));
  store.put(name + "/K",
            CsrMatrix(W->pattern(), std::vector<double>(static_cast<std::size_t>(W->pattern()->nnz()), 0.0)));
  time::FirstOrder p;
  p.name = name;
  p.M = name + "/M";
  p.K = name + "/K";
  auto shared = std::make_shared<const Flow>(flow);
  p.nonlinear.residual = [W, shared, at_time](double t, std::span<const double> w, std::span<double> N) {
    if (at_time) at_time(t);
    assembly::flow_into(*W, *shared, w, {}, N);
  };
  p.nonlinear.jacobian = [W, shared, at_time](double t, std::span<const double> w, std::span<double> values) {
    if (at_time) at_time(t);
    assembly::flow_into(*W, *shared, w, values, {});
  };
  if (pressure_null_space) p.nonlinear.null_space = W->pressure_null_space();
  return p;
}

// --- the projection scheme --------------------------------------------------------------------

namespace {

// A scalar system with constrained nodes: the matrix as assembled (for the lift) and its key in
// the store, constrained (rows and columns zeroed but for the diagonal).
struct Constrained {
  std::string key;
  std::shared_ptr<solve::LinearSolver> solver;
};

}  // namespace

// The velocity–pressure block of the Stokes matrix, G = [−∫ψ_m ∂_k φ_a] (velocity rows, pressure
// columns): G p is −∫p div v and Gᵀu is −∫q div u, products instead of cell loops in every step.
struct Gradient {
  std::vector<index_t> offsets, columns;
  std::vector<double> values;
  index_t columns_count = 0;
  void multiply(std::span<const double> p, std::span<double> out) const {  // out = G p
    for (std::size_t r = 0; r + 1 < offsets.size(); ++r) {
      double s = 0;
      for (index_t e = offsets[r]; e < offsets[r + 1]; ++e)
        s += values[static_cast<std::size_t>(e)] *
             p[static_cast<std::size_t>(columns[static_cast<std::size_t>(e)])];
      out[r] = s;
    }
  }
  void multiply_transpose(std::span<const double> u, std::span<double> out) const {  // out = Gᵀu
    std::fill(out.begin(), out.end(), 0.0);
    for (std::size_t r = 0; r + 1 < offsets.size(); ++r)
      for (index_t e = offsets[r]; e < offsets[r + 1]; ++e)
        out[static_cast<std::size_t>(columns[static_cast<std::size_t>(e)])] +=
            values[static_cast<std::size_t>(e)] * u[r];
  }
};

struct ProjectionStepper::Impl {
  Gradient G;
  std::unique_ptr<assembly::FunctionSpace> scalar;  // P2, the velocity's nodes
  std::shared_ptr<const CsrMatrix> M, K, A;         // ρ-mass, μ-Laplacian, M/dt + ½K (unconstrained)
  std::shared_ptr<const CsrMatrix> B;               // M/dt − ½K: the tentative step's explicit part
  std::shared_ptr<solve::LinearSolver> pressure;
  std::string pressure_key;
  // The velocity's components grouped by their constrained nodes.
  struct Group {
    std::vector<int> components;
    std::vector<index_t> nodes;  // constrained scalar nodes
    std::vector<std::size_t>
        values;  // where each (node, component) value sits in the DOF list, per component
    Constrained tentative, correction;
  };
  std::vector<Group> groups;
  std::vector<double> g, convection_prev;
  bool have_prev = false;
};

namespace {

CsrMatrix constrained(const CsrMatrix& A, const std::vector<index_t>& nodes) {
  std::vector<double> values(A.values().begin(), A.values().end()),
      b(static_cast<std::size_t>(A.rows()), 0.0);
  assembly::apply_dirichlet({nodes, std::vector<double>(nodes.size(), 0.0), {}}, A.pattern(), values, b);
  return CsrMatrix(A.pattern_ptr(), std::move(values));
}

}  // namespace

ProjectionStepper::ProjectionStepper(Store& store, Projection problem, double dt, std::vector<double> w0,
                                     double t0)
    : store_(store),
      p_(std::move(problem)),
      dt_(dt),
      t_(t0),
      w_(std::move(w0)),
      impl_(std::make_unique<Impl>()) {
  FEM_EXPECTS(p_.W != nullptr, "projection '{}': no mixed space", p_.name);
  FEM_EXPECTS(std::isfinite(dt) && dt > 0, "projection '{}': dt is {}; a positive step", p_.name, dt);
  FEM_EXPECTS(p_.viscosity > 0 && p_.density > 0,
              "projection '{}': viscosity {} and density {} must be positive", p_.name, p_.viscosity,
              p_.density);
  const MixedSpace& W = *p_.W;
  FEM_EXPECTS(w_.size() == static_cast<std::size_t>(W.num_dofs()),
              "projection '{}': w0 has {} entries, the space {}", p_.name, w_.size(), W.num_dofs());
  FEM_EXPECTS(std::is_sorted(p_.velocity.dofs.begin(), p_.velocity.dofs.end()),
              "projection '{}': the constrained velocity DOFs must be sorted", p_.name);
  Impl& s = *impl_;
  const std::string& mesh_key = W.velocity().mesh_key();
  s.scalar = std::make_unique<assembly::FunctionSpace>(mesh_key, 2, 1, store_);
  const assembly::Assembler scalar(*s.scalar), pressure(W.pressure());
  s.M = std::make_shared<const CsrMatrix>(scalar.matrix(assembly::Mass{p_.density}));
  s.K = std::make_shared<const CsrMatrix>(scalar.matrix(assembly::Diffusion{p_.viscosity}));
  std::vector<double> a(s.M->nnz());
  for (std::size_t e = 0; e < a.size(); ++e) a[e] = s.M->values()[e] / dt + 0.5 * s.K->values()[e];
  s.A = std::make_shared<const CsrMatrix>(s.M->pattern_ptr(), std::move(a));
  std::vector<double> b(s.M->nnz());
  for (std::size_t e = 0; e < b.size(); ++e) b[e] = s.M->values()[e] / dt - 0.5 * s.K->values()[e];
  s.B = std::make_shared<const CsrMatrix>(s.M->pattern_ptr(), std::move(b));
  const auto make_solver = [&](const std::string& key, CsrMatrix matrix) {
    store_.put(key, std::move(matrix));
    auto solver = std::shared_ptr<solve::LinearSolver>(solve::make_solver(p_.linear));
    solver->factorize(store_, key);
    return solver;
  };
  // G from the Stokes matrix's velocity rows (its pressure columns), assembled once.
  {
    std::vector<double> stokes(static_cast<std::size_t>(W.pattern()->nnz()));
    std::vector<double> zero(static_cast<std::size_t>(W.num_dofs()), 0.0);
    assembly::flow_into(W, Flow::stokes(1), zero, stokes, {});
    const auto& pat = *W.pattern();
    const index_t off = W.pressure_offset();
    s.G.offsets.assign(1, 0);
    for (index_t r = 0; r < off; ++r) {
      for (index_t e = pat.row_offsets()[r]; e < pat.row_offsets()[r + 1]; ++e)
        if (const index_t c = pat.col_indices()[e]; c >= off) {
          s.G.columns.push_back(c - off);
          s.G.values.push_back(stokes[static_cast<std::size_t>(e)]);
        }
      s.G.offsets.push_back(static_cast<index_t>(s.G.columns.size()));
    }
    s.G.columns_count = W.num_pressure_dofs();
  }
  // The groups of components with the same constrained nodes.
  const int dim = W.dim();
  std::vector<std::vector<index_t>> nodes(static_cast<std::size_t>(dim));
  std::vector<std::vector<std::size_t>> where(static_cast<std::size_t>(dim));
  for (std::size_t i = 0; i < p_.velocity.dofs.size(); ++i) {
    const index_t d = p_.velocity.dofs[i];
    FEM_EXPECTS(d >= 0 && d < W.pressure_offset(),
                "projection '{}': constrained DOF {} is not a velocity DOF", p_.name, d);
    nodes[static_cast<std::size_t>(d % dim)].push_back(d / dim);
    where[static_cast<std::size_t>(d % dim)].push_back(i);
  }
  for (int k = 0; k < dim; ++k) {
    auto it = std::find_if(s.groups.begin(), s.groups.end(), [&](const Impl::Group& g) {
      return g.nodes == nodes[static_cast<std::size_t>(k)];
    });
    if (it == s.groups.end()) {
      Impl::Group g;
      g.nodes = nodes[static_cast<std::size_t>(k)];
      const auto id = s.groups.size();
      g.tentative.key = fmt::format("{}/tentative/{}", p_.name, id);
      g.correction.key = fmt::format("{}/correction/{}", p_.name, id);
      g.tentative.solver = make_solver(g.tentative.key, constrained(*s.A, g.nodes));
      g.correction.solver = make_solver(g.correction.key, constrained(*s.M, g.nodes));
      s.groups.push_back(std::move(g));
      it = s.groups.end() - 1;
    }
    it->components.push_back(k);
    it->values.insert(it->values.end(), where[static_cast<std::size_t>(k)].begin(),
                      where[static_cast<std::size_t>(k)].end());
  }
  // The pressure correction's Laplacian, φ = 0 at the outflow (else its constants are free).
  s.pressure_key = p_.name + "/pressure";
  s.pressure =
      make_solver(s.pressure_key, constrained(pressure.matrix(assembly::Diffusion{}), p_.pressure_dofs));
  s.g.assign(p_.velocity.dofs.size(), 0.0);
  inertia_.assign(static_cast<std::size_t>(W.pressure_offset()), 0.0);
  change_.assign(inertia_.size(), 0.0);
}

ProjectionStepper::~ProjectionStepper() = default;

std::span<const double> ProjectionStepper::inertia() const {
  if (inertia_ready_) return inertia_;
  const Impl& s = *impl_;
  const int dim = p_.W->dim();
  const auto n = static_cast<std::size_t>(s.scalar->num_dofs()), d = static_cast<std::size_t>(dim);
  std::vector<double> du(n), Mdu(n);
  for (std::size_t k = 0; k < d; ++k) {
    for (std::size_t i = 0; i < n; ++i) du[i] = change_[i * d + k];
    s.M->multiply(du, Mdu);
    for (std::size_t i = 0; i < n; ++i) inertia_[i * d + k] = Mdu[i];
  }
  inertia_ready_ = true;
  return inertia_;
}

index_t ProjectionStepper::matrices() const noexcept {
  return static_cast<index_t>(2 * impl_->groups.size() + 1);
}

void ProjectionStepper::step() {
  Impl& s = *impl_;
  const MixedSpace& W = *p_.W;
  const int dim = W.dim();
  const auto n = static_cast<std::size_t>(s.scalar->num_dofs());
  const auto nv = static_cast<std::size_t>(W.pressure_offset()), nw = w_.size();
  const double t1 = t_ + dt_, rho = p_.density;
  const std::size_t np = nw - nv;
  const auto pn = std::span<const double>(w_).subspan(nv);
  // The explicit terms: Cⁿ (a cell loop), ∫pⁿ div v = −G pⁿ, and ∫f v at t_{n+½}.
  std::vector<double> conv(nv, 0.0), rhs(nv);
  if (p_.convection) assembly::convection_into(W, rho, std::span<const double>(w_).first(nv), conv);
  s.G.multiply(pn, rhs);
  for (double& v : rhs) v = -v;
  if (p_.body_force) {
    std::vector<double> F(nw, 0.0), zero(nw, 0.0);
    const double t_half = t_ + dt_ / 2;
    Flow load = Flow::stokes(0);
    load.body_force = [&](const double* x, double* f) { p_.body_force(t_half, x, f); };
    assembly::flow_into(W, load, zero, {}, F);  // −∫f v
    for (std::size_t i = 0; i < nv; ++i) rhs[i] -= F[i];
  }
  if (p_.load)
    for (std::size_t i = 0; i < nv; ++i) rhs[i] += (*p_.load)[i];
  // rhs −= 3/2 Cⁿ − ½ Cⁿ⁻¹ (Adams–Bashforth 2; forward Euler the first step).
  for (std::size_t i = 0; i < nv; ++i)
    rhs[i] -= s.have_prev ? 1.5 * conv[i] - 0.5 * s.convection_prev[i] : conv[i];
  s.convection_prev.swap(conv);
  s.have_prev = p_.convection;
  if (p_.velocity.values) p_.velocity.values(t1, s.g);

  // Solves group by group: B (n × components, column-major) from `right` per component, the
  // lift of g(t1) with the unconstrained `A`, then X into `out` (interleaved).
  const auto solve_velocity = [&](const CsrMatrix& A, bool tentative, const std::vector<double>& from,
                                  const std::vector<double>& right, std::vector<double>& out) {
    std::vector<double> uk(n);
    const auto off = A.pattern().row_offsets();
    const auto col = A.pattern().col_indices();
    const auto val = A.values();
    for (auto& g : s.groups) {
      const std::size_t nk = g.components.size();
      std::vector<double> B(n * nk), X(n * nk);
      for (std::size_t c = 0; c < nk; ++c) {
        const int k = g.components[c];
        double* b = &B[c * n];
        for (std::size_t i = 0; i < n; ++i)
          uk[i] = from[i * static_cast<std::size_t>(dim) + static_cast<std::size_t>(k)];
        (tentative ? *s.B : *s.M).multiply(uk, std::span<double>(b, n));  // (M/dt − ½K) uⁿ, or M u*
        for (std::size_t i = 0; i < n; ++i)
          b[i] += right[i * static_cast<std::size_t>(dim) + static_cast<std::size_t>(k)];
        // The lift b −= A x0, x0 = g on the constrained nodes: A is symmetric (M/dt + ½K, M), so
        // its columns are the constrained rows, and only they are read. Then b = A_ii g_i there.
        const std::size_t first = c * g.nodes.size();
        for (std::size_t j = 0; j < g.nodes.size(); ++j) {
          const index_t node = g.nodes[j];
          const double gj = s.g[g.values[first + j]];
          if (gj != 0)
            for (index_t e = off[node]; e < off[node + 1]; ++e)
              b[static_cast<std::size_t>(col[e])] -= val[static_cast<std::size_t>(e)] * gj;
        }
        for (std::size_t j = 0; j < g.nodes.size(); ++j) {
          const index_t node = g.nodes[j];
          const auto e = A.pattern().find(node, node);
          b[static_cast<std::size_t>(node)] = val[static_cast<std::size_t>(e)] * s.g[g.values[first + j]];
        }
      }
      auto& system = tentative ? g.tentative : g.correction;
      system.solver->factorize(store_, system.key);  // cached: a lookup
      solve::require(system.solver->solve(B, X, static_cast<index_t>(nk)));
      for (std::size_t c = 0; c < nk; ++c)
        for (std::size_t i = 0; i < n; ++i)
          out[i * static_cast<std::size_t>(dim) + static_cast<std::size_t>(g.components[c])] = X[c * n + i];
    }
  };
  // 1. The tentative velocity.
  std::vector<double> u_star(nv);
  solve_velocity(*s.A, true, w_, rhs, u_star);
  // 2. The pressure increment: K_p φ = −(ρ/dt) ∫ q div u* = (ρ/dt) Gᵀu*.
  std::vector<double> bp(np), phi(np);
  s.G.multiply_transpose(u_star, bp);
  for (double& v : bp) v *= rho / dt_;
  for (index_t d : p_.pressure_dofs) bp[static_cast<std::size_t>(d)] = 0.0;
  s.pressure->factorize(store_, s.pressure_key);
  solve::require(s.pressure->solve(bp, phi));
  // 3. The correction: M u^{n+1} = M u* − dt ∫∇φ·v, with ∫∇φ·v = −∫φ div v = G φ on the rows
  //    that are not constrained (v = 0 on the walls, φ = 0 at the outflow).
  s.G.multiply(phi, rhs);
  for (double& v : rhs) v *= -dt_;
  std::vector<double> u_next(nv);
  solve_velocity(*s.M, false, u_star, rhs, u_next);
  // The step's velocity change, for the inertia force() may ask for (computed then).
  for (std::size_t i = 0; i < nv; ++i) change_[i] = (u_next[i] - w_[i]) / dt_;
  inertia_ready_ = false;
  std::copy(u_next.begin(), u_next.end(), w_.begin());
  for (std::size_t i = 0; i < np; ++i) w_[nv + i] += phi[i];
  t_ = t1;
  ++steps_;
}

}  // namespace fem::flow
