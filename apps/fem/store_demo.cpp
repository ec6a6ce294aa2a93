// fem store-demo: publish, derive, hit, replace and list, to show the store at work.
//   fem store-demo
#include <fmt/core.h>

#include <numeric>

#include "commands.hpp"
#include "fem/array.hpp"
#include "fem/store.hpp"

namespace fem::app {

void add_store_demo(CLI::App& app) {
  auto* cmd = app.add_subcommand("store-demo", "exercise the shared store and print its contents");
  cmd->callback([] {
    auto& s = fem::store();
    auto v = s.put("demo/x", Array<double>(std::vector<double>(1000, 1.0)));
    auto sum_of_x = [&] {
      const auto x = s.get<Array<double>>("demo/x");
      return Array<double>(std::vector<double>{std::accumulate(x->data().begin(), x->data().end(), 0.0)});
    };
    for (int i = 0; i < 3; ++i) s.get_or_compute<Array<double>>("demo/x#sum", {{"demo/x", v}}, sum_of_x);
    v = s.put("demo/x", Array<double>(std::vector<double>(500, 3.0)));  // drops demo/x#sum
    const double sum = (*s.get_or_compute<Array<double>>("demo/x#sum", {{"demo/x", v}}, sum_of_x))[0];

    fmt::print("{:<16} {:<18} {:>8} {:>10} {:>6}\n", "key", "type", "version", "bytes", "cache");
    for (const auto& e : s.list())
      fmt::print("{:<16} {:<18} {:>8} {:>10} {:>6}\n", e.key, e.type, e.version, e.bytes,
                 e.evictable ? "yes" : "no");
    const auto st = s.stats();
    fmt::print("\nsum = {} (computed {} times for 3+1 requests over 2 versions)\n", sum, st.computes);
    fmt::print("hits {}, misses {}, invalidations {}, entries {}, bytes {}\n", st.hits, st.misses,
               st.invalidations, st.entries, st.bytes);
  });
}

}  // namespace fem::app
