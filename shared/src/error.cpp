// Messages of the fem::Error family, composed once here so every library words them alike.
#include "fem/error.hpp"

#include <fmt/ranges.h>

namespace fem {

namespace {
std::string key_error_message(const std::string& key, const std::vector<std::string>& nearest) {
  std::string msg = fmt::format("no store entry with key '{}'", key);
  if (!nearest.empty()) msg += fmt::format(" (similar keys present: '{}')", fmt::join(nearest, "', '"));
  return msg;
}
}  // namespace

KeyError::KeyError(std::string key, std::vector<std::string> nearest)
    : Error(key_error_message(key, nearest)), key_(std::move(key)), nearest_(std::move(nearest)) {}

namespace {
std::string cycle_message(const std::vector<std::string>& cycle, const std::string& what) {
  std::string chain;
  for (const std::string& k : cycle) chain += fmt::format("{}'{}'", chain.empty() ? "" : " -> ", k);
  return fmt::format("{}: {}", what, chain);
}
}  // namespace

CycleError::CycleError(std::vector<std::string> cycle, const std::string& what)
    : InvalidArgument(cycle_message(cycle, what)), cycle_(std::move(cycle)) {}

TypeError::TypeError(std::string key, std::string expected, std::string actual)
    : Error(fmt::format("store key '{}' holds a value of type {}, not {}", key, actual, expected)),
      key_(std::move(key)),
      expected_(std::move(expected)),
      actual_(std::move(actual)) {}

InvalidKey::InvalidKey(std::string key, const std::string& reason)
    : Error(fmt::format("invalid store key '{}': {}", key, reason)), key_(std::move(key)) {}

namespace {
std::string parse_message(const std::string& file, ParseError::Position kind, std::uint64_t pos,
                          const std::string& message) {
  switch (kind) {
    case ParseError::Position::line:
      return fmt::format("{}:{}: {}", file, pos, message);
    case ParseError::Position::byte:
      return fmt::format("{}: byte {}: {}", file, pos, message);
    case ParseError::Position::none:
      break;
  }
  return fmt::format("{}: {}", file, message);
}
}  // namespace

ParseError::ParseError(std::string file, Position kind, std::uint64_t position, const std::string& message)
    : Error(parse_message(file, kind, position, message)),
      file_(std::move(file)),
      kind_(kind),
      position_(position) {}

NotCompiled::NotCompiled(std::string feature, const std::string& what_for)
    : Error(fmt::format("{} needs {}, which this build of fem was compiled without", what_for, feature)),
      feature_(std::move(feature)) {}

namespace detail {
void throw_invalid_argument(const char* file, int line, const char* condition, const std::string& message) {
  throw InvalidArgument(message, fmt::format("{}:{} ({})", file, line, condition));
}
}  // namespace detail

}  // namespace fem
