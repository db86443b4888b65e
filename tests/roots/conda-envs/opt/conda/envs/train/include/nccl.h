#define NCCL_MAJOR 2
#define NCCL_MINOR 22
#define NCCL_PATCH 3
