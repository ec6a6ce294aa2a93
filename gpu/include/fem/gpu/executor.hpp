// Where GPU-library data lives and its bulk operations run. Passed explicitly to every table and
// builder (never a global device switch):
//   Executor::host()          the host twin: OpenMP over host memory, no copies;
//   Executor::debug_device()  the device code path on the CPU: separate "device" buffers and
//                             explicit copies, so CI checks the copy discipline without a GPU;
//   Executor::cuda()          a CUDA device, through an injected GpuContext.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>

namespace fem::gpu {

struct DeviceProperties {
  std::string name;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;
  double memory_bandwidth_gbs = 0;  ///< theoretical peak, from the memory clock and bus width
};

/// The services a device gives the GPU library: a stream, allocation, copies and properties.
/// Every operation is ordered on the context's stream; synchronize() waits for all of them.
/// Inject your own (e.g. your simulation's stream and pool allocator) through Executor::cuda().
namespace detail {
/// Whether p points into CUDA device (or managed) memory: cudaPointerGetAttributes; false
/// without CUDA or for host memory.
bool cuda_device_pointer(const void* p) noexcept;
}  // namespace detail

class GpuContext {
 public:
  virtual ~GpuContext() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) noexcept = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill_bytes(void* dst, int byte, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  /// The cudaStream_t, or nullptr for host contexts.
  virtual void* stream() const noexcept = 0;
  virtual DeviceProperties properties() const = 0;
  /// True for the host twin and the debug device.
  virtual bool on_host() const noexcept = 0;
  /// The CUDA device of the stream: every call on the context and every kernel the library
  /// queues on it makes it the calling thread's current device first (and leaves it so), so
  /// one thread may drive contexts on several devices and several threads one context. -1
  /// (host contexts, or an injected context that manages the device itself): leave the
  /// current device alone.
  virtual int device() const noexcept { return -1; }
  /// Page-locked host memory for staging copies: a copy between it and the device runs
  /// asynchronously at the bus's speed, where the driver stages pageable memory through a
  /// buffer of its own and returns only when done. Host contexts: ordinary memory.
  virtual void* allocate_pinned(std::size_t bytes) { return ::operator new(bytes); }
  /// Whether p points into this context's executor memory (so that an op takes it in place
  /// rather than copying it over): device memory for CUDA contexts, the allocations of the
  /// debug device, nothing for the host twin (whose memory is the host's).
  virtual bool holds(const void* p) const noexcept { return !on_host() && detail::cuda_device_pointer(p); }
  virtual void deallocate_pinned(void* ptr) noexcept { ::operator delete(ptr); }
};

class Executor {
 public:
  enum class Kind { host, debug_device, cuda };

  static Executor host();
  static Executor debug_device();
  /// A context on CUDA device `device`, with a stream of its own. Throws NotCompiled without
  /// CUDA support, CudaError when no device is usable.
  static Executor cuda(int device = 0);
  /// An executor over an injected context.
  static Executor cuda(std::shared_ptr<GpuContext> context);

  Kind kind() const noexcept { return kind_; }
  /// True when data must be copied to and from the executor (debug device, CUDA).
  bool separate_memory() const noexcept { return kind_ != Kind::host; }
  bool runs_on_host() const noexcept { return kind_ != Kind::cuda; }
  GpuContext& context() const noexcept { return *context_; }
  const std::shared_ptr<GpuContext>& context_ptr() const noexcept { return context_; }
  std::string name() const;

 private:
  Executor(Kind kind, std::shared_ptr<GpuContext> context) : kind_(kind), context_(std::move(context)) {}
  Kind kind_;
  std::shared_ptr<GpuContext> context_;
};

/// True when this build has CUDA and a device answers. `reason` says why not.
bool cuda_available(std::string* reason = nullptr) noexcept;

namespace detail {
/// Throws InvalidArgument unless [offset, offset + count) fits in `size` (kept out of line so
/// CUDA sources need not see the error machinery).
void check_transfer(const char* what, std::size_t offset, std::size_t count, std::size_t size);
}  // namespace detail

namespace detail {
enum class Memory { executor, pinned };

/// An array allocated from a context (its executor memory, or page-locked host memory) and freed
/// through the same context, which it keeps alive. Move-only.
template <class T, Memory M>
class ContextArray {
 public:
  ContextArray() = default;
  ContextArray(const Executor& exec, std::size_t n)
      : context_(exec.context_ptr()),
        data_(n ? static_cast<T*>(allocate(n * sizeof(T))) : nullptr),
        size_(n) {}
  ContextArray(ContextArray&& o) noexcept
      : context_(std::move(o.context_)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  ContextArray& operator=(ContextArray&& o) noexcept {
    if (this != &o) {
      reset();
      context_ = std::move(o.context_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ContextArray(const ContextArray&) = delete;
  ContextArray& operator=(const ContextArray&) = delete;
  ~ContextArray() { reset(); }

  void reset() noexcept {
    if (data_) {
      if constexpr (M == Memory::pinned)
        context_->deallocate_pinned(data_);
      else
        context_->deallocate(data_);
    }
    data_ = nullptr;
    size_ = 0;
  }
  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }

 protected:
  void* allocate(std::size_t bytes) {
    return M == Memory::pinned ? context_->allocate_pinned(bytes) : context_->allocate(bytes);
  }
  std::shared_ptr<GpuContext> context_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};
}  // namespace detail

/// An array in an executor's memory (device memory for CUDA). Move-only; freed through the
/// context it came from.
template <class T>
class DeviceBuffer : public detail::ContextArray<T, detail::Memory::executor> {
  using Base = detail::ContextArray<T, detail::Memory::executor>;

 public:
  using Base::Base;

  /// Stream-ordered copies; the host side must stay alive until the stream reaches them.
  void upload(std::span<const T> host, std::size_t offset = 0) {
    detail::check_transfer("upload", offset, host.size(), this->size_);
    if (!host.empty()) this->context_->copy_to_device(this->data_ + offset, host.data(), host.size_bytes());
  }
  void download(std::span<T> host, std::size_t offset = 0) const {
    detail::check_transfer("download", offset, host.size(), this->size_);
    if (!host.empty()) this->context_->copy_to_host(host.data(), this->data_ + offset, host.size_bytes());
  }
};

/// A host array in page-locked memory of an executor's context (GpuContext::allocate_pinned),
/// for the copies a repeated operation makes every time. Move-only.
template <class T>
class PinnedBuffer : public detail::ContextArray<T, detail::Memory::pinned> {
  using Base = detail::ContextArray<T, detail::Memory::pinned>;

 public:
  using Base::Base;
  std::span<T> span() const noexcept { return {this->data_, this->size_}; }
};

}  // namespace fem::gpu
