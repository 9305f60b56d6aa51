/* A library the loader probe asks for by name (probe_helper.c): what it
 * holds does not matter, only the directory glibc finds it in. */
__attribute__((visibility("default"))) int ldshim_probe_target = 1;
