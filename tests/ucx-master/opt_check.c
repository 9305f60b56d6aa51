/* Shows how libucs handles UCX_MEM_DLOPEN_LDSHIM: the value ucm ends up with
 * (from the environment or a ucx.conf, through libucs's MEM_ table) and
 * libucs's "unused environment variable" warning, which UCP prints when a
 * worker is created.  Built and run by scripts/ucx-master.sh against a UCX
 * master build (with the series: the field exists; without it: pass
 * -DNO_FIELD and only the warning is shown).
 *   opt_check   -> "dlopen_ldshim=<0|1>" (with the field), then any warning */
#include <stdio.h>
#include <ucm/api/ucm.h>
#include <ucs/config/parser.h>

int main(void) {
#ifndef NO_FIELD
    printf("dlopen_ldshim=%d\n", ucm_global_opts.dlopen_ldshim);
#endif
    printf("dlopen_process_rpath=%d\n", ucm_global_opts.dlopen_process_rpath);
    fflush(stdout);
    ucs_config_parser_print_env_vars_once("UCX_");
    return 0;
}
