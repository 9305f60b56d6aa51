/* The reloc-mode self-deadlock of UCX >= 1.16 (docs/ucx.md): a program that
 * links libucm before libucs and asks ucm for VM_MAPPED|VM_UNMAPPED events.
 * With UCX_MEM_MMAP_HOOK_MODE=reloc, ucm_reloc_modify() takes
 * ucm_reloc_patch_list_lock, patches libucm's own dlopen slot, then grows a
 * symbol hash: ucm_sys_realloc -> mremap -> the lazy reloc-mode lookup
 * ucm_reloc_get_orig -> dlopen(libucm) = ucm_dlopen -> the same lock.
 * Unpatched master hangs here; with contrib/ucx/master/0001 it prints
 * "ucm_set_event_handler: Success".  Built by scripts/ucx-master.sh. */
#include <stdio.h>
#include <ucm/api/ucm.h>

static void event_cb(ucm_event_type_t type, ucm_event_t* event, void* arg) {
    (void)type;
    (void)event;
    (void)arg;
}

int main(void) {
    ucs_status_t status = ucm_set_event_handler(UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED, 0, event_cb, NULL);
    printf("ucm_set_event_handler: %s\n", ucs_status_string(status));
    return status == UCS_OK ? 0 : 1;
}
