#include "api/copies.h"

#include <cstring>

namespace inprof::internal {
namespace {

std::atomic<const CopyInterface*> g_primary_slot{nullptr};

const CopyInterface kOwn = {
    kCopyInterfaceLayout,    sizeof(CopyInterface), INPROF_VERSION_STRING,
    &g_primary_slot,         here::start,           here::stop,
    here::is_running,        here::pause,           here::resume,
    here::capture,           here::define_category, here::register_marker_type,
    here::record_marker,     here::label_push,      here::label_pop,
    here::register_counter,  here::set_thread_name, here::register_thread,
    here::unregister_thread,
};

const CopyInterface* elect() {
  const CopyInterface* holder = find_copy_holder();
  if (holder == nullptr || holder->layout != kCopyInterfaceLayout ||
      holder->size != sizeof(CopyInterface) || std::strcmp(holder->version, kOwn.version) != 0) {
    return nullptr;  // alone, or beside a copy of another version: on our own
  }
  const CopyInterface* expected = nullptr;
  if (holder->primary->compare_exchange_strong(expected, &kOwn)) return nullptr;  // first
  if (expected == &kOwn) return nullptr;
  // A follower: everything goes to the primary, which drops what comes while it does not record.
  g_recording.store(true, std::memory_order_relaxed);
  return expected;
}

}  // namespace

const CopyInterface& own_copy_interface() { return kOwn; }

const CopyInterface* primary_copy() {
  static const CopyInterface* const primary = elect();
  return primary;
}

}  // namespace inprof::internal

// The rendezvous symbol (exported from the shared library; from a program only if it exports
// its symbols, e.g. -rdynamic).
extern "C" INPROF_API const inprof::internal::CopyInterface* inprof_copy_interface_v1() {
  return &inprof::internal::own_copy_interface();
}
