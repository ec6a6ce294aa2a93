// A type defined by the test plug-ins, not by fem: typed gets across dlopen(RTLD_LOCAL)
// boundaries must work for user types too.
#pragma once
#include <string>
#include <vector>

#include "fem/type_name.hpp"

namespace plugin {
struct Payload {
  std::vector<double> values;
  std::string label;
  std::size_t bytes() const { return values.capacity() * sizeof(double) + label.capacity(); }
};
}  // namespace plugin

FEM_TYPE_NAME(plugin::Payload, "plugin::Payload");
