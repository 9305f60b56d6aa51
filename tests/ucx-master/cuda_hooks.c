/* ucm's CUDA hooks (UCX master's libucm_cuda) and ldshim's in one process,
 * against the hooks suite's fake driver and runtime (tests/hooks/fixtures).
 *   cuda_hooks ORDER      ORDER: ucm, ldshim, ldshim-ucm, ucm-ldshim
 * "ucm" asks ucm for MEM_TYPE_ALLOC|MEM_TYPE_FREE events (which installs
 * its CUDA hooks in the mode UCX_MEM_CUDA_HOOK_MODE names), "ldshim" calls
 * ldshim_hooks_install(LDSHIM_HOOK_CUDA); the two-word orders do both, in
 * that order.  Then six allocations (three through the runtime, three
 * through the driver) and their frees; prints
 *   install ...: status
 *   ucm ALLOC|FREE #i size=N type=T    every ucm event, #i the allocation
 *   registry #i: TYPE length=N         ldshim's registry after the allocations
 *   registry after free #i: TYPE
 *   truth: registry exact|WRONG ...   (ldshim's registry against what was allocated)
 * so that tests/ucx-master/cuda_test.sh can compare each order with ucm
 * alone and ldshim alone.  Built by that script. */
#include <ldshim.h>
#include <stdio.h>
#include <string.h>
#include <ucm/api/ucm.h>

#include "cuda_decls.h"

enum { N = 6 };
static const void* g_ptr[N];
static size_t g_len[N] = {1000, 3000, 0, 2000, 4000, 0}; /* pitch x height: from the pitch */
static const ldshim_memtype_t g_type[N] = {LDSHIM_MEM_CUDA, LDSHIM_MEM_CUDA_MANAGED, LDSHIM_MEM_CUDA,
                                           LDSHIM_MEM_CUDA, LDSHIM_MEM_CUDA_MANAGED, LDSHIM_MEM_CUDA};
static const char* const g_what[N] = {"cudaMalloc",    "cudaMallocManaged", "cudaMallocPitch",
                                      "cuMemAlloc_v2", "cuMemAllocManaged", "cuMemAllocPitch_v2"};

static struct {
    int free;
    const void* address;
    size_t size;
    int type;
} g_events[256];
static int g_nevents;

static void on_event(ucm_event_type_t type, ucm_event_t* event, void* arg) {
    (void)arg;
    if (g_nevents < 256) {
        g_events[g_nevents].free = type == UCM_EVENT_MEM_TYPE_FREE;
        g_events[g_nevents].address = event->mem_type.address;
        g_events[g_nevents].size = event->mem_type.size;
        g_events[g_nevents].type = (int)event->mem_type.mem_type;
    }
    ++g_nevents;
}

static int index_of(const void* p) {
    for (int i = 0; i < N; ++i)
        if (g_ptr[i] == p) return i;
    return -1;
}

static const char* type_name(ldshim_memtype_t t) {
    static const char* const names[] = {"unregistered", "host", "host-pinned", "cuda", "cuda-managed"};
    return (unsigned)t < 5 ? names[t] : "?";
}

static void install(const char* who) {
    if (strcmp(who, "ucm") == 0) {
        ucs_status_t s = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE, 0, on_event, NULL);
        printf("install ucm: %s\n", ucs_status_string(s));
    } else {
        ldshim_status s = ldshim_hooks_install(LDSHIM_HOOK_CUDA);
        printf("install ldshim: %s\n", ldshim_strerror(s));
    }
    fflush(stdout);
}

static void allocate(void) {
    void* p;
    size_t pitch;
    CUdeviceptr d;
    int rc[N];
    rc[0] = cudaMalloc(&p, g_len[0]);
    g_ptr[0] = p;
    rc[1] = cudaMallocManaged(&p, g_len[1], 1);
    g_ptr[1] = p;
    rc[2] = cudaMallocPitch(&p, &pitch, 100, 10);
    g_ptr[2] = p;
    g_len[2] = pitch * 10;
    rc[3] = cuMemAlloc_v2(&d, g_len[3]);
    g_ptr[3] = (const void*)(uintptr_t)d;
    rc[4] = cuMemAllocManaged(&d, g_len[4], 1);
    g_ptr[4] = (const void*)(uintptr_t)d;
    rc[5] = cuMemAllocPitch_v2(&d, &pitch, 64, 8, 4);
    g_ptr[5] = (const void*)(uintptr_t)d;
    g_len[5] = pitch * 8;
    for (int i = 0; i < N; ++i)
        if (rc[i] != 0) printf("%s: error %d\n", g_what[i], rc[i]);
}

static void release(void) {
    cudaFree((void*)g_ptr[0]);
    cudaFree((void*)g_ptr[1]);
    cudaFree((void*)g_ptr[2]);
    cuMemFree_v2((CUdeviceptr)(uintptr_t)g_ptr[3]);
    cuMemFree_v2((CUdeviceptr)(uintptr_t)g_ptr[4]);
    cuMemFree_v2((CUdeviceptr)(uintptr_t)g_ptr[5]);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s ucm|ldshim|ldshim-ucm|ucm-ldshim\n", argv[0]);
        return 2;
    }
    char order[64];
    snprintf(order, sizeof order, "%s", argv[1]);
    for (char* who = strtok(order, "-"); who; who = strtok(NULL, "-")) install(who);

    allocate();
    int exact = 1;
    ldshim_meminfo_t info;
    for (int i = 0; i < N; ++i) {
        ldshim_memtype_query(g_ptr[i], 1, &info);
        printf("registry #%d (%s): %s length=%zu%s\n", i, g_what[i], type_name(info.type), info.type ? info.length : 0,
               info.type && info.base != g_ptr[i] ? " (another base)" : "");
        exact &= info.type == g_type[i] && info.length == g_len[i] && info.base == g_ptr[i];
    }
    release();
    for (int i = 0; i < N; ++i) {
        ldshim_memtype_query(g_ptr[i], 1, &info);
        printf("registry after free #%d: %s\n", i, type_name(info.type));
        exact &= info.type == LDSHIM_MEM_UNREGISTERED;
    }
    for (int e = 0; e < g_nevents && e < 256; ++e)
        printf("ucm %s #%d size=%zu type=%d\n", g_events[e].free ? "FREE" : "ALLOC", index_of(g_events[e].address),
               g_events[e].size, g_events[e].type);
    printf("ucm events: %d\n", g_nevents);
    printf("truth: registry %s\n", exact ? "exact" : "WRONG");
    return 0;
}
