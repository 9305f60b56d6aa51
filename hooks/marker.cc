// The note that marks an object as ldshim's own (marker.h).  Compiled
// directly into each ldshim shared library, never through an archive, so the
// linker cannot drop it.
#include "hooks/marker.h"

static_assert(sizeof ldshim::hooks::kMarkerNoteName == 7);

__asm__(
    ".pushsection .note.ldshim, \"a\", @note\n"
    ".balign 4\n"
    ".long 7\n"           // n_namesz: "ldshim" and its NUL
    ".long 4\n"           // n_descsz
    ".long 0x4c445348\n"  // n_type: kMarkerNoteType
    ".asciz \"ldshim\"\n"
    ".balign 4\n"
    ".long 1\n"  // desc: format version
    ".popsection\n");
