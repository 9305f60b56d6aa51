// One recipe for every dlopen-shaped entry of ldshim (the front entries
// written into import slots, the preload's exported dlopen and dlmopen): the
// entry asks a C function whether ldshim answers the call; if it does not,
// the entry goes on by a jump, not a call, so that the function it goes on
// to -- glibc's dlopen above all -- finds the entry's own caller at its
// return address and searches from that object, exactly as without ldshim.
// (A call from C would leave ldshim's frame there, and glibc would search
// from libldshim's lists: switched off or declining, ldshim would still
// change the search.)
//
//   extern "C" [[gnu::visibility("hidden")]]
//   ldshim_dlopen_fn DECIDE(const void* caller, const char* file, int mode, void** handle);
//
// returns nullptr when it carried the call out (what dlopen returns is in
// *handle), else the function to jump to with (file, mode) unchanged.
// LDSHIM_DLOPEN_ENTRY(NAME, DECIDE, HIDDEN) defines NAME; HIDDEN is 1 for an
// entry only ldshim refers to.  LDSHIM_DLMOPEN_ENTRY is the same for
// dlmopen(lmid, file, mode), whose DECIDE takes (caller, lmid, file, mode,
// handle).  LDSHIM_ENTRY3 is the jump for any function of three word-sized
// arguments (a, b, c), whose DECIDE takes (caller, a, b, c, result):
// dlmopen, dlvsym(handle, name, version), and dlsym(handle, name), whose
// third register is passed on as it came.  Where no jump is written for the
// machine, LDSHIM_HAVE_DLOPEN_ENTRY is 0, the dlopen and dlmopen entries
// call instead (decide_then_go_on), and LDSHIM_ENTRY3 is not defined.
#pragma once

#if defined(__x86_64__)
#define LDSHIM_HAVE_DLOPEN_ENTRY 1
// Both entries save their arguments and make room for the handle, 40 bytes
// in all, so that the call to DECIDE is 16-byte aligned as the ABI wants and
// the caller's return address sits at 40(%rsp); the CFI lets an unwinder
// started inside DECIDE walk on into the caller.
//   dlopen:  0 handle, 8 and 16 padding, 24 mode, 32 file
//   three:   0 result, 8 padding, 16 c, 24 b, 32 a
// clang-format off
#define LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                                 \
            ".text\n"                                                                   \
            ".p2align 4\n"                                                              \
            ".globl " #NAME "\n"                                                        \
            LDSHIM_ENTRY_HIDE_##HIDDEN(NAME)                                            \
            ".type " #NAME ", @function\n"                                              \
            #NAME ":\n"                                                                 \
            "    .cfi_startproc\n"                                                      \
            "    pushq %rdi\n"                                                          \
            "    .cfi_adjust_cfa_offset 8\n"                                            \
            "    pushq %rsi\n"                                                          \
            "    .cfi_adjust_cfa_offset 8\n"
// After DECIDE: jump on with the arguments restored (RESTORE), or return
// the handle.
#define LDSHIM_ENTRY_TAIL(NAME, RESTORE)                                                \
            "    testq %rax, %rax\n"                                                    \
            "    jz 1f\n"                                                               \
            RESTORE                                                                     \
            "    addq $40, %rsp\n"                                                      \
            "    .cfi_adjust_cfa_offset -40\n"                                          \
            "    jmpq *%rax\n"                                                          \
            "1:\n"                                                                      \
            "    .cfi_adjust_cfa_offset 40\n"                                           \
            "    movq (%rsp), %rax\n"                                                   \
            "    addq $40, %rsp\n"                                                      \
            "    .cfi_adjust_cfa_offset -40\n"                                          \
            "    ret\n"                                                                 \
            "    .cfi_endproc\n"                                                        \
            ".size " #NAME ", .-" #NAME "\n"
#define LDSHIM_DLOPEN_ENTRY(NAME, DECIDE, HIDDEN)                                       \
    __asm__(LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                             \
            "    subq $24, %rsp\n"                                                      \
            "    .cfi_adjust_cfa_offset 24\n"                                           \
            "    movq %rsp, %rcx\n"                                                     \
            "    movl %esi, %edx\n"                                                     \
            "    movq %rdi, %rsi\n"                                                     \
            "    movq 40(%rsp), %rdi\n"                                                 \
            "    call " #DECIDE "\n"                                                    \
            LDSHIM_ENTRY_TAIL(NAME, "    movq 24(%rsp), %rsi\n"                         \
                                    "    movq 32(%rsp), %rdi\n"))
#define LDSHIM_ENTRY3(NAME, DECIDE, HIDDEN)                                             \
    __asm__(LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                             \
            "    pushq %rdx\n"                                                          \
            "    .cfi_adjust_cfa_offset 8\n"                                            \
            "    subq $16, %rsp\n"                                                      \
            "    .cfi_adjust_cfa_offset 16\n"                                           \
            "    movq %rsp, %r8\n"                                                      \
            "    movq %rdx, %rcx\n"                                                     \
            "    movq %rsi, %rdx\n"                                                     \
            "    movq %rdi, %rsi\n"                                                     \
            "    movq 40(%rsp), %rdi\n"                                                 \
            "    call " #DECIDE "\n"                                                    \
            LDSHIM_ENTRY_TAIL(NAME, "    movq 16(%rsp), %rdx\n"                         \
                                    "    movq 24(%rsp), %rsi\n"                         \
                                    "    movq 32(%rsp), %rdi\n"))
// clang-format on
#define LDSHIM_ENTRY_HIDE_1(NAME) ".hidden " #NAME "\n"
#define LDSHIM_ENTRY_HIDE_0(NAME) ""
#define LDSHIM_DLMOPEN_ENTRY(NAME, DECIDE, HIDDEN) LDSHIM_ENTRY3(NAME, DECIDE, HIDDEN)
#elif defined(__aarch64__)
#define LDSHIM_HAVE_DLOPEN_ENTRY 1
// The caller's return address is x30 on entry.  Both entries keep a 48-byte
// frame (x29/x30 at 0, the arguments from 16, the handle last), pass x30 to
// DECIDE as the caller, and leave with x29, x30 and sp as they came, so the
// function they jump to through x16 sees the entry's own caller.  "hint #34"
// is BTI's landing pad (a no-op without BTI); x16 may branch to one.
//   dlopen:  16 file, 24 mode, 32 handle
//   three:   16 a, 24 b, 32 c, 40 result
// clang-format off
#define LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                                 \
            ".text\n"                                                                   \
            ".p2align 4\n"                                                              \
            ".globl " #NAME "\n"                                                        \
            LDSHIM_ENTRY_HIDE_##HIDDEN(NAME)                                            \
            ".type " #NAME ", %function\n"                                              \
            #NAME ":\n"                                                                 \
            "    .cfi_startproc\n"                                                      \
            "    hint #34\n"                                                            \
            "    stp x29, x30, [sp, #-48]!\n"                                           \
            "    .cfi_def_cfa_offset 48\n"                                              \
            "    .cfi_offset 29, -48\n"                                                 \
            "    .cfi_offset 30, -40\n"                                                 \
            "    mov x29, sp\n"
// After DECIDE: jump on with the arguments restored (RESTORE), or return
// the handle kept at HANDLE(sp).
#define LDSHIM_ENTRY_TAIL(NAME, RESTORE, HANDLE)                                        \
            "    cbz x0, 1f\n"                                                          \
            "    mov x16, x0\n"                                                         \
            RESTORE                                                                     \
            "    .cfi_remember_state\n"                                                 \
            "    ldp x29, x30, [sp], #48\n"                                             \
            "    .cfi_def_cfa_offset 0\n"                                               \
            "    .cfi_restore 29\n"                                                     \
            "    .cfi_restore 30\n"                                                     \
            "    br x16\n"                                                              \
            "1:\n"                                                                      \
            "    .cfi_restore_state\n"                                                  \
            "    ldr x0, [sp, #" #HANDLE "]\n"                                          \
            "    ldp x29, x30, [sp], #48\n"                                             \
            "    .cfi_def_cfa_offset 0\n"                                               \
            "    .cfi_restore 29\n"                                                     \
            "    .cfi_restore 30\n"                                                     \
            "    ret\n"                                                                 \
            "    .cfi_endproc\n"                                                        \
            ".size " #NAME ", .-" #NAME "\n"
#define LDSHIM_DLOPEN_ENTRY(NAME, DECIDE, HIDDEN)                                       \
    __asm__(LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                             \
            "    stp x0, x1, [sp, #16]\n"                                               \
            "    str xzr, [sp, #32]\n"                                                  \
            "    add x3, sp, #32\n"                                                     \
            "    mov w2, w1\n"                                                          \
            "    mov x1, x0\n"                                                          \
            "    mov x0, x30\n"                                                         \
            "    bl " #DECIDE "\n"                                                      \
            LDSHIM_ENTRY_TAIL(NAME, "    ldp x0, x1, [sp, #16]\n", 32))
#define LDSHIM_ENTRY3(NAME, DECIDE, HIDDEN)                                             \
    __asm__(LDSHIM_ENTRY_HEAD(NAME, HIDDEN)                                             \
            "    stp x0, x1, [sp, #16]\n"                                               \
            "    stp x2, xzr, [sp, #32]\n"                                              \
            "    add x4, sp, #40\n"                                                     \
            "    mov x3, x2\n"                                                          \
            "    mov x2, x1\n"                                                          \
            "    mov x1, x0\n"                                                          \
            "    mov x0, x30\n"                                                         \
            "    bl " #DECIDE "\n"                                                      \
            LDSHIM_ENTRY_TAIL(NAME, "    ldp x0, x1, [sp, #16]\n"                        \
                                    "    ldr x2, [sp, #32]\n", 40))
// clang-format on
#define LDSHIM_ENTRY_HIDE_1(NAME) ".hidden " #NAME "\n"
#define LDSHIM_ENTRY_HIDE_0(NAME) ""
#define LDSHIM_DLMOPEN_ENTRY(NAME, DECIDE, HIDDEN) LDSHIM_ENTRY3(NAME, DECIDE, HIDDEN)
#else
#define LDSHIM_HAVE_DLOPEN_ENTRY 0
#define LDSHIM_ENTRY_VISIBILITY_1 [[gnu::visibility("hidden")]]
#define LDSHIM_ENTRY_VISIBILITY_0 [[gnu::visibility("default")]]
#define LDSHIM_DLOPEN_ENTRY(NAME, DECIDE, HIDDEN)                                                             \
    extern "C" LDSHIM_ENTRY_VISIBILITY_##HIDDEN void* NAME(const char* file, int mode) {                      \
        const void* caller = __builtin_return_address(0);                                                     \
        return ::ldshim::decide_then_go_on([caller](auto... a) { return DECIDE(caller, a...); }, file, mode); \
    }
#define LDSHIM_DLMOPEN_ENTRY(NAME, DECIDE, HIDDEN)                                                                  \
    extern "C" LDSHIM_ENTRY_VISIBILITY_##HIDDEN void* NAME(long lmid, const char* file, int mode) {                 \
        const void* caller = __builtin_return_address(0);                                                           \
        return ::ldshim::decide_then_go_on([caller](auto... a) { return DECIDE(caller, a...); }, lmid, file, mode); \
    }
#endif

namespace ldshim {

// The recipe's C form, for a call that has no caller of its own to keep
// (ldshim_dlopen_via and friends) and for the entries where no jump is
// written: `decide(args..., &handle)` either carried the call out (nullptr;
// the answer in handle) or names the function that takes it, unchanged.
template <class Decide, class... Args>
inline void* decide_then_go_on(Decide&& decide, Args... args) {
    void* handle = nullptr;
    auto go_on = decide(args..., &handle);
    return go_on ? go_on(args...) : handle;
}

}  // namespace ldshim
