// The start-up path's shortcuts, held to the slow, plain answers, on
// the real system libraries loaded in this process:
//   - ObjectImports::for_each (the symbol name first; the slot and the
//     version only for a hit) finds exactly the imports that decoding every
//     relocation in full finds (for_each_decoded, the reference);
//   - host::libc_symbol (libc's DT_GNU_HASH) finds what dlsym on libc's
//     handle finds, and host::defines_at says what dladdr says.
#include "hooks/object_scan.h"
#include "hooks/table.h"
#include "host/find_object.h"
#include "host/libc.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace {

using ldshim::hooks::Import;
using ldshim::hooks::ObjectImports;

using Row = std::tuple<std::uintptr_t, int, std::string, std::string, std::int64_t>;

Row row(const Import& imp) {
    return {imp.slot, static_cast<int>(imp.kind), imp.name, imp.version ? imp.version : "", imp.addend};
}

struct Scanned {
    std::string object;
    std::vector<Row> fast, decoded;
};

// Every loaded object, scanned both ways with the same filter.  (The rows
// are built after the walk's callback returns for each object: the test is
// not bound by the walk's no-allocation rule, which only guests obey.)
template <class Want>
std::vector<Scanned> scan_all(Want want) {
    std::vector<Scanned> out;
    std::pair<Want*, std::vector<Scanned>*> args{&want, &out};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            auto& [w, objects] = *static_cast<std::pair<Want*, std::vector<Scanned>*>*>(data);
            ObjectImports obj(*info);
            if (!obj.ok()) return 0;
            Scanned s{info->dlpi_name, {}, {}};
            obj.for_each(*w, [&](const Import& imp) { s.fast.push_back(row(imp)); });
            obj.for_each_decoded(*w, [&](const Import& imp) { s.decoded.push_back(row(imp)); });
            objects->push_back(std::move(s));
            return 0;
        },
        &args);
    return out;
}

class StartupScan : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // More real libraries than the test links, where the system has them.
        for (const char* name : {"libz.so.1", "libelf.so.1", "libcrypto.so.3", "libssl.so.3", "libpython3.11.so.1.0",
                                 "libgfortran.so.5", "libcurl.so.4", "libxml2.so.2"})
            if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) handles().push_back(h);
    }
    static std::vector<void*>& handles() {
        static std::vector<void*> h;
        return h;
    }
};

TEST_F(StartupScan, NameFirstScanFindsEveryImportTheFullDecoderFinds) {
    std::size_t rows = 0, objects = 0;
    for (const Scanned& s : scan_all([](const char*) { return true; })) {
        EXPECT_EQ(s.fast, s.decoded) << s.object;
        rows += s.decoded.size();
        ++objects;
    }
    // The comparison covered real imports, not empty lists.
    EXPECT_GE(objects, 4u);
    EXPECT_GT(rows, 1000u);
}

TEST_F(StartupScan, NameFirstScanFindsTheNamesThePatcherAsksForAsTheFullDecoderDoes) {
    std::size_t hits = 0;
    for (const Scanned& s : scan_all(ldshim::hooks::may_be_hooked)) {
        EXPECT_EQ(s.fast, s.decoded) << s.object;
        hits += s.decoded.size();
    }
    // This test program imports dlopen and dlsym, libstdc++ dl_iterate_phdr.
    EXPECT_GE(hits, 3u);
}

// ObjectImports::may_define_any (the Bloom filter, then the hash chain and
// the name) says yes for every name dlsym finds defined in the object, and
// no for a name nothing defines, wherever the object has a GNU hash table.
TEST_F(StartupScan, HashTableSaysAnObjectMayDefineEveryNameDlsymFindsInIt) {
    struct Object {
        std::string name;
        std::uintptr_t base;
        std::vector<bool> may;  // one per name of kNames
    };
    static const char* const kNames[] = {
        "dlerror", "__libc_start_main",      "dlopen", "malloc", "zlibVersion", "elf_version", "SSL_new",
        "main",    "ldshim_no_such_function"};
    std::vector<Object> objects;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            ObjectImports obj(*info);
            Object o{info->dlpi_name, info->dlpi_addr, {}};
            for (const char* n : kNames) {
                const ObjectImports::Name one[] = {{n, ldshim::loader::gnu_hash(n)}};
                o.may.push_back(obj.may_define_any(one));
            }
            static_cast<std::vector<Object>*>(data)->push_back(std::move(o));
            return 0;
        },
        &objects);
    std::size_t defined = 0, refused = 0;
    for (const Object& o : objects) {
        void* h = dlopen(o.name.empty() ? nullptr : o.name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        for (std::size_t i = 0; i < std::size(kNames); ++i) {
            Dl_info where{};
            void* sym = dlsym(h, kNames[i]);
            const bool here = sym && dladdr(sym, &where) && reinterpret_cast<std::uintptr_t>(where.dli_fbase) == o.base;
            if (here) {
                EXPECT_TRUE(o.may[i]) << o.name << " defines " << kNames[i];
                ++defined;
            }
        }
        if (!o.may.back()) ++refused;
        if (o.name.ends_with("/" LIBC_SO)) {
            EXPECT_FALSE(o.may.back()) << "libc, a name nothing defines";
        }
        dlclose(h);
    }
    EXPECT_GE(defined, 4u);  // libc's dlerror, __libc_start_main, dlopen, malloc at least
    EXPECT_GE(refused, 4u);  // libc, libstdc++, libgtest, the loader at least
}

// Before glibc 2.35 (no lock-free _dl_find_object) the tables cannot be
// read: every answer is "cannot tell" (nullptr, false) and glibc is asked.
TEST(LibcSymbols, HashTableLookupAgreesWithDlsymOnLibcsHandle) {
    void* libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    ASSERT_NE(libc, nullptr);
    const bool can_tell = ldshim::host::find_object_is_lock_free();
    for (const char* name : {"dlopen", "dlmopen", "dlerror", "dl_iterate_phdr", "dlsym", "dlclose", "getenv"})
        EXPECT_EQ(ldshim::host::libc_symbol(name), can_tell ? dlsym(libc, name) : nullptr) << name;
    EXPECT_EQ(ldshim::host::libc_symbol("ldshim_no_such_function"), nullptr);
    dlclose(libc);
}

TEST(LibcSymbols, ExportedAtNamesOnlyWhatDladdrNames) {
    void* libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    ASSERT_NE(libc, nullptr);
    void* getenv_fn = dlsym(libc, "getenv");  // in libc in every glibc (dlclose was libdl's before 2.34)
    dlclose(libc);
    ASSERT_NE(getenv_fn, nullptr);
    Dl_info info;
    ASSERT_NE(dladdr(getenv_fn, &info), 0);
    ASSERT_STREQ(info.dli_sname, "getenv");
    ASSERT_EQ(info.dli_saddr, getenv_fn);
    EXPECT_EQ(ldshim::host::exported_at(getenv_fn, "getenv"), ldshim::host::find_object_is_lock_free());
    // Another name at that address, and the name at another address, are not it.
    EXPECT_FALSE(ldshim::host::exported_at(getenv_fn, "setenv"));
    EXPECT_FALSE(ldshim::host::exported_at(static_cast<char*>(getenv_fn) + 1, "getenv"));
}

}  // namespace
