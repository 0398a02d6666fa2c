"""The native ("JIT'd") thread pool: workers that run kernel chunks with no Python.

The pool is a little LLVM IR, compiled once per process (without
optimization: see ``_functions``). Worker threads are
started with ``pthread_create`` on the compiled ``tack_pool_worker``; a launch
is one ctypes call to ``tack_pool_run`` with three arguments (the launcher's
job: the pool, the kernel's entry and the number of parts, fixed when the
launcher is made; the argument pack; the row count), which publishes the
job, wakes the workers, runs chunk 0 on the calling thread and waits for the
rest. ctypes converts each argument on every call (about 120 ns each here),
hence the job. ctypes
releases the GIL for that call, so the workers and the caller run in
parallel and Python is not involved per chunk.

Waiting: a worker spins ``TACK_CPU_POOL_SPIN`` pause iterations watching the
job generation, then sleeps on it with ``futex``; the caller does the same on
the completion flag. Sleepers announce themselves before sleeping, and the
waker checks after publishing, both sequentially consistent, so a wake-up is
never lost (a futex wait also returns at once if the word already changed).

Launches from several Python threads through one pool take turns on a futex
mutex inside ``tack_pool_run``, so nothing in Python stands between a
launcher and the foreign call. After ``os.fork`` the child's pools reset
their state and start new workers at once (the parent's did not survive
the fork, and a parent thread may have held the lock).

Linux only (futex); elsewhere ``TACK_CPU_POOL=python`` behaviour is used.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import weakref

from . import fastcall, jit

_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}
# A spinning thread yields its CPU every this many pause iterations (a power of
# two), so that a thread the scheduler put on the same CPU (a worker woken onto
# its caller's CPU after an idle spell) runs instead of waiting out the spin.
YIELD_EVERY = 64

# struct Pool (offsets in bytes): all i32 fields are futex or flag words.
_POOL_IR = r"""
%Pool = type { i32, i32, i32, i32, i32, i32, i64, i64, i64, i32, i32, i32 }
; 0 generation, 1 remaining, 2 done, 3 stop, 4 worker_sleepers, 5 caller_sleeping,
; 6 fn, 7 pack, 8 count, 9 parts, 10 spin, 11 lock (0 free, 1 held, 2 held with waiters)
%Worker = type { %Pool*, i64, i32 }  ; pool, index, generation seen at start
%Job = type { %Pool*, i64, i32 }     ; pool, kernel entry, parts: one per launcher

declare i64 @syscall(i64, ...)
declare i32 @sched_yield()

define internal void @relax() {
  PAUSE
  ret void
}

define internal void @futex_wait(i32* %word, i32 %expected) {
  call i64 (i64, ...) @syscall(i64 SYS_FUTEX, i32* %word, i32 128, i32 %expected, i8* null)
  ret void
}

; A futex mutex (Drepper, "Futexes Are Tricky", mutex 2): fan-outs from
; several Python threads through one pool run one at a time.
define internal void @lock(i32* %word) {
entry:
  %try = cmpxchg i32* %word, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %try, 1
  br i1 %got, label %held, label %contend
contend:
  %old = atomicrmw xchg i32* %word, i32 2 acquire
  %free = icmp eq i32 %old, 0
  br i1 %free, label %held, label %block
block:
  call void @futex_wait(i32* %word, i32 2)
  br label %contend
held:
  ret void
}

define internal void @unlock(i32* %word) {
entry:
  %old = atomicrmw xchg i32* %word, i32 0 release
  %waiters = icmp eq i32 %old, 2
  br i1 %waiters, label %wake, label %done
wake:
  call void @futex_wake(i32* %word, i32 1)
  br label %done
done:
  ret void
}

define internal void @futex_wake(i32* %word, i32 %count) {
  call i64 (i64, ...) @syscall(i64 SYS_FUTEX, i32* %word, i32 129, i32 %count)
  ret void
}

define internal void @run_chunk(%Pool* %p, i64 %k) {
  %fnp = getelementptr %Pool, %Pool* %p, i32 0, i32 6
  %fnv = load i64, i64* %fnp
  %fn = inttoptr i64 %fnv to void (i8*, i64, i64)*
  %packp = getelementptr %Pool, %Pool* %p, i32 0, i32 7
  %packv = load i64, i64* %packp
  %pack = inttoptr i64 %packv to i8*
  %countp = getelementptr %Pool, %Pool* %p, i32 0, i32 8
  %count = load i64, i64* %countp
  %partsp = getelementptr %Pool, %Pool* %p, i32 0, i32 9
  %parts32 = load i32, i32* %partsp
  %parts = sext i32 %parts32 to i64
  %base = udiv i64 %count, %parts
  %extra = urem i64 %count, %parts
  %lt = icmp ult i64 %k, %extra
  %kmin = select i1 %lt, i64 %k, i64 %extra
  %kb = mul i64 %k, %base
  %start = add i64 %kb, %kmin
  %one = zext i1 %lt to i64
  %len = add i64 %base, %one
  %end = add i64 %start, %len
  %empty = icmp eq i64 %len, 0
  br i1 %empty, label %skip, label %call
call:
  call void %fn(i8* %pack, i64 %start, i64 %end)
  br label %skip
skip:
  ret void
}

; Wait until *word != seen: spin, then sleep. Returns the new value.
define internal i32 @await_change(%Pool* %p, i32* %word, i32 %seen, i32* %sleepers) {
entry:
  %spinp = getelementptr %Pool, %Pool* %p, i32 0, i32 10
  %spin = load i32, i32* %spinp
  br label %spinning
spinning:
  %i = phi i32 [0, %entry], [%i2, %again], [%i2, %yield], [%spin, %woken]
  %now = load atomic i32, i32* %word acquire, align 4
  %changed = icmp ne i32 %now, %seen
  br i1 %changed, label %done, label %check
check:
  %more = icmp slt i32 %i, %spin
  br i1 %more, label %again, label %sleep
again:
  call void @relax()
  %i2 = add i32 %i, 1
  %low = and i32 %i2, YIELD_MASK
  %turn = icmp eq i32 %low, 0
  br i1 %turn, label %yield, label %spinning
yield:
  call i32 @sched_yield()
  br label %spinning
sleep:
  atomicrmw add i32* %sleepers, i32 1 seq_cst
  %now2 = load atomic i32, i32* %word seq_cst, align 4
  %changed2 = icmp ne i32 %now2, %seen
  br i1 %changed2, label %woken, label %wait
wait:
  call void @futex_wait(i32* %word, i32 %seen)
  br label %woken
woken:
  atomicrmw sub i32* %sleepers, i32 1 seq_cst
  br label %spinning
done:
  ret i32 %now
}

define i8* @tack_pool_worker(i8* %arg) {
entry:
  %w = bitcast i8* %arg to %Worker*
  %pp = getelementptr %Worker, %Worker* %w, i32 0, i32 0
  %p = load %Pool*, %Pool** %pp
  %kp = getelementptr %Worker, %Worker* %w, i32 0, i32 1
  %k = load i64, i64* %kp
  %gen = getelementptr %Pool, %Pool* %p, i32 0, i32 0
  %remaining = getelementptr %Pool, %Pool* %p, i32 0, i32 1
  %donep = getelementptr %Pool, %Pool* %p, i32 0, i32 2
  %stopp = getelementptr %Pool, %Pool* %p, i32 0, i32 3
  %sleepers = getelementptr %Pool, %Pool* %p, i32 0, i32 4
  %caller = getelementptr %Pool, %Pool* %p, i32 0, i32 5
  %partsp = getelementptr %Pool, %Pool* %p, i32 0, i32 9
  %firstp = getelementptr %Worker, %Worker* %w, i32 0, i32 2
  %first = load i32, i32* %firstp
  br label %loop
loop:
  %seen = phi i32 [%first, %entry], [%g, %next]
  %g = call i32 @await_change(%Pool* %p, i32* %gen, i32 %seen, i32* %sleepers)
  %stop = load atomic i32, i32* %stopp acquire, align 4
  %quit = icmp ne i32 %stop, 0
  br i1 %quit, label %exit, label %work
work:
  %parts32 = load i32, i32* %partsp
  %parts = sext i32 %parts32 to i64
  %mine = icmp ult i64 %k, %parts
  br i1 %mine, label %run, label %next
run:
  call void @run_chunk(%Pool* %p, i64 %k)
  %left = atomicrmw sub i32* %remaining, i32 1 seq_cst
  %last = icmp eq i32 %left, 1
  br i1 %last, label %finish, label %next
finish:
  store atomic i32 1, i32* %donep seq_cst, align 4
  %waiting = load atomic i32, i32* %caller seq_cst, align 4
  %must = icmp ne i32 %waiting, 0
  br i1 %must, label %wake, label %next
wake:
  call void @futex_wake(i32* %donep, i32 1)
  br label %next
next:
  br label %loop
exit:
  ret i8* null
}

define void @tack_pool_run(i8* %rawjob, i64 %pack, i64 %count) {
entry:
  %job = bitcast i8* %rawjob to %Job*
  %jpoolp = getelementptr %Job, %Job* %job, i32 0, i32 0
  %p = load %Pool*, %Pool** %jpoolp
  %jfnp = getelementptr %Job, %Job* %job, i32 0, i32 1
  %fn = load i64, i64* %jfnp
  %jpartsp = getelementptr %Job, %Job* %job, i32 0, i32 2
  %parts = load i32, i32* %jpartsp
  %lockp = getelementptr %Pool, %Pool* %p, i32 0, i32 11
  call void @lock(i32* %lockp)
  %gen = getelementptr %Pool, %Pool* %p, i32 0, i32 0
  %remaining = getelementptr %Pool, %Pool* %p, i32 0, i32 1
  %donep = getelementptr %Pool, %Pool* %p, i32 0, i32 2
  %sleepers = getelementptr %Pool, %Pool* %p, i32 0, i32 4
  %caller = getelementptr %Pool, %Pool* %p, i32 0, i32 5
  %fnp = getelementptr %Pool, %Pool* %p, i32 0, i32 6
  store i64 %fn, i64* %fnp
  %packp = getelementptr %Pool, %Pool* %p, i32 0, i32 7
  store i64 %pack, i64* %packp
  %countp = getelementptr %Pool, %Pool* %p, i32 0, i32 8
  store i64 %count, i64* %countp
  %partsp = getelementptr %Pool, %Pool* %p, i32 0, i32 9
  store i32 %parts, i32* %partsp
  %others = sub i32 %parts, 1
  store i32 %others, i32* %remaining
  store atomic i32 0, i32* %donep seq_cst, align 4
  atomicrmw add i32* %gen, i32 1 seq_cst
  %asleep = load atomic i32, i32* %sleepers seq_cst, align 4
  %any = icmp ne i32 %asleep, 0
  br i1 %any, label %wake, label %mine
wake:
  call void @futex_wake(i32* %gen, i32 2147483647)
  br label %mine
mine:
  call void @run_chunk(%Pool* %p, i64 0)
  %none = icmp eq i32 %others, 0
  br i1 %none, label %out, label %wait
wait:
  %d = call i32 @await_change(%Pool* %p, i32* %donep, i32 0, i32* %caller)
  br label %out
out:
  call void @unlock(i32* %lockp)
  ret void
}

define void @tack_pool_stop(i8* %raw) {
  %p = bitcast i8* %raw to %Pool*
  %gen = getelementptr %Pool, %Pool* %p, i32 0, i32 0
  %stopp = getelementptr %Pool, %Pool* %p, i32 0, i32 3
  store atomic i32 1, i32* %stopp seq_cst, align 4
  atomicrmw add i32* %gen, i32 1 seq_cst
  call void @futex_wake(i32* %gen, i32 2147483647)
  ret void
}
"""


class _PoolState(ctypes.Structure):
    _fields_ = [("generation", ctypes.c_int32), ("remaining", ctypes.c_int32),
                ("done", ctypes.c_int32), ("stop", ctypes.c_int32),
                ("worker_sleepers", ctypes.c_int32), ("caller_sleeping", ctypes.c_int32),
                ("fn", ctypes.c_int64), ("pack", ctypes.c_int64),
                ("count", ctypes.c_int64), ("parts", ctypes.c_int32),
                ("spin", ctypes.c_int32), ("lock", ctypes.c_int32)]


class _WorkerArg(ctypes.Structure):
    _fields_ = [("pool", ctypes.c_void_p), ("index", ctypes.c_int64),
                ("seen", ctypes.c_int32)]


class Job(ctypes.Structure):
    """What stays the same from one launch of a kernel to the next."""
    _fields_ = [("pool", ctypes.c_void_p), ("entry", ctypes.c_int64),
                ("parts", ctypes.c_int32)]


_STOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_compiled = None
_compile_lock = threading.Lock()
_live_pools: "weakref.WeakSet" = weakref.WeakSet()


def available() -> bool:
    return platform.system() == "Linux" and platform.machine() in _SYS_FUTEX


def _functions():
    global _compiled
    if _compiled is None:
        with _compile_lock:
            if _compiled is None:
                machine = platform.machine()
                pause = ("call void @llvm.x86.sse2.pause()" if machine == "x86_64"
                         else "call void asm sideeffect \"yield\", \"\"()")
                text = _POOL_IR.replace("SYS_FUTEX", str(_SYS_FUTEX[machine]))
                text = text.replace("PAUSE", pause).replace("YIELD_MASK", str(YIELD_EVERY - 1))
                if machine == "x86_64":
                    text += "\ndeclare void @llvm.x86.sse2.pause()\n"
                # Unoptimized, as glue is: LLVM's O3 took 35-70 ms of every
                # process's start-up here (a warm process compiles nothing else),
                # and an empty fan-out measured the same either way.
                obj = jit.compile_glue(text)
                run = jit.load(obj, "tack_pool_run")
                worker = jit.engine().address("tack_pool_worker")
                stop = jit.engine().address("tack_pool_stop")
                _compiled = (fastcall.builtin(run, 3), worker, _STOP(stop))
    return _compiled


_libc = ctypes.CDLL(None, use_errno=True)
_libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_void_p]
_libc.pthread_join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]


class _Threads:
    """The worker threads of one pool: their ids, and the process that made them."""

    def __init__(self):
        self.tids = []
        self.pid = os.getpid()


def _join(stop, state, args, threads: _Threads) -> None:
    """Stop and join the workers. It holds the pool's state and the workers'
    arguments until they are gone: workers left running on freed memory would
    take whatever Python later writes there for a job."""
    if not threads.tids or os.getpid() != threads.pid:
        return
    stop(ctypes.addressof(state))
    for tid in threads.tids:
        _libc.pthread_join(tid, None)
    threads.tids.clear()


class NativePool:
    """``threads - 1`` native workers; ``run`` is one foreign call per launch.

    The workers are stopped and joined when the pool is collected (a device
    dropped) or at exit, whichever comes first."""

    def __init__(self, threads: int, spin: int):
        self.threads = threads
        # run(job_address, pack_address, count): the compiled fan-out itself, for
        # the launcher to call with no Python in between (the native lock makes
        # launches from several threads take turns).
        self.run, worker, self._stop = _functions()
        self._state = _PoolState(spin=spin)
        self._address = ctypes.addressof(self._state)
        self._args = [_WorkerArg(self._address, k) for k in range(1, threads)]
        self._threads = _Threads()
        weakref.finalize(self, _join, self._stop, self._state, self._args, self._threads)
        self._worker = worker
        self._start_workers()
        _live_pools.add(self)

    def _start_workers(self) -> None:
        self._threads.pid = os.getpid()
        for arg in self._args:
            # A worker waits for a generation newer than the one current now,
            # whenever its thread actually starts running.
            arg.seen = self._state.generation
            tid = ctypes.c_ulong()
            err = _libc.pthread_create(ctypes.byref(tid), None, self._worker,
                                       ctypes.addressof(arg))
            if err:
                self.close()
                raise RuntimeError(f"pthread_create failed with error {err}")
            self._threads.tids.append(tid.value)

    def job(self, entry_address: int) -> tuple:
        """``(job, owner)`` for a kernel entry on this pool: ``run`` takes
        ``job`` (the address of a :class:`Job`), valid while ``owner`` lives."""
        job = Job(self._address, entry_address, self.threads)
        return ctypes.addressof(job), (self, job)

    def _restart(self) -> None:
        """In a forked child: the workers did not survive, and the parent's
        threads may have left a launch half done and the lock held."""
        state = self._state
        state.stop = state.remaining = state.done = state.lock = 0
        state.worker_sleepers = state.caller_sleeping = 0
        self._threads.tids.clear()
        self._start_workers()

    def fanout_seconds(self) -> float:
        """Measured cost of one fan-out of an empty kernel over every thread."""
        job, owner = self.job(jit.null_entry())
        return jit.typical_seconds(lambda: self.run(job, 0, self.threads))

    def close(self) -> None:
        """Stop and join the workers."""
        _join(self._stop, self._state, self._args, self._threads)


def _restart_after_fork() -> None:
    for pool in list(_live_pools):
        pool._restart()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_restart_after_fork)
