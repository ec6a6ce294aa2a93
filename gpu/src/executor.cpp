// Host contexts (the host twin and the debug device) and the Executor factories.
#include "fem/gpu/executor.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "fem/error.hpp"
#include "fem/memory.hpp"

namespace fem::gpu {
namespace {

/// Host memory with memcpy "copies". As the debug device it poisons fresh allocations, so code
/// that reads device memory it never wrote sees garbage, as it would on a GPU, and it knows its
/// allocations, so that an op tells "device" arrays from host ones as on a GPU (holds()).
class HostContext final : public GpuContext {
 public:
  explicit HostContext(bool poison) : poison_(poison) {}
  void* allocate(std::size_t bytes) override {
    // Big tables are probed at random: 2 MB pages cut the TLB misses, and populating them in
    // one call avoids a page fault per 4 KB (fem/memory.hpp).
    constexpr std::size_t huge = std::size_t{2} << 20;
    const std::size_t align = bytes >= huge ? huge : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    prefault(p, bytes);
    if (poison_) {
      std::memset(p, 0xa5, bytes);
      const std::lock_guard lock(mutex_);
      allocations_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
    }
    return p;
  }
  void deallocate(void* ptr) noexcept override {
    if (poison_ && ptr) {
      const std::lock_guard lock(mutex_);
      allocations_.erase(reinterpret_cast<std::uintptr_t>(ptr));
    }
    std::free(ptr);
  }
  bool holds(const void* p) const noexcept override {
    if (!poison_ || !p) return false;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::lock_guard lock(mutex_);
    auto it = allocations_.upper_bound(at);
    if (it == allocations_.begin()) return false;
    --it;
    return at < it->first + std::max<std::size_t>(it->second, 1);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override {
    std::memmove(dst, src, bytes);
  }
  void fill_bytes(void* dst, int byte, std::size_t bytes) override { std::memset(dst, byte, bytes); }
  void synchronize() override {}
  void* stream() const noexcept override { return nullptr; }
  DeviceProperties properties() const override {
    DeviceProperties p;
    p.name = poison_ ? "debug device (host emulation)" : "host";
    return p;
  }
  bool on_host() const noexcept override { return true; }

 private:
  bool poison_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> allocations_;  ///< debug device: start -> bytes
};

}  // namespace

// Defined in cuda_context.cu, or in cuda_stub.cpp without CUDA.
std::shared_ptr<GpuContext> make_cuda_context(int device);

Executor Executor::host() {
  static const auto context = std::make_shared<HostContext>(false);
  return Executor(Kind::host, context);
}

Executor Executor::debug_device() {
  return Executor(Kind::debug_device, std::make_shared<HostContext>(true));
}

Executor Executor::cuda(int device) { return Executor(Kind::cuda, make_cuda_context(device)); }

Executor Executor::cuda(std::shared_ptr<GpuContext> context) {
  FEM_EXPECTS(context != nullptr, "Executor::cuda needs a context");
  FEM_EXPECTS(!context->on_host(),
              "Executor::cuda was given a host context; use Executor::host() or debug_device()");
  return Executor(Kind::cuda, std::move(context));
}

namespace detail {
void check_transfer(const char* what, std::size_t offset, std::size_t count, std::size_t size) {
  FEM_EXPECTS(offset + count <= size, "{} of {} values at offset {} does not fit a buffer of {}", what, count,
              offset, size);
}
}  // namespace detail

std::string Executor::name() const {
  switch (kind_) {
    case Kind::host:
      return "host";
    case Kind::debug_device:
      return "debug-device";
    case Kind::cuda:
      return "cuda (" + context_->properties().name + ")";
  }
  return "?";
}

}  // namespace fem::gpu
