// Happens-before edges that gRPC's callback API guarantees but ThreadSanitizer cannot see.
// gRPC calls a reaction (OnReadDone, OnWriteDone) after the StartRead or StartWrite that asked
// for it, and OnDone after Finish and every other reaction, often on another of its threads;
// it hands the call over through its completion queue and executor, whose locks and atomics
// live in the uninstrumented gRPC and abseil. A reactor calls HandOff(token) right before it
// starts an operation and TakeOver(token) first thing in that operation's reaction, with one
// token per kind of operation (the read target for reads, the outbox for writes, the reactor
// for Finish), so that only the thread that started the operation is ordered before the
// reaction, never an unrelated one. In builds without ThreadSanitizer both compile to nothing.
// OpToken names one kind of operation on one reactor.
#pragma once

#include <utility>

#if defined(__SANITIZE_THREAD__)
#define DLAUNCH_TSAN_HANDOFF 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DLAUNCH_TSAN_HANDOFF 1
#endif
#endif

#if defined(DLAUNCH_TSAN_HANDOFF)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace dlaunch {

// Everything this thread did so far happens before the TakeOver(token) that follows.
inline void HandOff(const void* token) {
#if defined(DLAUNCH_TSAN_HANDOFF)
  __tsan_release(const_cast<void*>(token));
#else
  (void)token;
#endif
}

// What the threads did before their HandOff(token) happens before what this thread does next.
inline void TakeOver(const void* token) {
#if defined(DLAUNCH_TSAN_HANDOFF)
  __tsan_acquire(const_cast<void*>(token));
#else
  (void)token;
#endif
}

// The kinds of operation a reactor hands over: its construction (before gRPC binds it and runs
// its first reaction on another thread), StartRead, StartWrite, Finish.
enum class ReactorOp { kBind = 0, kRead = 1, kWrite = 2, kFinish = 3 };

// A distinct address per reactor and kind: a byte of the reactor's own vtable pointer, where no
// lock or atomic of gRPC's lies, and which is freed (with its TSan sync state) with the reactor.
inline const void* OpToken(const void* reactor, ReactorOp op) {
  return static_cast<const char*>(reactor) + static_cast<int>(op);
}

// A reactor's operations, each right after the HandOff of its kind; the reaction takes it over.
template <typename Reactor, typename Message>
void StartReadHandedOff(Reactor* reactor, Message* into) {
  HandOff(OpToken(reactor, ReactorOp::kRead));
  reactor->StartRead(into);
}
template <typename Reactor, typename Message>
void StartWriteHandedOff(Reactor* reactor, const Message* message) {
  HandOff(OpToken(reactor, ReactorOp::kWrite));
  reactor->StartWrite(message);
}
template <typename Reactor, typename Status>
void FinishHandedOff(Reactor* reactor, Status status) {
  HandOff(OpToken(reactor, ReactorOp::kFinish));
  reactor->Finish(std::move(status));
}

// TakeOver of every kind, for OnDone: gRPC calls it after every other reaction.
inline void TakeOverAll(const void* reactor) {
#if defined(DLAUNCH_TSAN_HANDOFF)
  for (ReactorOp op : {ReactorOp::kBind, ReactorOp::kRead, ReactorOp::kWrite, ReactorOp::kFinish}) {
    TakeOver(OpToken(reactor, op));
  }
#else
  (void)reactor;
#endif
}

}  // namespace dlaunch
