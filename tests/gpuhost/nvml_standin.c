/*
 * A stand-in libnvidia-ml.so.1 for tests: answers the NVML calls fwdoctor makes (through
 * the real nvidia-ml-py binding) from a scenario, and fails the way real drivers fail.
 *
 * Signatures, struct layouts, buffer sizes and return codes are transcribed from NVIDIA's
 * nvml.h in the PyPI wheel nvidia-nvml-dev 13.0.87 (nvidia/cu13/include/nvml.h,
 * NVML_API_VERSION 13, "Copyright 1993-2025 NVIDIA Corporation"). Only what is used here
 * is copied; every exported symbol keeps the real name, so ctypes finds it by name as it
 * finds the real library's.
 *
 * The scenario is a key=value file named by $FWDOCTOR_GPUHOST_NVML, written by
 * tests/gpuhost from the scenario JSON (a flat file keeps the C side free of a JSON
 * parser). It is read inside nvmlInit, so "hang_init" and "crash_init" happen where a
 * wedged driver makes the real library hang or crash: in the init call.
 *
 *   fail=none|driver_not_loaded|version_mismatch|hang_init|crash_init
 *   driver=580.95.05            the kernel module's version (nvmlSystemGetDriverVersion)
 *   library=580.95.05           this library's own version (a mismatch fails init)
 *   cuda=13000                  nvmlSystemGetCudaDriverVersion(_v2)
 *   gpus=N
 *   gpu.I.name= uuid= bus_id= pci_device_id= (0xDDDDVVVV) cc=9.0 memory_total=BYTES
 *   gpu.I.mig=0|1 persistence=0|1 lost=0|1 not_supported=name,uuid,bus_id,memory_total,cc,mig,persistence
 *   gpu.I.remapped_rows=CORR,UNC,PENDING,FAILED   (absent: NVML_ERROR_NOT_SUPPORTED, as before Ampere)
 *   gpu.I.ecc=VOLATILE,AGGREGATE                  uncorrected counts (absent: not supported)
 *   gpu.I.nvlinks=N nvlink_down=MASK              links 0..N-1, those in MASK inactive
 *   gpu.I.clocks_event_reasons=MASK               nvmlClocksEventReason* bits (absent: not supported)
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- from nvml.h 13.0.87 */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;    /* combined 16-bit device id and 16-bit vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | (ver << 24U))
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* The real library keeps nvmlDevice_st opaque; ours holds the GPU's index. */
struct nvmlDevice_st { unsigned int index; };
typedef struct nvmlDevice_st *nvmlDevice_t;

/* ---------------------------------------------------------------- the scenario */
#define MAX_GPUS 64
#define TEXT 128

struct gpu {
    char name[TEXT], uuid[TEXT], bus_id[TEXT], not_supported[TEXT];
    unsigned int pci_device_id;
    int cc_major, cc_minor, mig, persistence, lost;
    unsigned long long memory_total;
    int has_rows, has_ecc, has_clocks;
    unsigned int rows[4]; /* correctable, uncorrectable, pending, failed */
    unsigned long long ecc_volatile, ecc_aggregate, clocks_reasons;
    unsigned int nvlinks;
    unsigned long long nvlink_down;
};

static struct {
    char fail[32], driver[TEXT], library[TEXT];
    int cuda;
    unsigned int count;
    struct gpu gpus[MAX_GPUS];
} scenario;

static struct nvmlDevice_st handles[MAX_GPUS];
static int init_count;

static void copy_text(char *dest, const char *value) {
    strncpy(dest, value, TEXT - 1);
    dest[TEXT - 1] = '\0';
}

static void set_gpu(struct gpu *g, const char *key, const char *value) {
    if (!strcmp(key, "name")) copy_text(g->name, value);
    else if (!strcmp(key, "uuid")) copy_text(g->uuid, value);
    else if (!strcmp(key, "bus_id")) copy_text(g->bus_id, value);
    else if (!strcmp(key, "not_supported")) copy_text(g->not_supported, value);
    else if (!strcmp(key, "pci_device_id")) g->pci_device_id = (unsigned int)strtoul(value, NULL, 0);
    else if (!strcmp(key, "cc")) sscanf(value, "%d.%d", &g->cc_major, &g->cc_minor);
    else if (!strcmp(key, "memory_total")) g->memory_total = strtoull(value, NULL, 10);
    else if (!strcmp(key, "mig")) g->mig = atoi(value);
    else if (!strcmp(key, "persistence")) g->persistence = atoi(value);
    else if (!strcmp(key, "lost")) g->lost = atoi(value);
    else if (!strcmp(key, "remapped_rows"))
        g->has_rows = sscanf(value, "%u,%u,%u,%u", &g->rows[0], &g->rows[1], &g->rows[2], &g->rows[3]) == 4;
    else if (!strcmp(key, "ecc")) g->has_ecc = sscanf(value, "%llu,%llu", &g->ecc_volatile, &g->ecc_aggregate) == 2;
    else if (!strcmp(key, "nvlinks")) g->nvlinks = (unsigned int)atoi(value);
    else if (!strcmp(key, "nvlink_down")) g->nvlink_down = strtoull(value, NULL, 0);
    else if (!strcmp(key, "clocks_event_reasons")) { g->has_clocks = 1; g->clocks_reasons = strtoull(value, NULL, 0); }
}

static int load_scenario(void) {
    const char *path = getenv("FWDOCTOR_GPUHOST_NVML");
    FILE *file = path ? fopen(path, "r") : NULL;
    char line[512];
    if (!file) {
        fprintf(stderr, "nvml stand-in: cannot read $FWDOCTOR_GPUHOST_NVML (%s)\n", path ? path : "unset");
        return 0;
    }
    memset(&scenario, 0, sizeof scenario);
    strcpy(scenario.fail, "none");
    while (fgets(line, sizeof line, file)) {
        char *eq = strchr(line, '='), *end = line + strcspn(line, "\r\n");
        unsigned int index;
        int used = 0;
        *end = '\0';
        if (!eq) continue;
        *eq = '\0';
        const char *key = line, *value = eq + 1;
        if (!strcmp(key, "fail")) { strncpy(scenario.fail, value, sizeof scenario.fail - 1); }
        else if (!strcmp(key, "driver")) copy_text(scenario.driver, value);
        else if (!strcmp(key, "library")) copy_text(scenario.library, value);
        else if (!strcmp(key, "cuda")) scenario.cuda = atoi(value);
        else if (!strcmp(key, "gpus")) scenario.count = (unsigned int)atoi(value) > MAX_GPUS ? MAX_GPUS : (unsigned int)atoi(value);
        else if (sscanf(key, "gpu.%u.%n", &index, &used) == 1 && used > 0 && index < MAX_GPUS)
            set_gpu(&scenario.gpus[index], key + used, value);
    }
    fclose(file);
    return 1;
}

static int not_supported(const struct gpu *g, const char *field) {
    /* comma-separated list; match whole words */
    size_t n = strlen(field);
    const char *p = g->not_supported;
    while ((p = strstr(p, field)) != NULL) {
        int starts = p == g->not_supported || p[-1] == ',';
        int ends = p[n] == '\0' || p[n] == ',';
        if (starts && ends) return 1;
        p += n;
    }
    return 0;
}

static nvmlReturn_t put_text(char *dest, unsigned int length, const char *text) {
    if (!dest) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dest, text);
    return NVML_SUCCESS;
}

/* The GPU behind a handle, or NULL with *ret set to the error the call returns. */
static const struct gpu *gpu_of(nvmlDevice_t device, nvmlReturn_t *ret) {
    if (init_count == 0) { *ret = NVML_ERROR_UNINITIALIZED; return NULL; }
    if (device < handles || device >= handles + scenario.count) { *ret = NVML_ERROR_INVALID_ARGUMENT; return NULL; }
    const struct gpu *g = &scenario.gpus[device->index];
    if (g->lost) { *ret = NVML_ERROR_GPU_IS_LOST; return NULL; }
    *ret = NVML_SUCCESS;
    return g;
}

/* ---------------------------------------------------------------- init / shutdown */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    if (!load_scenario()) return NVML_ERROR_UNKNOWN;
    if (!strcmp(scenario.fail, "hang_init")) {
        for (;;) pause();  /* a wedged driver: the call never returns */
    }
    if (!strcmp(scenario.fail, "crash_init")) {
        raise(SIGSEGV);
        return NVML_ERROR_UNKNOWN;
    }
    if (!strcmp(scenario.fail, "driver_not_loaded")) return NVML_ERROR_DRIVER_NOT_LOADED;
    /* The real library refuses a kernel module of another version (RM version check). */
    if (!strcmp(scenario.fail, "version_mismatch") || strcmp(scenario.driver, scenario.library) != 0)
        return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    for (unsigned int i = 0; i < MAX_GPUS; i++) handles[i].index = i;
    init_count++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    init_count--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    /* Texts as nvidia-ml-py 13.615.71 prints them (pynvml.NVMLError._errcode_to_string),
     * except 18, which is nvidia-smi's "Failed to initialize NVML: Driver/library version
     * mismatch" (tests/data/driver/smi-mismatch.txt). */
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}

/* ---------------------------------------------------------------- system queries */
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    return put_text(version, length, scenario.driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    /* "<CUDA major>.<library version>": the header promises only an alphanumeric string;
     * this format is not verified against a real library, and fwdoctor does not call it. */
    char text[TEXT + 16];
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    snprintf(text, sizeof text, "%d.%s", scenario.cuda / 1000, scenario.library);
    return put_text(version, length, text);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    *cudaDriverVersion = scenario.cuda;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* ---------------------------------------------------------------- devices */
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    *deviceCount = scenario.count;  /* a lost GPU still counts; its handle fails */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= scenario.count) return NVML_ERROR_INVALID_ARGUMENT;
    /* nvidia-smi on a fallen-off GPU: "Unable to determine the device handle for GPU
     * 0000:02:00.0: GPU is lost" (github.com/JosephKJ/OWOD/issues/81). */
    if (scenario.gpus[index].lost) return NVML_ERROR_GPU_IS_LOST;
    *device = &handles[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (not_supported(g, "name")) return NVML_ERROR_NOT_SUPPORTED;
    return put_text(name, length, g->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (not_supported(g, "uuid")) return NVML_ERROR_NOT_SUPPORTED;
    return put_text(uuid, length, g->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    nvmlReturn_t ret;
    unsigned int domain = 0, bus = 0, dev = 0;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "bus_id")) return NVML_ERROR_NOT_SUPPORTED;
    sscanf(g->bus_id, "%x:%x:%x", &domain, &bus, &dev);
    memset(pci, 0, sizeof *pci);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = g->pci_device_id;
    /* NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT and NVML_DEVICE_PCI_BUS_ID_FMT from nvml.h */
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain, bus, dev);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, bus, dev);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(device, pci); }

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "memory_total")) return NVML_ERROR_NOT_SUPPORTED;
    memory->total = g->memory_total;
    memory->used = 0;
    memory->free = g->memory_total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "memory_total")) return NVML_ERROR_NOT_SUPPORTED;
    memory->total = g->memory_total;
    memory->reserved = 0;
    memory->used = 0;
    memory->free = g->memory_total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "cc")) return NVML_ERROR_NOT_SUPPORTED;
    *major = g->cc_major;
    *minor = g->cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "mig")) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *pendingMode = g->mig ? 1 : 0;  /* NVML_DEVICE_MIG_ENABLE / _DISABLE */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
    if (not_supported(g, "persistence")) return NVML_ERROR_NOT_SUPPORTED;
    *mode = g->persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = device->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
    /* /dev/nvidiaN: the runner numbers device nodes by index */
    return nvmlDeviceGetIndex(device, minorNumber);
}

/* ---------------------------------------------------------------- health (nvml.h 13.0.87) */
typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,
    NVML_AGGREGATE_ECC = 1
} nvmlEccCounterType_t;

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                       unsigned int *isPending, unsigned int *failureOccurred) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->has_rows) return NVML_ERROR_NOT_SUPPORTED;
    *corrRows = g->rows[0];
    *uncRows = g->rows[1];
    *isPending = g->rows[2];
    *failureOccurred = g->rows[3];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType, unsigned long long *eccCounts) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!eccCounts || errorType > NVML_MEMORY_ERROR_TYPE_UNCORRECTED || counterType > NVML_AGGREGATE_ECC) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->has_ecc) return NVML_ERROR_NOT_SUPPORTED;
    /* only uncorrected errors are described by a scenario; corrected ones read as 0 */
    *eccCounts = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? 0 : counterType == NVML_VOLATILE_ECC ? g->ecc_volatile : g->ecc_aggregate;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!isActive) return NVML_ERROR_INVALID_ARGUMENT;
    if (g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *isActive = (g->nvlink_down >> link) & 1 ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *clocksEventReasons) {
    nvmlReturn_t ret;
    const struct gpu *g = gpu_of(device, &ret);
    if (!g) return ret;
    if (!clocksEventReasons) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->has_clocks) return NVML_ERROR_NOT_SUPPORTED;
    *clocksEventReasons = g->clocks_reasons;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *clocksThrottleReasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(device, clocksThrottleReasons);
}
