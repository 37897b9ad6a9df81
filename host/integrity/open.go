package integrity

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// Sentinels for errors.Is.
var (
	// ErrChecksum: the binary's sha256 differs from its pin. The error is
	// a *ChecksumError holding both digests.
	ErrChecksum = errors.New("sha256 mismatch")
	// ErrUnsafe: someone other than the binary's owner or root could have
	// changed the binary (world-writable file or directory, foreign owner),
	// so its content proves nothing.
	ErrUnsafe = errors.New("unsafe plugin binary")
)

// ChecksumError is a pinned binary whose content differs from its pin.
type ChecksumError struct {
	Path string
	// Want is the pinned sha256, Got the binary's (lower-case hex).
	Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %v: pinned sha256 %s but binary has sha256 %s: if the binary was rebuilt on purpose, run `nexus-host plugins lock` (or update plugin.sha256); otherwise rebuild it from trusted source",
		e.Path, ErrChecksum, e.Want, e.Got)
}

// Unwrap makes errors.Is(err, ErrChecksum) hold.
func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// Verified is an open plugin binary whose content was verified. Execute
// ExecPath, not the original path: it names the open descriptor, so
// replacing the file at the path after Open changes nothing. Close it once
// the process started.
type Verified struct {
	f      *os.File
	path   string
	sha256 string
	cached bool
}

// Path is the path the binary was opened at.
func (v *Verified) Path() string { return v.path }

// SHA256 is the binary's sha256 (lower-case hex).
func (v *Verified) SHA256() string { return v.sha256 }

// Cached reports whether the digest came from the cache of verified file
// versions rather than from hashing.
func (v *Verified) Cached() bool { return v.cached }

// ExecPath returns /proc/self/fd/N of the kept-open descriptor. A child
// started with it (os/exec) executes the very file Open verified: the
// kernel resolves the path in the child, which inherited descriptor N
// across fork and closes it only on exec. It does not work for "#!"
// scripts, whose interpreter opens the path after the descriptor closed.
func (v *Verified) ExecPath() string { return fmt.Sprintf("/proc/self/fd/%d", v.f.Fd()) }

// File returns the open descriptor (for fexecve-style use and tests).
func (v *Verified) File() *os.File { return v.f }

// Close closes the descriptor; call it after the process started.
func (v *Verified) Close() error { return v.f.Close() }

// fileKey identifies one version of a file without reading it: rebuilding
// or replacing a binary changes its inode, size, mtime or ctime, and no
// unprivileged user can set ctime.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func keyOf(st *syscall.Stat_t) fileKey {
	return fileKey{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}
}

// verified caches digests of file versions already hashed in this process.
var verified sync.Map // fileKey -> string

// hashes counts full hashes, for tests.
var hashes atomic.Int64

// Open opens the binary at path for execution and verifies it: it must be
// a regular, executable file that only its owner (the host's user or root)
// can change, in a directory no other user can change, and when wantSHA256
// is not empty its content must hash to it. All checks run on the open
// descriptor, so they hold for the file ExecPath executes. A file version
// (device, inode, size, mtime, ctime) verified before is not hashed again.
//
// With an empty wantSHA256 nothing is hashed and SHA256 is "".
func Open(path, wantSHA256 string) (*Verified, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open plugin binary: %w", err)
	}
	v, err := verify(f, path, wantSHA256)
	if err != nil {
		f.Close()
		return nil, err
	}
	return v, nil
}

func verify(f *os.File, path, want string) (*Verified, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat plugin binary %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("stat plugin binary %s: no unix file status on this system", path)
	}
	if err := checkFile(path, fi, st); err != nil {
		return nil, err
	}
	if err := checkDir(path); err != nil {
		return nil, err
	}
	v := &Verified{f: f, path: path}
	if want == "" {
		return v, nil
	}
	key := keyOf(st)
	if d, ok := verified.Load(key); ok {
		v.sha256, v.cached = d.(string), true
	} else {
		if v.sha256, err = hashFile(f); err != nil {
			return nil, fmt.Errorf("hash plugin binary %s: %w", path, err)
		}
		// Cache the digest only if the file did not change while it was
		// read; otherwise the next Open hashes again.
		if fi2, err := f.Stat(); err == nil {
			if st2, ok := fi2.Sys().(*syscall.Stat_t); ok && keyOf(st2) == key {
				verified.Store(key, v.sha256)
			}
		}
	}
	if v.sha256 != want {
		return nil, &ChecksumError{Path: path, Want: want, Got: v.sha256}
	}
	return v, nil
}

// checkFile refuses what cannot be a trusted executable.
func checkFile(path string, fi fs.FileInfo, st *syscall.Stat_t) error {
	mode := fi.Mode()
	switch {
	case !mode.IsRegular():
		return fmt.Errorf("plugin binary %s is not a regular file (mode %s)", path, mode)
	case mode.Perm()&0o002 != 0:
		return fmt.Errorf("%w: %s is world-writable (mode %s), so anyone could have replaced its content: run `chmod o-w %s`",
			ErrUnsafe, path, mode.Perm(), path)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%w: %s is owned by uid %d, neither root nor this user (uid %d), who could change it at any time: install it as this user or root",
			ErrUnsafe, path, st.Uid, os.Geteuid())
	case mode.Perm()&0o111 == 0:
		return fmt.Errorf("plugin binary %s is not executable (mode %s): run `chmod +x %s`", path, mode.Perm(), path)
	}
	return nil
}

// checkDir refuses a binary whose directory anyone may write to: anyone
// could rename another file over it.
func checkDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat plugin directory %s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%w: directory %s of %s is world-writable (mode %s), so anyone could replace the binary: run `chmod o-w %s`",
			ErrUnsafe, dir, filepath.Base(path), fi.Mode().Perm(), dir)
	}
	return nil
}

// hashFile hashes f from its start, leaving the offset at the end.
func hashFile(f *os.File) (string, error) {
	hashes.Add(1)
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FileSHA256 hashes the file at path, without the cache or any check.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashFile(f)
}
