// host/loaded_objects.h, the walk of the loaded objects that the hooks'
// patcher and the resolver's live model share: a library dlopened or
// dlclosed between two walks, against a tracker that matches each walk to
// the one before as both of them do (InOrderMatch), copying under the
// loader's lock only into room laid out before the walk.  The library is
// the fake libcuda.so.1 the test suite builds (tests/memtype/fake_cuda.c).
#include "host/loaded_objects.h"
#include "host/libc.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace host = ldshim::host;

// What a tracker learns from one walk.
struct Changes {
    std::vector<std::string> fresh, gone;  // by name
    std::size_t objects = 0;
    std::size_t searched = 0;  // objects not found where the last walk's order expected them
};

// Matches each walk to the one before, as the patcher and the live model
// do: by where an object is mapped (load bias and program headers).
class Tracker {
public:
    Changes walk() {
        host::walk_with_room(room_, room_count_, [&](const dl_phdr_info& info, const host::LoadCounters&) {
            const std::size_t i = room_.in_order(
                last_.size(),
                [&](std::size_t j) { return last_[j].addr == info.dlpi_addr && last_[j].phdr == info.dlpi_phdr; },
                [&] {
                    ++room_.searched;
                    for (std::size_t j = 0; j < last_.size(); ++j)
                        if (last_[j].addr == info.dlpi_addr && last_[j].phdr == info.dlpi_phdr) return j;
                    return host::InOrderMatch::npos;
                });
            room_.steps.push({info.dlpi_addr, info.dlpi_phdr, i, room_.text.put_string(host::name_of(info))});
            return true;
        });
        // After the walk: anything may allocate.
        Changes c;
        c.objects = room_.steps.items().size();
        c.searched = room_.searched;
        std::vector<bool> matched(last_.size());
        std::vector<Record> now;
        for (const Step& s : room_.steps.items()) {
            if (s.matched == host::InOrderMatch::npos)
                c.fresh.emplace_back(room_.text.at(s.name));
            else
                matched[s.matched] = true;
            now.push_back({s.addr, s.phdr, room_.text.at(s.name)});
        }
        for (std::size_t j = 0; j < last_.size(); ++j)
            if (!matched[j]) c.gone.push_back(last_[j].name);
        last_.swap(now);
        return c;
    }

private:
    struct Record {
        std::uintptr_t addr;
        const void* phdr;
        std::string name;
    };
    struct Step {
        std::uintptr_t addr;
        const void* phdr;
        std::size_t matched;  // in last_, or npos
        std::size_t name;     // in the text
    };
    struct Room {
        host::Scratch<Step> steps;
        host::ScratchText text;
        host::ScratchBlock block;
        host::InOrderMatch in_order;
        std::size_t searched = 0;
        void reset(std::size_t n) {
            block.lay_out(host::ListRoom{steps, n}, host::ListRoom{text, 16 * n});
            in_order = {};
            searched = 0;
        }
        bool overflowed() const { return steps.overflowed() || text.overflowed(); }
    };
    std::vector<Record> last_;
    Room room_;
    std::size_t room_count_ = 2;  // small: the walk is made again with more room
};

// The fixture library, loaded for the scope of one of these.
struct Loaded {
    void* handle = dlopen(FIXTURE_LIB, RTLD_NOW | RTLD_LOCAL);
    ~Loaded() { close(); }
    void close() {
        if (handle) dlclose(handle);
        handle = nullptr;
    }
};

bool is_fixture(const std::string& name) { return name == FIXTURE_LIB; }

TEST(LoadedObjects, a_library_dlopened_between_walks_is_reported_new_once) {
    Tracker t;
    const Changes first = t.walk();
    EXPECT_EQ(first.fresh.size(), first.objects) << "the first walk knows nothing yet";
    Loaded lib;
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    const Changes after_open = t.walk();
    ASSERT_EQ(after_open.fresh.size(), 1u);
    EXPECT_TRUE(is_fixture(after_open.fresh[0])) << after_open.fresh[0];
    EXPECT_TRUE(after_open.gone.empty());
    EXPECT_EQ(after_open.searched, 1u) << "only the new object is looked for past its expected place";
    const Changes again = t.walk();
    EXPECT_TRUE(again.fresh.empty()) << "reported once";
    EXPECT_TRUE(again.gone.empty());
    EXPECT_EQ(again.searched, 0u) << "an unchanged process: every object where the last walk's order expects it";
    EXPECT_EQ(again.objects, after_open.objects);
}

TEST(LoadedObjects, a_library_dlclosed_between_walks_is_reported_gone) {
    Tracker t;
    Loaded lib;
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    const Changes open = t.walk();
    lib.close();
    const Changes closed = t.walk();
    ASSERT_EQ(closed.gone.size(), 1u);
    EXPECT_TRUE(is_fixture(closed.gone[0])) << closed.gone[0];
    EXPECT_TRUE(closed.fresh.empty());
    EXPECT_EQ(closed.objects + 1, open.objects);
    EXPECT_EQ(closed.searched, 0u) << "the survivors keep their order";
    EXPECT_TRUE(t.walk().gone.empty()) << "reported once";
}

TEST(LoadedObjects, the_load_counters_move_with_a_dlopen_and_a_dlclose) {
    const host::LoadCounters before = host::load_counters();
    Loaded lib;
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    const host::LoadCounters opened = host::load_counters();
    EXPECT_EQ(opened.adds, before.adds + 1);
    EXPECT_EQ(opened.subs, before.subs);
    lib.close();
    const host::LoadCounters closed = host::load_counters();
    EXPECT_EQ(closed.adds, opened.adds);
    EXPECT_EQ(closed.subs, opened.subs + 1);
}

TEST(LoadedObjects, a_library_s_segments_hold_its_functions_and_no_other_object_s) {
    Loaded lib;
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    const auto fn = reinterpret_cast<std::uintptr_t>(dlsym(lib.handle, "fake_cuda_register"));
    ASSERT_NE(fn, 0u);
    int holders = 0, fixtures = 0, unnamed_first = 0, walked = 0;
    host::for_each_loaded([&](const dl_phdr_info& info, const host::LoadCounters&) {
        const bool fixture = is_fixture(host::name_of(info));
        if (walked++ == 0 && *host::name_of(info) == '\0') ++unnamed_first;  // the main program
        fixtures += fixture;
        int segments = 0;
        host::for_each_segment(info, [&](const host::Segment& g) {
            ++segments;
            EXPECT_LT(g.lo, g.hi);
            if (g.lo <= fn && fn < g.hi) {
                ++holders;
                EXPECT_TRUE(fixture) << host::name_of(info);
            }
        });
        return true;
    });
    EXPECT_EQ(fixtures, 1) << "each object once per walk";
    EXPECT_EQ(holders, 1);
    EXPECT_EQ(unnamed_first, 1) << "the main program comes first, with no name";
}

TEST(InOrderMatch, a_record_out_of_place_is_searched_for_and_the_next_expected_after_it) {
    const std::vector<int> last{10, 20, 30, 40};
    host::InOrderMatch in_order;
    int searches = 0;
    auto find = [&](int v) {
        return in_order(
            last.size(), [&](std::size_t j) { return last[j] == v; },
            [&] {
                ++searches;
                for (std::size_t j = 0; j < last.size(); ++j)
                    if (last[j] == v) return j;
                return host::InOrderMatch::npos;
            });
    };
    EXPECT_EQ(find(10), 0u);
    EXPECT_EQ(find(50), host::InOrderMatch::npos) << "new";
    EXPECT_EQ(searches, 1);
    EXPECT_EQ(find(20), 1u) << "a new object does not move the expected place";
    EXPECT_EQ(searches, 1);
    EXPECT_EQ(find(40), 3u) << "30 went";
    EXPECT_EQ(searches, 2);
    EXPECT_EQ(find(10), 0u) << "out of order: searched for";
    EXPECT_EQ(find(20), 1u) << "expected right after it";
    EXPECT_EQ(searches, 3);
}

}  // namespace
