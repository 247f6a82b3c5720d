// Where the processes `inprof record` starts hand over their lifeboats (lib/session/lifeboat.h):
// an abstract UNIX socket named in INPROF_LIFEBOAT, and a thread that takes each boat, watches
// its process (a pidfd) and, when the process is gone (or replaced its image) before its session
// finished the dump, lands the boat: the dump is finished with what the process had not written.
#ifndef INPROF_TOOLS_INPROF_LIFEBOAT_DOCK_H_
#define INPROF_TOOLS_INPROF_LIFEBOAT_DOCK_H_

#include <memory>

namespace inprof::launcher {

class LifeboatDock {
 public:
  // Listens, and sets INPROF_LIFEBOAT for the children; null where it cannot (the children then
  // run without: their dumps end as before, at the writer's last chunk, if they leave by _exit).
  static std::unique_ptr<LifeboatDock> open();
  ~LifeboatDock();
  LifeboatDock(const LifeboatDock&) = delete;
  LifeboatDock& operator=(const LifeboatDock&) = delete;

  // After the program ended: takes the boats still on their way, lands those whose process is
  // gone, and stops. A boat whose process still runs (a daemon it left behind) is left to it.
  void finish();

 private:
  struct State;
  explicit LifeboatDock(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_LIFEBOAT_DOCK_H_
