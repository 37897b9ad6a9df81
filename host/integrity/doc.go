// Package integrity pins plugin binaries by content. It owns the lock file
// (nexus.lock: the sha256 of every plugin binary, written by `nexus-host
// plugins lock` and checked by `nexus-host plugins verify`), and the
// verified open the launcher executes through: [Open] checks who may have
// changed a binary, checks its sha256 on the open descriptor (hashing only
// a file version it has not verified before), and keeps the descriptor
// open so that what runs is exactly what was verified.
package integrity
