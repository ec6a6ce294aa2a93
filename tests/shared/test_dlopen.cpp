// The central property: two kernel libraries, built as separate .so files that each link
// libfem_shared, loaded at run time with dlopen(RTLD_NOW | RTLD_LOCAL), see one store.
// This executable does not link libfem_shared itself: only the plug-ins bring it in.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

class Library {
 public:
  explicit Library(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    if (!handle_) error_ = dlerror();
  }
  // Kept loaded on purpose: values in the store may have deleters in these libraries.
  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  template <class F>
  F* get(const char* name) const {
    void* p = dlsym(handle_, name);
    EXPECT_NE(p, nullptr) << name << ": " << dlerror();
    return reinterpret_cast<F*>(p);
  }

 private:
  void* handle_;
  std::string error_;
};

using ull = unsigned long long;

TEST(Dlopen, TwoKernelLibrariesSeeOneStore) {
  Library writer(FEM_TEST_WRITER_PLUGIN), reader(FEM_TEST_READER_PLUGIN);
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_TRUE(reader.ok()) << reader.error();

  // Their symbols are local: neither library's functions leak into the other's scope.
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "writer_put"), nullptr);

  EXPECT_EQ(writer.get<const void*()>("writer_store_address")(),
            reader.get<const void*()>("reader_store_address")());

  // Put by one, typed get by the other, same version on both sides.
  const ull v1 = writer.get<ull(const char*, double, int)>("writer_put")("shared/x", 2.5, 4);
  double sum = 0;
  EXPECT_EQ(reader.get<int(const char*, double*)>("reader_get")("shared/x", &sum), 4);
  EXPECT_DOUBLE_EQ(sum, 10.0);
  EXPECT_EQ(reader.get<ull(const char*)>("reader_version")("shared/x"), v1);
  EXPECT_EQ(writer.get<ull(const char*)>("writer_version")("shared/x"), v1);

  // A replace by one is a new version for both.
  const ull v2 = writer.get<ull(const char*, double, int)>("writer_put")("shared/x", 1.0, 3);
  EXPECT_GT(v2, v1);
  EXPECT_EQ(reader.get<ull(const char*)>("reader_version")("shared/x"), v2);
  EXPECT_EQ(reader.get<int(const char*, double*)>("reader_get")("shared/x", &sum), 3);

  // Wrong type across the boundary: both type names in the message.
  const std::string msg = reader.get<const char*(const char*)>("reader_get_wrong_type")("shared/x");
  EXPECT_NE(msg.find("plugin::Payload"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fem::Array<f64>"), std::string::npos) << msg;

  // An erase by one is seen by the other; a value it holds stays alive.
  reader.get<void(const char*)>("reader_hold")("shared/x");
  EXPECT_EQ(writer.get<int(const char*)>("writer_erase")("shared/x"), 1);
  EXPECT_EQ(reader.get<int(const char*)>("reader_contains")("shared/x"), 0);
  EXPECT_EQ(reader.get<int(const char*, double*)>("reader_get")("shared/x", &sum), -1);
  EXPECT_DOUBLE_EQ(reader.get<double()>("reader_held_first")(), 1.0);
  reader.get<void()>("reader_release")();

  // And the other direction.
  reader.get<ull(const char*, double)>("reader_put")("shared/y", 3.0);
  EXPECT_DOUBLE_EQ(writer.get<double(const char*)>("writer_read_sum")("shared/y"), 6.0);

  // For the record: the type_info objects may or may not be distinct; the store does not care.
  const void* ta = writer.get<const void*()>("writer_payload_typeinfo")();
  const void* tb = reader.get<const void*()>("reader_payload_typeinfo")();
  RecordProperty("typeinfo_distinct", ta != tb ? "yes" : "no");
}

}  // namespace
