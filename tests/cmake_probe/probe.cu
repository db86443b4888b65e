// One kernel and one NCCL call: enough for nvcc to compile device code for the chosen
// architectures and for the linker to resolve libnccl and libcudart. Never run here.
#include <cstdio>
#include <cuda_runtime.h>
#include <nccl.h>

__global__ void add_one(int *x) { x[threadIdx.x] += 1; }

int main() {
  int version = 0;
  ncclGetVersion(&version);
  int *d = nullptr;
  cudaMalloc(&d, 32 * sizeof(int));
  add_one<<<1, 32>>>(d);
  cudaFree(d);
  std::printf("nccl %d\n", version);
  return 0;
}
