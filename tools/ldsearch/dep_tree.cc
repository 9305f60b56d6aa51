#include "tools/ldsearch/dep_tree.h"

#include <unordered_set>

namespace ldsearch {

namespace {

bool answers_by_name(const Object& o, const std::string& name) {
    for (const auto& n : o.names)
        if (n == name) return true;
    return o.name == name;
}

struct Builder {
    const Engine& e;
    std::unordered_set<int> shown;

    void expand(DepNode& n) {
        if (n.object < 0 || !shown.insert(n.object).second) return;
        n.expanded = true;
        const Object& o = e.objects()[static_cast<std::size_t>(n.object)];
        for (const auto& need : o.facts.needed) add(n, need);
    }

    // One DT_NEEDED entry of `parent`.  An object's first appearance says how
    // it was found (by the lookup that loaded it, which in breadth-first load
    // order may have been another object's); later ones that it was there.
    void add(DepNode& parent, const std::string& need) {
        DepNode c;
        c.name = need;
        c.object = e.find_object(need);
        if (c.object < 0) {
            c.how = DepNode::How::not_found;
        } else if (!shown.count(c.object)) {
            c.how = DepNode::How::found;
        } else {
            const Object& t = e.objects()[static_cast<std::size_t>(c.object)];
            c.how = answers_by_name(t, need) ? DepNode::How::already_loaded : DepNode::How::soname_match;
        }
        parent.children.push_back(std::move(c));
        expand(parent.children.back());
    }
};

}  // namespace

DepNode dependency_tree(const Engine& e) {
    DepNode root;
    root.object = e.main_object();
    root.how = DepNode::How::root;
    Builder b{e, {}};
    b.shown.insert(root.object);
    root.expanded = true;
    for (int p : e.preloads()) {
        DepNode c;
        c.object = p;
        c.name = e.objects()[static_cast<std::size_t>(p)].name;
        c.how = DepNode::How::preload;
        root.children.push_back(std::move(c));
        b.expand(root.children.back());
    }
    for (const auto& need : e.objects()[static_cast<std::size_t>(root.object)].facts.needed) b.add(root, need);
    return root;
}

std::string object_display(const Engine& e, int idx, const std::string& argv0) {
    if (idx < 0) return "";
    const Object& o = e.objects()[static_cast<std::size_t>(idx)];
    return o.kind == Object::Kind::main ? argv0 : o.name;
}

const char* how_key(const Engine& e, const DepNode& n) {
    switch (n.how) {
        case DepNode::How::root: return "program";
        case DepNode::How::preload: return "preload";
        case DepNode::How::already_loaded: return "already_loaded";
        case DepNode::How::soname_match: return "soname_match";
        case DepNode::How::not_found: return "not_found";
        case DepNode::How::found: break;
    }
    const Object& o = e.objects()[static_cast<std::size_t>(n.object)];
    if (o.kind == Object::Kind::rtld || o.kind == Object::Kind::rtld_proxy) return "loader";
    if (o.kind == Object::Kind::vdso) return "vdso";
    switch (e.objects()[static_cast<std::size_t>(n.object)].found_by) {
        case Source::rpath: return "rpath";
        case Source::ld_library_path: return "ld_library_path";
        case Source::runpath: return "runpath";
        case Source::cache: return "cache";
        case Source::system: return "system";
        case Source::slash_name: return "path";
        case Source::same_file: return "same_file";
        case Source::already_loaded: return "already_loaded";
        case Source::none: break;
    }
    return "loaded";
}

std::string how_found(const Engine& e, const DepNode& n) {
    std::string key = how_key(e, n);
    if (key == "rpath" || key == "runpath") {
        const Object& o = e.objects()[static_cast<std::size_t>(n.object)];
        std::string owner = o.found_via >= 0 ? object_display(e, o.found_via, "") : "";
        if (o.found_via >= 0 && e.objects()[static_cast<std::size_t>(o.found_via)].kind == Object::Kind::main)
            owner = "the program";
        return std::string(key == "rpath" ? "RPATH" : "RUNPATH") + " of " + owner;
    }
    if (key == "ld_library_path") return "LD_LIBRARY_PATH";
    if (key == "cache") return "ld.so.cache";
    if (key == "system") return "system directory";
    if (key == "path") return "path";
    if (key == "same_file") return "same file as a loaded object";
    if (key == "preload") return "LD_PRELOAD";
    if (key == "loader") return "the dynamic loader itself";
    if (key == "vdso") return "the kernel's vDSO";
    if (key == "already_loaded") return "already loaded";
    if (key == "soname_match") return "already loaded as SONAME";
    if (key == "not_found") return "not found";
    return key;
}

}  // namespace ldsearch
