// Test plug-in "writer": a kernel library that publishes and erases entries.
#include <typeinfo>

#include "fem/store.hpp"
#include "payload.hpp"

extern "C" {

const void* writer_store_address() { return &fem::store(); }
const void* writer_payload_typeinfo() { return &typeid(plugin::Payload); }

unsigned long long writer_put(const char* key, double value, int n) {
  return fem::store().put(key, plugin::Payload{std::vector<double>(n, value), "from writer"});
}

int writer_erase(const char* key) { return fem::store().erase(key) ? 1 : 0; }

unsigned long long writer_version(const char* key) { return fem::store().version(key); }

// Reads back what the reader plug-in published.
double writer_read_sum(const char* key) {
  double s = 0;
  for (double v : fem::store().get<plugin::Payload>(key)->values) s += v;
  return s;
}
}
