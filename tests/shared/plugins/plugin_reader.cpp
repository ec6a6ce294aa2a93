// Test plug-in "reader": a second kernel library that reads entries by type.
#include <memory>
#include <string>
#include <typeinfo>

#include "fem/array.hpp"
#include "fem/store.hpp"
#include "payload.hpp"

namespace {
std::shared_ptr<const plugin::Payload> held;
std::string message;
}  // namespace

extern "C" {

const void* reader_store_address() { return &fem::store(); }
const void* reader_payload_typeinfo() { return &typeid(plugin::Payload); }

// Typed get; returns the number of values (or -1 when absent) and their sum.
int reader_get(const char* key, double* sum) {
  auto p = fem::store().find<plugin::Payload>(key);
  if (!p) return -1;
  *sum = 0;
  for (double v : p->values) *sum += v;
  return static_cast<int>(p->values.size());
}

// Typed get only (for the benchmark of a get across the dlopen boundary).
int reader_get_only(const char* key) {
  return static_cast<int>(fem::store().get<plugin::Payload>(key)->values.size());
}

int reader_contains(const char* key) { return fem::store().contains(key) ? 1 : 0; }
unsigned long long reader_version(const char* key) { return fem::store().version(key); }

// Keep a reference to the value, as a kernel would while it works on it.
void reader_hold(const char* key) { held = fem::store().get<plugin::Payload>(key); }
double reader_held_first() { return held ? held->values.at(0) : -1.0; }
void reader_release() { held.reset(); }

// Get with the wrong type: returns the error message.
const char* reader_get_wrong_type(const char* key) {
  try {
    fem::store().get<fem::Array<double>>(key);
    message = "no error";
  } catch (const fem::TypeError& e) {
    message = e.what();
  }
  return message.c_str();
}

unsigned long long reader_put(const char* key, double value) {
  return fem::store().put(key, plugin::Payload{{value, value}, "from reader"});
}
}
