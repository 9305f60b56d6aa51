// The memory-type part of the C API, over the process-wide registry.
#include "ldshim.h"
#include "memtype/driver.h"
#include "memtype/registry.h"

#include <cstdint>
#include <new>

using ldshim::memtype::Registry;
using ldshim::memtype::Type;

extern "C" {

ldshim_status ldshim_memtype_insert(const void* base, size_t length, ldshim_memtype_t type, int device) {
    if (type <= LDSHIM_MEM_UNREGISTERED || type > LDSHIM_MEM_CUDA_MANAGED) return LDSHIM_ERR_INVALID_ARGUMENT;
    try {
        Registry::global().insert(reinterpret_cast<std::uintptr_t>(base), length, static_cast<Type>(type), device);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

ldshim_status ldshim_memtype_remove(const void* base, size_t length) {
    try {
        Registry::global().remove(reinterpret_cast<std::uintptr_t>(base), length);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

ldshim_status ldshim_memtype_query(const void* ptr, size_t length, ldshim_meminfo_t* info) {
    if (!info) return LDSHIM_ERR_INVALID_ARGUMENT;
    bool spans = false;
    auto i = Registry::global().lookup(reinterpret_cast<std::uintptr_t>(ptr), length, &spans);
    info->type = static_cast<ldshim_memtype_t>(i.type);
    info->device = i.device;
    info->base = reinterpret_cast<const void*>(i.base);
    info->length = i.length;
    return spans ? LDSHIM_ERR_RANGE_SPANS : LDSHIM_OK;
}

ldshim_status ldshim_memtype_classify(const void* ptr, size_t length, ldshim_meminfo_t* info, ldshim_memrule_t* rule) {
    if (!info) return LDSHIM_ERR_INVALID_ARGUMENT;
    bool spans = false;
    ldshim::memtype::Rule r = ldshim::memtype::Rule::registry;
    ldshim::memtype::Info i;
    try {
        i = ldshim::memtype::classify(Registry::global(), reinterpret_cast<std::uintptr_t>(ptr), length, &r, &spans);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    info->type = static_cast<ldshim_memtype_t>(i.type);
    info->device = i.device;
    info->base = reinterpret_cast<const void*>(i.base);
    info->length = i.length;
    if (rule) *rule = static_cast<ldshim_memrule_t>(r);
    return spans ? LDSHIM_ERR_RANGE_SPANS : LDSHIM_OK;
}

}  // extern "C"
