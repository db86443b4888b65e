/* constructed: the one line of cuda.h the probe reads */
#define CUDA_VERSION 12040
