// The one error channel of the C ABIs (internal to the libraries that implement them).
//
// Every C entry point of every kernel library runs its body through guarded(): exceptions of
// the fem::Error family become fem_status codes, and the message goes to the one thread-local
// error slot that fem_last_error() (libfem_shared) reads. The slot lives in libfem_shared only;
// the kernel libraries reach it through the exported set_last_error/clear_last_error, so a
// failure in libfem_solve is readable through fem_last_error() however the libraries were
// loaded (dlopen with RTLD_LOCAL included).
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "fem/c_api.h"
#include "fem/error.hpp"

namespace fem::capi {

/// This thread's message for fem_last_error() (libfem_shared).
__attribute__((visibility("default"))) void set_last_error(std::string message) noexcept;
/// An empty message: the call succeeded.
__attribute__((visibility("default"))) void clear_last_error() noexcept;

/// Record `message` and return `status` (for failures that are not exceptions).
inline int fail(int status, std::string message) noexcept {
  set_last_error(std::move(message));
  return status;
}

/// The status of an exception of the fem::Error family (most derived classes first).
inline int status_of(const std::exception& e) noexcept {
  if (dynamic_cast<const KeyError*>(&e)) return FEM_ERR_NOT_FOUND;
  if (dynamic_cast<const TypeError*>(&e)) return FEM_ERR_WRONG_TYPE;
  if (dynamic_cast<const InvalidKey*>(&e)) return FEM_ERR_INVALID_KEY;
  if (dynamic_cast<const InvalidArgument*>(&e)) return FEM_ERR_INVALID_ARGUMENT;
  if (dynamic_cast<const ParseError*>(&e)) return FEM_ERR_PARSE;
  if (dynamic_cast<const NumericalError*>(&e)) return FEM_ERR_NUMERICAL;
  if (dynamic_cast<const NotCompiled*>(&e)) return FEM_ERR_NOT_COMPILED;
  return FEM_ERR_INTERNAL;
}

/// Run f() with the error slot cleared first; its int result (or FEM_OK for a void f) is the
/// status. Nothing escapes: exceptions become codes with their what() as the message.
template <class F>
int guarded(F&& f) noexcept {
  try {
    clear_last_error();
    if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
      std::forward<F>(f)();
      return FEM_OK;
    } else {
      return static_cast<int>(std::forward<F>(f)());
    }
  } catch (const std::bad_alloc& e) {
    return fail(FEM_ERR_INTERNAL, std::string("out of memory: ") + e.what());
  } catch (const std::exception& e) {
    return fail(status_of(e), e.what());
  } catch (...) {
    return fail(FEM_ERR_INTERNAL, "unknown error");
  }
}

/// A key argument: InvalidArgument for a null pointer (`what` names the argument).
inline std::string_view key_arg(const char* key, const char* what = "key") {
  FEM_EXPECTS(key != nullptr, "{} is a null pointer", what);
  return key;
}

}  // namespace fem::capi
