#pragma once
// Private helpers of the CUDA implementation: CUDA errors → embshard::Error, and an owning
// device buffer and an owning mapped (pinned) host buffer. Only included by .cu files.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "embshard/core/error.h"

namespace embshard::kernels::cuda {

/** Throws Error("CUDA error in <what>: <reason>") unless `status` is cudaSuccess. */
inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    EMBSHARD_THROW("CUDA error in ", what, ": ", cudaGetErrorString(status));
  }
}

/** `count` elements of T in device memory (uninitialised); null when empty. Move-only. */
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) {
    if (count == 0) return;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
    data_ = static_cast<T*>(p);
    size_ = count;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/**
 * `bytes` of pinned host memory mapped into the device's address space (cudaHostAlloc with
 * cudaHostAllocMapped); `device()` is the pointer kernels read it through
 * (cudaHostGetDevicePointer). Null when empty. Move-only.
 */
class MappedHostBuffer {
 public:
  MappedHostBuffer() = default;
  explicit MappedHostBuffer(std::size_t bytes) {
    if (bytes == 0) return;
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocMapped), "cudaHostAlloc (mapped)");
    host_ = p;
    bytes_ = bytes;
    void* d = nullptr;
    const cudaError_t status = cudaHostGetDevicePointer(&d, p, 0);
    if (status != cudaSuccess) {
      cudaFreeHost(p);
      host_ = nullptr;
      bytes_ = 0;
      check_cuda(status, "cudaHostGetDevicePointer");
    }
    device_ = d;
  }
  ~MappedHostBuffer() {
    if (host_ != nullptr) cudaFreeHost(host_);
  }
  MappedHostBuffer(MappedHostBuffer&& other) noexcept
      : host_(std::exchange(other.host_, nullptr)), device_(std::exchange(other.device_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  MappedHostBuffer& operator=(MappedHostBuffer&& other) noexcept {
    std::swap(host_, other.host_);
    std::swap(device_, other.device_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;

  [[nodiscard]] void* host() const { return host_; }
  [[nodiscard]] void* device() const { return device_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace embshard::kernels::cuda
