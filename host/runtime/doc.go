// Package runtime owns the places where RUNTIME tools run: one [Runtime] per
// execution (one evaluation instance), with a private work dir that is
// removed on Close, every process started in it killed on Close, resource
// limits, and optionally a sandbox. A [Provider] creates runtimes; the
// [Providers] registry names them, with two defaults:
//
//   - local: a private work dir on the host, processes in their own process
//     group, resource limits; no isolation beyond that.
//   - sandbox: bubblewrap (Linux namespaces): a read-only view of the host,
//     a private /tmp, the work dir as the only writable place besides the
//     caller's Binds, no network unless [Options].Network, its own pid
//     namespace (so nothing in it outlives Close), resource limits.
//
// # Resource limits
//
// Limits are rlimits (setrlimit(2)), set by a tiny /bin/sh shim that runs
// between the runtime and the command: `ulimit -t … && ulimit -v … && …;
// exec "$@"`. The limits are in place before the command's first
// instruction and are inherited by everything it starts, with no window in
// which a child could fork unlimited (which setting them with prlimit(2)
// after Start would leave open), and no re-exec of the host binary. The shim
// costs one exec of /bin/sh and is left out when no limit is set. In the
// sandbox the shim runs inside the namespaces. The limits: CPU seconds
// (RLIMIT_CPU), memory (RLIMIT_DATA, rounded down to KiB), file size
// (RLIMIT_FSIZE, rounded down to 512-byte blocks), processes (RLIMIT_NPROC,
// threads included).
//
// Memory is RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 it counts the
// private writable mappings, i.e. the memory a process can fill, while the
// address space also counts mere reservations: a Go binary (every plugin)
// reserves about 800 MiB of address space at start and would not start
// under a RLIMIT_AS of 512 MiB, while it needs about 128 MiB of
// RLIMIT_DATA. Neither limits the page cache or shared memory; a memory
// cgroup would, but is not available to an unprivileged host everywhere.
//
// RLIMIT_NPROC counts the processes of a user and the kernel does not apply
// it to root. So when the host runs as root, the sandbox runs bubblewrap and
// everything in it as an unprivileged user ([Sandbox].UID, default 65534,
// "nobody") in its own user namespace, where the limit does hold (and the
// sandbox cannot read root-only host files); the work dir is handed to that
// user. The local runtime keeps the host's user, so as root its process
// limit is not enforced.
package runtime
