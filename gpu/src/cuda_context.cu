// The CUDA GpuContext: one device, one stream, stream-ordered allocation (cudaMallocAsync) and
// copies, device properties.
#include <cstdint>
#include <memory>
#include <string>

#include "cuda_try.cuh"
#include "fem/gpu/executor.hpp"

namespace fem::gpu {
namespace {

class CudaContext final : public GpuContext {
 public:
  explicit CudaContext(int device) : device_(device) {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // A memory pool of the context's own, which keeps what cudaFreeAsync returns (up to a
    // quarter of the device's memory) instead of handing it back to the driver at every
    // synchronization: the work buffers of a repeated assembly or insert are then served from
    // the pool, not allocated anew. Its own, so that no other user of the device's default
    // pool sees the threshold; destroyed, with all it keeps, with the context.
    try {
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.handleTypes = cudaMemHandleTypeNone;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device_;
      FEM_CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
      std::size_t free = 0, total = 0;
      FEM_CUDA_TRY(cudaMemGetInfo(&free, &total));
      std::uint64_t keep = total / 4;
      FEM_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
    } catch (...) {
      if (pool_) cudaMemPoolDestroy(pool_);
      cudaStreamDestroy(stream_);
      throw;
    }
  }
  ~CudaContext() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    cudaMemPoolDestroy(pool_);
  }
  void* allocate(std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    void* p = nullptr;
    FEM_CUDA_TRY(cudaMallocFromPoolAsync(&p, bytes, pool_, stream_));
    return p;
  }
  void deallocate(void* ptr) noexcept override {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != device_) cudaSetDevice(device_);
    cudaFreeAsync(ptr, stream_);
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void fill_bytes(void* dst, int byte, std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaMemsetAsync(dst, byte, bytes, stream_));
  }
  void synchronize() override {
    const detail::DeviceScope on(device_);
    FEM_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  int device() const noexcept override { return device_; }
  bool holds(const void* p) const noexcept override {
    cudaPointerAttributes a{};
    if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // clear the error of an unknown pointer
      return false;
    }
    return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) && a.device == device_;
  }
  void* allocate_pinned(std::size_t bytes) override {
    const detail::DeviceScope on(device_);
    void* p = nullptr;
    FEM_CUDA_TRY(cudaMallocHost(&p, bytes));
    return p;
  }
  void deallocate_pinned(void* ptr) noexcept override { cudaFreeHost(ptr); }
  void* stream() const noexcept override { return stream_; }
  DeviceProperties properties() const override {
    cudaDeviceProp p{};
    FEM_CUDA_TRY(cudaGetDeviceProperties(&p, device_));
    int clock_khz = 0, bus_bits = 0;
    FEM_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device_));
    FEM_CUDA_TRY(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_));
    DeviceProperties out;
    out.name = p.name;
    out.compute_major = p.major;
    out.compute_minor = p.minor;
    out.multiprocessors = p.multiProcessorCount;
    out.total_memory = p.totalGlobalMem;
    out.memory_bandwidth_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // double data rate
    return out;
  }
  bool on_host() const noexcept override { return false; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace

std::shared_ptr<GpuContext> make_cuda_context(int device) {
  int count = 0;
  FEM_CUDA_TRY(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) detail::throw_no_such_device(device, count);
  return std::make_shared<CudaContext>(device);
}

namespace detail {
bool cuda_device_pointer(const void* p) noexcept {
  cudaPointerAttributes a{};
  if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}
}  // namespace detail

bool cuda_available(std::string* reason) noexcept {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (reason)
      *reason = e != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(e)
                                 : std::string("no CUDA device present");
    cudaGetLastError();  // clear the sticky error
    return false;
  }
  return true;
}

}  // namespace fem::gpu
