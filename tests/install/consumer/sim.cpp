// Uses the installed headers and libraries: put, derive, read back.
#include <cstdio>
#include <fem/shared.hpp>

int main() {
  auto& s = fem::store();
  const auto v = s.put("sim/x", fem::Array<double>(std::vector<double>{1, 2, 3}));
  auto twice = s.get_or_compute<fem::Array<double>>("sim/x#twice", {{"sim/x", v}}, [&] {
    auto x = s.get<fem::Array<double>>("sim/x")->vector();
    for (double& xi : x) xi *= 2;
    return fem::Array<double>(std::move(x));
  });
  if ((*twice)[2] != 6.0) return 1;
  std::printf("installed fem works: %zu entries\n", s.stats().entries);
  return 0;
}
