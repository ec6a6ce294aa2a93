// Stable type tags for store entries. A typed get compares these names, never typeid: type_info
// objects are not reliably unique across libraries loaded with dlopen(RTLD_LOCAL).
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>

namespace fem {

/// Specialise (through FEM_TYPE_NAME) to make a type storable. The primary template has no
/// `value`, so storing an unregistered type fails at compile time.
template <class T>
struct type_name {};

/// A type that can live in the store: it has a registered, stable name.
template <class T>
concept Storable = requires {
  { type_name<T>::value } -> std::convertible_to<std::string_view>;
};

/// Where a stored value's memory lives. Device entries (GPU tables, device meshes) count in the
/// store's byte total like any other; stats() reports how many of those bytes are on a device.
enum class Residency : unsigned char { host, device };

/// A value's residency: its `residency()` member if it has one, else host.
template <class T>
Residency residency_of(const T& value) {
  if constexpr (requires {
                  { value.residency() } -> std::convertible_to<Residency>;
                })
    return value.residency();
  else
    return Residency::host;
}

/// Bytes held by a stored value: its `bytes()` member if it has one, else sizeof.
template <class T>
std::size_t bytes_of(const T& value) {
  if constexpr (requires {
                  { value.bytes() } -> std::convertible_to<std::size_t>;
                })
    return value.bytes();
  else
    return sizeof(T);
}

}  // namespace fem

/// Register a type with a stable name; use at global scope, once, in the type's header:
///   FEM_TYPE_NAME(my::Field, "my::Field");
#define FEM_TYPE_NAME(Type, Name)                   \
  template <>                                       \
  struct fem::type_name<Type> {                     \
    static constexpr std::string_view value = Name; \
  }
