#include "hooks/as_caller.h"

#include "host/loaded_objects.h"
#include "host/settings.h"

#include <elf.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

extern "C" void* ldshim_call_from(void* fn, void* a0, const void* a1, const void* a2, std::uintptr_t rp,
                                  std::uintptr_t rp_frame);

namespace ldshim::hooks {

namespace {

#if defined(__x86_64__)
// Any 0xc3 byte is a return when jumped to; the call pushes ldshim's own
// continuation under it.
constexpr unsigned char kRet = 0xc3;

bool shadow_stack_on() noexcept {
    constexpr int kArchShstkStatus = 0x5005;  // asm/prctl.h, Linux 6.6
    unsigned long long features = 0;
    return syscall(SYS_arch_prctl, kArchShstkStatus, &features) == 0 && (features & 1) != 0;
}

// The nearest return byte after `at` in [lo, hi), else the nearest before.
std::optional<ReturnPoint> find_in(std::uintptr_t lo, std::uintptr_t hi, std::uintptr_t at) noexcept {
    const auto* base = reinterpret_cast<const unsigned char*>(lo);
    const std::size_t from = at - lo;
    if (const void* p = std::memchr(base + from, kRet, hi - at))
        return ReturnPoint{reinterpret_cast<std::uintptr_t>(p)};
    if (const void* p = memrchr(base, kRet, from)) return ReturnPoint{reinterpret_cast<std::uintptr_t>(p)};
    return std::nullopt;
}
#elif defined(__aarch64__)
// An epilogue "ldp x29, x30, [sp], #N; ret" without pointer authentication,
// N a positive multiple of 16: it loads the continuation ldshim stored at
// sp + 8 into x30 and returns to it.
constexpr std::uint32_t kLdpFrameMask = 0xffc07fffu, kLdpFrame = 0xa8c07bfdu, kRetX30 = 0xd65f03c0u;

bool shadow_stack_on() noexcept {
    constexpr int kGetShadowStackStatus = 74;  // PR_GET_SHADOW_STACK_STATUS, Linux 6.13
    unsigned long status = 0;
    return prctl(kGetShadowStackStatus, &status, 0, 0, 0) == 0 && (status & 1) != 0;
}

std::optional<ReturnPoint> epilogue_at(const std::uint32_t* w) noexcept {
    if ((w[0] & kLdpFrameMask) != kLdpFrame || w[1] != kRetX30) return std::nullopt;
    const std::uint32_t imm7 = (w[0] >> 15) & 0x7f;
    if (imm7 == 0 || imm7 >= 0x40 || imm7 % 2 != 0) return std::nullopt;  // zero, negative, or not 16-aligned
    return ReturnPoint{reinterpret_cast<std::uintptr_t>(w), imm7 * 8u};
}

std::optional<ReturnPoint> find_in(std::uintptr_t lo, std::uintptr_t hi, std::uintptr_t at) noexcept {
    lo = (lo + 3) & ~std::uintptr_t{3};
    at &= ~std::uintptr_t{3};
    for (std::uintptr_t p = at; p + 8 <= hi; p += 4)
        if (auto rp = epilogue_at(reinterpret_cast<const std::uint32_t*>(p))) return rp;
    for (std::uintptr_t p = at; p >= lo + 4;) {
        p -= 4;
        if (p + 8 <= hi)
            if (auto rp = epilogue_at(reinterpret_cast<const std::uint32_t*>(p))) return rp;
    }
    return std::nullopt;
}
#else
bool shadow_stack_on() noexcept { return true; }  // no recipe for this machine
std::optional<ReturnPoint> find_in(std::uintptr_t, std::uintptr_t, std::uintptr_t) noexcept { return std::nullopt; }
#endif

// A shadow stack found off stays off for the thread's life: it can only be
// turned on before the thread's first return (glibc does it at start-up,
// and a new thread takes its creator's state), so "off" is asked once.
[[gnu::tls_model("initial-exec")]] thread_local bool t_shadow_stack_off = false;

bool shadow_stack_on_now() noexcept {
    if (t_shadow_stack_off) return false;
    const bool on = shadow_stack_on();
    t_shadow_stack_off = !on;
    return on;
}

}  // namespace

std::optional<ReturnPoint> return_point_in(const void* caller) noexcept {
    if (host::settings().no_return_points || shadow_stack_on_now()) return std::nullopt;
    const auto at = reinterpret_cast<std::uintptr_t>(caller);
    std::optional<ReturnPoint> found;
    // The walk holds the loader's lock, so the segment stays mapped while it
    // is read.  Only a readable executable segment that holds the caller
    // itself is searched: every byte of it is inside the object for glibc.
    host::for_each_loaded([&](const dl_phdr_info& info, const host::LoadCounters&) {
        for (int i = 0; i < info.dlpi_phnum; ++i) {
            const auto& ph = info.dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            const std::uintptr_t lo = info.dlpi_addr + ph.p_vaddr, hi = lo + ph.p_filesz;
            if (at < lo || at >= hi) continue;
            if ((ph.p_flags & (PF_R | PF_X)) == (PF_R | PF_X)) found = find_in(lo, hi, at);
            return false;
        }
        return true;
    });
    return found;
}

void* call_from(const ReturnPoint& rp, void* fn, void* a0, const void* a1, const void* a2) noexcept {
    return ldshim_call_from(fn, a0, a1, a2, rp.address, rp.frame);
}

}  // namespace ldshim::hooks

// ldshim_call_from(fn, a0, a1, a2, rp, rp_frame): fn(a0, a1, a2) returning
// to rp, which returns to the continuation below.
#if defined(__x86_64__)
// fn's return address is rp, with the continuation above it; fn is entered
// with the stack aligned as after a call.
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl ldshim_call_from\n"
    ".hidden ldshim_call_from\n"
    ".type ldshim_call_from, @function\n"
    "ldshim_call_from:\n"
    "    .cfi_startproc\n"
    "    pushq %rbp\n"
    "    .cfi_adjust_cfa_offset 8\n"
    "    .cfi_rel_offset %rbp, 0\n"
    "    movq %rsp, %rbp\n"
    "    .cfi_def_cfa_register %rbp\n"
    "    movq %rdi, %rax\n"
    "    movq %rsi, %rdi\n"
    "    movq %rdx, %rsi\n"
    "    movq %rcx, %rdx\n"
    "    subq $8, %rsp\n"
    "    leaq 1f(%rip), %rcx\n"
    "    pushq %rcx\n"
    "    pushq %r8\n"
    "    jmpq *%rax\n"
    "1:\n"
    "    movq %rbp, %rsp\n"
    "    popq %rbp\n"
    "    .cfi_def_cfa %rsp, 8\n"
    "    .cfi_restore %rbp\n"
    "    ret\n"
    "    .cfi_endproc\n"
    ".size ldshim_call_from, .-ldshim_call_from\n");
#elif defined(__aarch64__)
// fn's x30 is rp, an epilogue that pops rp_frame bytes: x29 and the
// continuation at the bottom.  x19 (callee-saved, and untouched by rp) holds
// this frame across.  "hint #34" is BTI's landing pad.
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl ldshim_call_from\n"
    ".hidden ldshim_call_from\n"
    ".type ldshim_call_from, %function\n"
    "ldshim_call_from:\n"
    "    .cfi_startproc\n"
    "    hint #34\n"
    "    stp x29, x30, [sp, #-32]!\n"
    "    .cfi_def_cfa_offset 32\n"
    "    .cfi_offset 29, -32\n"
    "    .cfi_offset 30, -24\n"
    "    mov x29, sp\n"
    "    .cfi_def_cfa_register 29\n"
    "    str x19, [sp, #16]\n"
    "    .cfi_offset 19, -16\n"
    "    mov x19, sp\n"
    "    sub sp, sp, x5\n"
    "    adr x9, 1f\n"
    "    stp x29, x9, [sp]\n"
    "    mov x16, x0\n"
    "    mov x30, x4\n"
    "    mov x0, x1\n"
    "    mov x1, x2\n"
    "    mov x2, x3\n"
    "    br x16\n"
    "1:\n"
    "    mov sp, x19\n"
    "    ldr x19, [sp, #16]\n"
    "    ldp x29, x30, [sp], #32\n"
    "    .cfi_def_cfa 31, 0\n"
    "    .cfi_restore 29\n"
    "    .cfi_restore 30\n"
    "    .cfi_restore 19\n"
    "    ret\n"
    "    .cfi_endproc\n"
    ".size ldshim_call_from, .-ldshim_call_from\n");
#else
extern "C" void* ldshim_call_from(void*, void*, const void*, const void*, std::uintptr_t, std::uintptr_t) {
    return nullptr;
}
#endif
