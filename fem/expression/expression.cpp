// Expressions: muparser for parsing and checking, its bytecode compiled into a program that
// evaluates arrays of points (one instruction at a time over up to kLanes points).
#include "fem/expression/expression.hpp"

#include <fmt/format.h>
#include <muParser.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#if defined(FEM_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>
#define FEM_VECTOR_MATH 1
// glibc's vector math (libmvec), AVX2 variants: four doubles per call.
extern "C" {
__m256d _ZGVdN4v_sin(__m256d);
__m256d _ZGVdN4v_cos(__m256d);
__m256d _ZGVdN4v_tan(__m256d);
__m256d _ZGVdN4v_asin(__m256d);
__m256d _ZGVdN4v_acos(__m256d);
__m256d _ZGVdN4v_atan(__m256d);
__m256d _ZGVdN4v_sinh(__m256d);
__m256d _ZGVdN4v_cosh(__m256d);
__m256d _ZGVdN4v_tanh(__m256d);
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m256d _ZGVdN4v_log10(__m256d);
}
#endif

#include "fem/error.hpp"

namespace fem::expression {

namespace detail {

namespace {

/// Points per pass of the program: each instruction is a loop over this many values.
constexpr int kLanes = 64;
/// Values the program may hold at once (muparser's stack depth), and nested conditions.
constexpr int kMaxSlots = 32, kMaxConditions = 8;

enum class Op : std::uint8_t {
  variable,  // slot = var
  constant,  // slot = a
  var_mul,   // slot = var * a + b (muparser's cmVARMUL)
  var_pow2,  // slot = var * var
  var_pow3,
  var_pow4,
  add,
  sub,
  mul,
  div,
  pow,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  land,
  lor,
  negate,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  tanh,
  asinh,
  acosh,
  atanh,
  log,
  log2,
  log10,
  exp,
  sqrt,
  abs,
  sign,
  rint,
  call,        // argc fixed arguments from slot on, per point through muparser's callback
  call_multi,  // a variable number of arguments (sum, min, ...)
  if_,         // condition[c] = slot
  endif,       // slot = condition[c] ? slot : slot + 1
};

struct Instruction {
  Op op;
  int slot = 0;  // destination (and first operand)
  int var = 0;   // x, y, z, t; or the condition index
  int argc = 0;
  double a = 0, b = 0;
  mu::generic_callable_type fun{};
};

/// muparser's built-in functions of one argument, found by parsing `name(x)` once: the callback
/// in the bytecode is the function's address.
struct KnownFunction {
  const char* probe;
  Op op;
};
constexpr KnownFunction kKnown[] = {
    {"-x", Op::negate},      {"sin(x)", Op::sin},   {"cos(x)", Op::cos},     {"tan(x)", Op::tan},
    {"asin(x)", Op::asin},   {"acos(x)", Op::acos}, {"atan(x)", Op::atan},   {"sinh(x)", Op::sinh},
    {"cosh(x)", Op::cosh},   {"tanh(x)", Op::tanh}, {"asinh(x)", Op::asinh}, {"acosh(x)", Op::acosh},
    {"atanh(x)", Op::atanh}, {"ln(x)", Op::log},    {"log(x)", Op::log},     {"log2(x)", Op::log2},
    {"log10(x)", Op::log10}, {"exp(x)", Op::exp},   {"sqrt(x)", Op::sqrt},   {"abs(x)", Op::abs},
    {"sign(x)", Op::sign},   {"rint(x)", Op::rint},
};

const std::vector<std::pair<mu::generic_callable_type, Op>>& known_functions() {
  static const auto table = [] {
    std::vector<std::pair<mu::generic_callable_type, Op>> t;
    double x = 0.5;
    for (const auto& k : kKnown) {
      try {
        mu::Parser p;
        p.DefineVar("x", &x);
        p.SetExpr(k.probe);
        p.Eval();
        const auto& code = p.GetByteCode();
        const mu::SToken* tok = code.GetBase();
        if (code.GetSize() == 3 && tok[0].Cmd == mu::cmVAR && tok[1].Cmd == mu::cmFUNC &&
            tok[1].Fun.argc == 1)
          t.emplace_back(tok[1].Fun.cb, k.op);
      } catch (const mu::Parser::exception_type&) {
        // A muparser without this function: its callbacks run through Op::call.
      }
    }
    return t;
  }();
  return table;
}

// f over v[0, n): glibc's AVX2 vector function four values at a time (a short tail padded, so a
// value does not depend on its neighbours), else libm.
#if FEM_VECTOR_MATH
using VectorMath = __m256d (*)(__m256d);
void apply(VectorMath f, double* v, int n) {
  if (n == 1) {  // one value: in lane 0 of a broadcast
    v[0] = _mm256_cvtsd_f64(f(_mm256_set1_pd(v[0])));
    return;
  }
  int i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(v + i, f(_mm256_loadu_pd(v + i)));
  if (i < n) {
    double tail[4] = {v[i], v[i], v[i], v[i]};
    for (int k = i; k < n; ++k) tail[k - i] = v[k];
    _mm256_storeu_pd(tail, f(_mm256_loadu_pd(tail)));
    for (int k = i; k < n; ++k) v[k] = tail[k - i];
  }
}
#define FEM_MATH(name, v, n) apply(_ZGVdN4v_##name, v, n)
#else
#define FEM_MATH(name, v, n) \
  for (int l_ = 0; l_ < (n); ++l_) (v)[l_] = std::name((v)[l_])
#endif

}  // namespace

/// muparser's bytecode as a program over arrays: slots are muparser's stack positions, resolved
/// when compiling, so running it is one loop over the points per instruction. A conditional
/// runs both branches for every point and picks per point.
class ExpressionProgram {
 public:
  /// nullptr when the bytecode holds something this does not compile.
  static std::shared_ptr<const ExpressionProgram> compile(const mu::ParserBase& parser,
                                                          const double* const vars[4]) {
    auto prog = std::make_shared<ExpressionProgram>();
    const auto& code = parser.GetByteCode();
    const mu::SToken* tok = code.GetBase();
    int sp = 0, cp = 0;  // values on the stack, conditions pending
    auto var_index = [&](const double* p) {
      for (int k = 0; k < 4; ++k)
        if (p == vars[k]) return k;
      return -1;
    };
    auto push = [&](Instruction in) {
      prog->code_.push_back(in);
      return true;
    };
    for (std::size_t i = 0; i < code.GetSize(); ++i) {
      const mu::SToken& t = tok[i];
      Instruction in{};
      switch (t.Cmd) {
        case mu::cmEND:
          i = code.GetSize();
          continue;
        case mu::cmVAR:
        case mu::cmVARMUL:
        case mu::cmVARPOW2:
        case mu::cmVARPOW3:
        case mu::cmVARPOW4:
          in.var = var_index(t.Val.ptr);
          if (in.var < 0) return nullptr;
          in.op = t.Cmd == mu::cmVAR       ? Op::variable
                  : t.Cmd == mu::cmVARMUL  ? Op::var_mul
                  : t.Cmd == mu::cmVARPOW2 ? Op::var_pow2
                  : t.Cmd == mu::cmVARPOW3 ? Op::var_pow3
                                           : Op::var_pow4;
          in.a = t.Val.data;
          in.b = t.Val.data2;
          in.slot = sp++;
          break;
        case mu::cmVAL:
          in.op = Op::constant;
          in.a = t.Val.data2;
          in.slot = sp++;
          break;
        case mu::cmLE:
        case mu::cmGE:
        case mu::cmNEQ:
        case mu::cmEQ:
        case mu::cmLT:
        case mu::cmGT:
        case mu::cmADD:
        case mu::cmSUB:
        case mu::cmMUL:
        case mu::cmDIV:
        case mu::cmPOW:
        case mu::cmLAND:
        case mu::cmLOR: {
          static constexpr Op ops[] = {Op::le,  Op::ge,  Op::ne,  Op::eq,  Op::lt,   Op::gt, Op::add,
                                       Op::sub, Op::mul, Op::div, Op::pow, Op::land, Op::lor};
          // The table follows muparser's enum order (2.3.3); an upgrade that reorders it must
          // not compile (tests/expression pins the token sequences too).
          static_assert(mu::cmGE == mu::cmLE + 1 && mu::cmNEQ == mu::cmLE + 2 && mu::cmEQ == mu::cmLE + 3 &&
                        mu::cmLT == mu::cmLE + 4 && mu::cmGT == mu::cmLE + 5 && mu::cmADD == mu::cmLE + 6 &&
                        mu::cmSUB == mu::cmLE + 7 && mu::cmMUL == mu::cmLE + 8 && mu::cmDIV == mu::cmLE + 9 &&
                        mu::cmPOW == mu::cmLE + 10 && mu::cmLAND == mu::cmLE + 11 &&
                        mu::cmLOR == mu::cmLE + 12);
          if (sp < 2) return nullptr;
          in.op = ops[t.Cmd - mu::cmLE];
          in.slot = --sp - 1;
          break;
        }
        case mu::cmIF:
          if (sp < 1 || cp >= kMaxConditions) return nullptr;
          in.op = Op::if_;
          in.slot = --sp;
          in.var = cp++;
          break;
        case mu::cmELSE:
          continue;  // the else branch's value goes on top of the then branch's
        case mu::cmENDIF:
          if (sp < 2 || cp < 1) return nullptr;
          in.op = Op::endif;
          in.slot = --sp - 1;
          in.var = --cp;
          break;
        case mu::cmFUNC: {
          const int argc = t.Fun.argc;
          in.fun = t.Fun.cb;
          if (argc == 1) {
            if (sp < 1) return nullptr;
            in.op = Op::call;
            for (const auto& [cb, op] : known_functions())
              if (cb == t.Fun.cb) in.op = op;
            in.argc = 1;
            in.slot = sp - 1;
          } else if (argc >= 0 && argc <= 4) {
            if (sp < argc) return nullptr;
            in.op = Op::call;
            in.argc = argc;
            in.slot = sp - argc;
            sp += 1 - argc;
          } else if (argc < 0) {
            const int n = -argc;
            if (n < 1 || sp < n) return nullptr;
            in.op = Op::call_multi;
            in.argc = n;
            in.slot = sp - n;
            sp += 1 - n;
          } else {
            return nullptr;
          }
          break;
        }
        default:
          return nullptr;  // string and bulk functions, assignments, ...
      }
      if (sp > kMaxSlots || in.slot < 0) return nullptr;
      push(in);
    }
    // One value: several (comma-separated results) or a pending condition stays with muparser.
    if (sp != 1 || cp != 0) return nullptr;
    return prog;
  }

  /// values[i] at the points x[i * gdim + d] (x nullptr: every coordinate 0) and time t.
  void run(std::size_t count, const double* x, int gdim, double t, double* values) const {
    if (count == 1) {  // one point (boundary values, pointwise callers): the same code on one lane
      double var[4][1] = {
          {x && gdim > 0 ? x[0] : 0.0}, {x && gdim > 1 ? x[1] : 0.0}, {x && gdim > 2 ? x[2] : 0.0}, {t}};
      run_lanes<1>(1, var, values);
      return;
    }
    for (std::size_t begin = 0; begin < count; begin += kLanes) {
      const int n = static_cast<int>(std::min<std::size_t>(kLanes, count - begin));
      alignas(64) double var[4][kLanes];
      const int given = x ? gdim : 0;
      const double* p = x ? x + begin * gdim : nullptr;
      if (given == 2) {
        for (int l = 0; l < n; ++l) var[0][l] = p[2 * l], var[1][l] = p[2 * l + 1];
      } else if (given == 3) {
        for (int l = 0; l < n; ++l) var[0][l] = p[3 * l], var[1][l] = p[3 * l + 1], var[2][l] = p[3 * l + 2];
      } else {
        for (int d = 0; d < given; ++d)
          for (int l = 0; l < n; ++l) var[d][l] = p[l * given + d];
      }
      for (int d = given; d < 3; ++d)
        for (int l = 0; l < n; ++l) var[d][l] = 0.0;
      for (int l = 0; l < n; ++l) var[3][l] = t;
      run_lanes<kLanes>(n, var, values + begin);
    }
  }

 private:
  template <int L>
  void run_lanes(int lanes, const double (&var)[4][L], double* result) const {
    const int n = L == 1 ? 1 : lanes;  // a compile-time 1: the loops vanish
    alignas(64) double s[kMaxSlots][L];
    alignas(64) double cond[kMaxConditions][L];
    for (const Instruction& in : code_) {
      double* v = s[in.slot];
      const double* w = s[in.slot + 1];
      switch (in.op) {
        case Op::variable:
          for (int l = 0; l < n; ++l) v[l] = var[in.var][l];
          break;
        case Op::constant:
          for (int l = 0; l < n; ++l) v[l] = in.a;
          break;
        case Op::var_mul:
          for (int l = 0; l < n; ++l) v[l] = var[in.var][l] * in.a + in.b;
          break;
        case Op::var_pow2:
          for (int l = 0; l < n; ++l) v[l] = var[in.var][l] * var[in.var][l];
          break;
        case Op::var_pow3:
          for (int l = 0; l < n; ++l) v[l] = var[in.var][l] * var[in.var][l] * var[in.var][l];
          break;
        case Op::var_pow4:
          for (int l = 0; l < n; ++l)
            v[l] = var[in.var][l] * var[in.var][l] * var[in.var][l] * var[in.var][l];
          break;
        case Op::add:
          for (int l = 0; l < n; ++l) v[l] += w[l];
          break;
        case Op::sub:
          for (int l = 0; l < n; ++l) v[l] -= w[l];
          break;
        case Op::mul:
          for (int l = 0; l < n; ++l) v[l] *= w[l];
          break;
        case Op::div:
          for (int l = 0; l < n; ++l) v[l] /= w[l];
          break;
        case Op::pow:
          for (int l = 0; l < n; ++l) v[l] = std::pow(v[l], w[l]);
          break;
        case Op::lt:
          for (int l = 0; l < n; ++l) v[l] = v[l] < w[l];
          break;
        case Op::le:
          for (int l = 0; l < n; ++l) v[l] = v[l] <= w[l];
          break;
        case Op::gt:
          for (int l = 0; l < n; ++l) v[l] = v[l] > w[l];
          break;
        case Op::ge:
          for (int l = 0; l < n; ++l) v[l] = v[l] >= w[l];
          break;
        case Op::eq:
          for (int l = 0; l < n; ++l) v[l] = v[l] == w[l];
          break;
        case Op::ne:
          for (int l = 0; l < n; ++l) v[l] = v[l] != w[l];
          break;
        case Op::land:
          for (int l = 0; l < n; ++l) v[l] = v[l] != 0 && w[l] != 0;
          break;
        case Op::lor:
          for (int l = 0; l < n; ++l) v[l] = v[l] != 0 || w[l] != 0;
          break;
        case Op::negate:
          for (int l = 0; l < n; ++l) v[l] = -v[l];
          break;
        case Op::sin:
          FEM_MATH(sin, v, n);
          break;
        case Op::cos:
          FEM_MATH(cos, v, n);
          break;
        case Op::tan:
          FEM_MATH(tan, v, n);
          break;
        case Op::asin:
          FEM_MATH(asin, v, n);
          break;
        case Op::acos:
          FEM_MATH(acos, v, n);
          break;
        case Op::atan:
          FEM_MATH(atan, v, n);
          break;
        case Op::sinh:
          FEM_MATH(sinh, v, n);
          break;
        case Op::cosh:
          FEM_MATH(cosh, v, n);
          break;
        case Op::tanh:
          FEM_MATH(tanh, v, n);
          break;
        case Op::exp:
          FEM_MATH(exp, v, n);
          break;
        case Op::log:
          FEM_MATH(log, v, n);
          break;
        case Op::log10:
          FEM_MATH(log10, v, n);
          break;
        // The next four as muparser defines them (MathImpl), through the same logarithm.
        case Op::log2:
          FEM_MATH(log, v, n);
          for (int l = 0; l < n; ++l) v[l] /= log_of_2_;
          break;
        case Op::asinh:
          for (int l = 0; l < n; ++l) v[l] = v[l] + std::sqrt(v[l] * v[l] + 1);
          FEM_MATH(log, v, n);
          break;
        case Op::acosh:
          for (int l = 0; l < n; ++l) v[l] = v[l] + std::sqrt(v[l] * v[l] - 1);
          FEM_MATH(log, v, n);
          break;
        case Op::atanh:
          for (int l = 0; l < n; ++l) v[l] = (1 + v[l]) / (1 - v[l]);
          FEM_MATH(log, v, n);
          for (int l = 0; l < n; ++l) v[l] = 0.5 * v[l];
          break;
        case Op::sqrt:
          for (int l = 0; l < n; ++l) v[l] = std::sqrt(v[l]);
          break;
        case Op::abs:
          for (int l = 0; l < n; ++l) v[l] = v[l] >= 0 ? v[l] : -v[l];
          break;
        case Op::sign:
          for (int l = 0; l < n; ++l) v[l] = v[l] < 0 ? -1.0 : v[l] > 0 ? 1.0 : 0.0;
          break;
        case Op::rint:
          for (int l = 0; l < n; ++l) v[l] = std::floor(v[l] + 0.5);
          break;
        case Op::call:
          call(in, s, n);
          break;
        case Op::call_multi:
          for (int l = 0; l < n; ++l) {
            double args[kMaxSlots];
            for (int k = 0; k < in.argc; ++k) args[k] = s[in.slot + k][l];
            v[l] = in.fun.call_multfun(args, in.argc);
          }
          break;
        case Op::if_:
          for (int l = 0; l < n; ++l) cond[in.var][l] = v[l];
          break;
        case Op::endif: {
          const double* c = cond[in.var];
          for (int l = 0; l < n; ++l) v[l] = c[l] != 0 ? v[l] : w[l];
          break;
        }
      }
    }
    std::copy_n(s[0], n, result);
  }

  template <int L>
  static void call(const Instruction& in, double (&s)[kMaxSlots][L], int n) {
    double* v = s[in.slot];
    switch (in.argc) {
      case 0:
        for (int l = 0; l < n; ++l) v[l] = in.fun.call_fun<0>();
        break;
      case 1:
        for (int l = 0; l < n; ++l) v[l] = in.fun.call_fun<1>(v[l]);
        break;
      case 2:
        for (int l = 0; l < n; ++l) v[l] = in.fun.call_fun<2>(v[l], s[in.slot + 1][l]);
        break;
      case 3:
        for (int l = 0; l < n; ++l) v[l] = in.fun.call_fun<3>(v[l], s[in.slot + 1][l], s[in.slot + 2][l]);
        break;
      default:
        for (int l = 0; l < n; ++l)
          v[l] = in.fun.call_fun<4>(v[l], s[in.slot + 1][l], s[in.slot + 2][l], s[in.slot + 3][l]);
        break;
    }
  }

  std::vector<Instruction> code_;
  double log_of_2_ = std::log(2.0);  // muparser's log((T)2), computed the same way
};

}  // namespace detail

namespace {

std::atomic<std::uint64_t> next_expression_id{1};

/// One thread's parser for one expression, with its variables.
struct LocalParser {
  mu::Parser parser;
  double x = 0, y = 0, z = 0, t = 0;
  explicit LocalParser(const std::string& text) {
    parser.DefineVar("x", &x);
    parser.DefineVar("y", &y);
    parser.DefineVar("z", &z);
    parser.DefineVar("t", &t);
    parser.DefineConst("pi", 3.14159265358979323846);
    parser.SetExpr(text);
  }
};

/// An '=' that is not part of ==, <=, >=, != assigns to a variable (muparser's =, +=, -=, ...).
bool assigns(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') continue;
    const char before = i > 0 ? text[i - 1] : ' ', after = i + 1 < text.size() ? text[i + 1] : ' ';
    if (after == '=') {
      ++i;
      continue;
    }
    if (before != '<' && before != '>' && before != '!') return true;
  }
  return false;
}

std::string point_words(const double* x, int gdim) {
  if (!x) return "";
  static constexpr const char* names[] = {"x", "y", "z"};
  std::string n, v;
  for (int d = 0; d < gdim; ++d) {
    n += fmt::format("{}{}", d ? ", " : "", names[d]);
    v += fmt::format("{}{:.6g}", d ? ", " : "", x[d]);
  }
  return gdim == 1 ? fmt::format(" at x = {}", v) : fmt::format(" at ({}) = ({})", n, v);
}

}  // namespace

Expression::Expression(std::string option, std::string text, int gdim, Admissible admissible)
    : state_(std::make_shared<State>()) {
  state_->option = std::move(option);
  state_->text = std::move(text);
  state_->gdim = gdim;
  state_->id = next_expression_id++;
  state_->admissible = std::move(admissible);
  if (assigns(state_->text))
    throw Error(
        fmt::format("{} '{}': '=' assigns to a variable inside the expression (write a comparison as "
                    "'==')",
                    state_->option, state_->text));
  double value = 0;
  try {
    LocalParser p(state_->text);
    value = p.parser.Eval();
    // muparser's comma operator keeps the last of a list: "1,5" would silently be 5. An
    // Expression is one value; a vector option splits its components before it gets here.
    if (const int given = p.parser.GetNumResults(); given != 1)
      throw Error(
          fmt::format("{} '{}': expected 1 value, got {} separated by commas (a list belongs "
                      "to a vector option only)",
                      state_->option, state_->text, given));
    const auto used = p.parser.GetUsedVar();
    state_->constant = used.empty();
    state_->uses_t = used.count("t") > 0;
    const double* const vars[4] = {&p.x, &p.y, &p.z, &p.t};
    state_->program = detail::ExpressionProgram::compile(p.parser, vars);
  } catch (const mu::Parser::exception_type& e) {
    throw Error(fmt::format("{} '{}': bad expression: {}", state_->option, state_->text, e.GetMsg()));
  }
  // A constant is checked now, before any work; the others where they are evaluated.
  if (state_->constant) {
    if (state_->program) state_->program->run(1, nullptr, gdim, 0.0, &value);
    if (!std::isfinite(value) || !state_->admissible.contains(value)) reject(value, nullptr, 0.0);
  }
}

void Expression::reject(double value, const double* x, double t) const {
  const State& s = *state_;
  const std::string what = std::isnan(value)   ? std::string("is NaN")
                           : std::isinf(value) ? fmt::format("is {}infinite", value < 0 ? "-" : "+")
                                               : fmt::format("is {:.6g}", value);
  throw Error(fmt::format("{} = '{}' {}{}{}{}", s.option, s.text, what, point_words(x, s.gdim),
                          s.uses_t ? fmt::format(", t = {:.6g}", t) : "",
                          std::isfinite(value) && !s.admissible.words.empty() ? ": " + s.admissible.words
                          : std::isfinite(value)                              ? ""
                                                                              : ": a value must be finite"));
}

double Expression::parse_and_evaluate(const double* x, double t) const {
  thread_local std::unordered_map<std::uint64_t, std::unique_ptr<LocalParser>> parsers;
  auto& p = parsers[state_->id];
  if (!p) p = std::make_unique<LocalParser>(state_->text);
  const int d = x ? state_->gdim : 0;  // x == nullptr: a constant's value
  p->x = d > 0 ? x[0] : 0.0;
  p->y = d > 1 ? x[1] : 0.0;
  p->z = d > 2 ? x[2] : 0.0;
  p->t = t;
  return p->parser.Eval();
}

double Expression::operator()(const double* x) const {
  const double t = state_->t.load(std::memory_order_relaxed);
  double v;
  if (state_->program)
    state_->program->run(1, x, state_->gdim, t, &v);
  else
    v = parse_and_evaluate(x, t);
  if (!std::isfinite(v) || !state_->admissible.contains(v)) [[unlikely]]
    reject(v, x, t);
  return v;
}

void Expression::evaluate(std::size_t count, const double* x, double* values) const {
  const State& s = *state_;
  const double t = s.t.load(std::memory_order_relaxed);
  const int gdim = s.gdim;
  if (s.program) {
    s.program->run(count, x, gdim, t, values);
  } else {
    for (std::size_t i = 0; i < count; ++i) values[i] = parse_and_evaluate(x + i * gdim, t);
  }
  // The checks: one branch-free pass that vectorises (|v| <= max is false for NaN and ±inf;
  // open bounds as closed ones at the next double), the first bad point named when there is one.
  const Admissible& a = s.admissible;
  const double lo = a.lo_open ? std::nextafter(a.lo, HUGE_VAL) : a.lo;
  const double hi = a.hi_open ? std::nextafter(a.hi, -HUGE_VAL) : a.hi;
  constexpr double max = std::numeric_limits<double>::max();
  long bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = values[i];
    bad += !((std::abs(v) <= max) & (v >= lo) & (v <= hi));
  }
  if (bad) [[unlikely]]
    for (std::size_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i]) || !s.admissible.contains(values[i])) reject(values[i], x + i * gdim, t);
}

assembly::Function Expression::function() const {
  return [e = *this](const double* x) { return e(x); };
}

assembly::BatchFunction Expression::batch_function() const {
  return [e = *this](std::size_t count, const double* x, double* values) { e.evaluate(count, x, values); };
}

assembly::VectorFunction Expression::vector_function() const {
  return [e = *this](const double* x, double* v) { v[0] = e(x); };
}

namespace {
struct LawParser {
  mu::Parser parser;
  double u = 0;
  explicit LawParser(const std::string& text) {
    parser.DefineVar("u", &u);
    parser.DefineConst("pi", 3.14159265358979323846);
    parser.SetExpr(text);
  }
};
}  // namespace

Law::Law(std::string option, std::string text, Admissible admissible) {
  auto state = std::make_shared<State>();
  state->option = std::move(option);
  state->text = std::move(text);
  state->id = next_expression_id++;
  state->admissible = std::move(admissible);
  if (assigns(state->text))
    throw Error(
        fmt::format("{} '{}': '=' assigns to a variable inside the expression (write a comparison as '==')",
                    state->option, state->text));
  try {
    mu::Parser p;
    double u = 0;
    p.DefineVar("u", &u);
    p.DefineConst("pi", 3.14159265358979323846);
    p.SetExpr(state->text);
    p.Eval();
    if (const int given = p.GetNumResults(); given != 1)
      throw Error(fmt::format("{} '{}': expected 1 value, got {} separated by commas", state->option,
                              state->text, given));
  } catch (const mu::Parser::exception_type& e) {
    throw Error(fmt::format("{} '{}': bad expression in u: {}", state->option, state->text, e.GetMsg()));
  }
  state_ = std::move(state);
}

double Law::raw(double u) const {
  // One parser per thread and law (the assembly calls from OpenMP threads).
  thread_local std::unordered_map<std::uint64_t, std::unique_ptr<LawParser>> parsers;
  auto& p = parsers[state_->id];
  if (!p) p = std::make_unique<LawParser>(state_->text);
  p->u = u;
  return p->parser.Eval();
}

double Law::operator()(double u) const {
  const double v = raw(u);
  if (!std::isfinite(v) || !state_->admissible.contains(v))
    throw Error(fmt::format(
        "{} '{}' at u = {:.6g} is {:.6g}{}", state_->option, state_->text, u, v,
        state_->admissible.words.empty() ? std::string(": not finite") : ": " + state_->admissible.words));
  return v;
}

double Law::derivative(double u) const {
  const double h = 1e-3 * std::max(1.0, std::abs(u));
  const double d = (raw(u - 2 * h) - 8 * raw(u - h) + 8 * raw(u + h) - raw(u + 2 * h)) / (12 * h);
  if (!std::isfinite(d))
    throw Error(
        fmt::format("{} '{}': its derivative at u = {:.6g} is not finite", state_->option, state_->text, u));
  return d;
}

}  // namespace fem::expression
