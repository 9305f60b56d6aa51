/* What libldshim_preload.so is linked against in place of libldshim.so.0
 * (lib/meson.build): the same SONAME and the one function the preload
 * imports, without symbol versions, and never installed.  The preload's
 * reference then names no version, so the loader checks no version of
 * libldshim.so.0 for it: a walk of every loaded object by name, at every
 * start-up of every process the preload is in.  At run time the reference
 * binds to the real library's definition all the same (its only version,
 * LDSHIM_PRIVATE). */
const void* ldshim_get_preload_ops(void);
const void* ldshim_get_preload_ops(void) { return 0; }
