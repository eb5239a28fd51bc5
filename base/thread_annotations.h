// Clang's thread-safety attributes (clang.llvm.org/docs/ThreadSafetyAnalysis.html)
// as macros, so that which lock guards what is written in the code and checked
// by the compiler instead of stated in comments. Under clang with
// -Wthread-safety (.ci/thread_safety builds the annotated rooms that way) a
// field read without its lock, or a REQUIRES function called without it, is a
// warning; every other compiler (GCC builds the project) sees nothing.
//
// Use them with base::Mutex and the lock types of base/mutex.h: std::mutex
// itself carries no attributes in libstdc++, so the analysis cannot see it.
//
//   mutable base::Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   void add() EXCLUDES(mu_) { base::MutexLock lock(mu_); bump(); }
//   void bump() REQUIRES(mu_) { ++count_; }
#pragma once

#if defined(__clang__)
#define MOONSEED_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MOONSEED_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are locks ("mutex", "shared mutex" name the kind in messages).
#define CAPABILITY(x) MOONSEED_THREAD_ANNOTATION(capability(x))
// On a class: an RAII object that holds the locks named by its constructor.
#define SCOPED_CAPABILITY MOONSEED_THREAD_ANNOTATION(scoped_lockable)

// On a field: reading or writing it needs the lock (shared for reads is enough).
#define GUARDED_BY(x) MOONSEED_THREAD_ANNOTATION(guarded_by(x))
// On a pointer field: what it points at needs the lock; the pointer itself does not.
#define PT_GUARDED_BY(x) MOONSEED_THREAD_ANNOTATION(pt_guarded_by(x))

// On a lock field: the order in which locks nest (checked with -Wthread-safety-beta).
#define ACQUIRED_BEFORE(...) MOONSEED_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) MOONSEED_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// On a function: the caller must hold the locks (exclusively / at least shared).
#define REQUIRES(...) MOONSEED_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) MOONSEED_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: the caller must not hold them (the function takes them itself).
#define EXCLUDES(...) MOONSEED_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it takes / lets go of the locks (no argument: the object itself).
#define ACQUIRE(...) MOONSEED_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) MOONSEED_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) MOONSEED_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) MOONSEED_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
// The first argument is the return value that means "acquired".
#define TRY_ACQUIRE(...) MOONSEED_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) MOONSEED_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))

// On a function: from its return on, the analysis takes the lock as held
// (for code that runs under a lock the analysis cannot see being taken).
#define ASSERT_CAPABILITY(x) MOONSEED_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) MOONSEED_THREAD_ANNOTATION(assert_shared_capability(x))
// On a function: it returns (a reference to) the lock x.
#define RETURN_CAPABILITY(x) MOONSEED_THREAD_ANNOTATION(lock_returned(x))

// On a function: not analysed. Say why next to every use.
#define NO_THREAD_SAFETY_ANALYSIS MOONSEED_THREAD_ANNOTATION(no_thread_safety_analysis)
