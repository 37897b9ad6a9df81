package integrity

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-plugin"
)

// privateDir is a fresh directory only this user can write to.
func privateDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyBinary makes a private copy of selfhash in dir, plus extra bytes
// appended (an ELF file runs the same with trailing bytes, but hashes
// differently).
func copyBinary(t testing.TB, dir, name, extra string) (path, sum string) {
	t.Helper()
	data, err := os.ReadFile(selfhash)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, extra...)
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, sha(data)
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func run(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command(path).Output()
	if err != nil {
		t.Fatalf("run %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// TestOpenHashesEachFileVersionOnce is not parallel: it reads the
// process-wide hash counter.
func TestOpenHashesEachFileVersionOnce(t *testing.T) {
	dir := privateDir(t)
	bin, sum := copyBinary(t, dir, "plugin", "once")

	before := hashes.Load()
	v, err := Open(bin, sum)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if got := hashes.Load() - before; got != 1 || v.Cached() {
		t.Fatalf("first Open hashed %d times (cached %v), want 1 hash", got, v.Cached())
	}
	for range 3 {
		v, err := Open(bin, sum)
		if err != nil {
			t.Fatal(err)
		}
		v.Close()
		if !v.Cached() {
			t.Errorf("Open of an unchanged binary did not use the cache")
		}
	}
	if got := hashes.Load() - before; got != 1 {
		t.Errorf("4 Opens of an unchanged binary hashed %d times, want 1", got)
	}

	// A new file version (here only its ctime changes) is hashed again.
	if err := os.Chmod(bin, 0o750); err != nil {
		t.Fatal(err)
	}
	v, err = Open(bin, sum)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if got := hashes.Load() - before; got != 2 || v.Cached() {
		t.Errorf("after chmod: %d hashes in all (cached %v), want 2", got, v.Cached())
	}
}

func TestOpenRefusesTamperedBinary(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	bin, sum := copyBinary(t, dir, "plugin", "")
	v, err := Open(bin, sum)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()

	// Tamper in place, keeping the inode, and put the mtime back: the
	// ctime still changes, so the cached verdict does not apply.
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("evil"))
	f.Close()
	if err := os.Chtimes(bin, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(bin)
	tampered := sha(data)

	_, err = Open(bin, sum)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Open of a tampered binary: err = %v, want ErrChecksum", err)
	}
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Want != sum || ce.Got != tampered {
		t.Fatalf("err = %#v, want a ChecksumError with both digests", err)
	}
	for _, want := range []string{sum, tampered, bin, "nexus-host plugins lock", "rebuild"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}

// TestExecRunsTheVerifiedFile: the binary at the path is replaced after
// Open; executing ExecPath still runs the verified content.
func TestExecRunsTheVerifiedFile(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	bin, sum := copyBinary(t, dir, "plugin", "")
	v, err := Open(bin, sum)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	evil, evilSum := copyBinary(t, dir, "evil", "swapped in after the check")
	if err := os.Rename(evil, bin); err != nil {
		t.Fatal(err)
	}
	if got := run(t, bin); got != evilSum {
		t.Fatalf("the path now runs %s, want the swapped-in %s", got, evilSum)
	}
	if got := run(t, v.ExecPath()); got != sum {
		t.Errorf("ExecPath %s ran a binary with sha256 %s, want the verified %s", v.ExecPath(), got, sum)
	}
	// And a fresh Open of the path refuses the swapped-in binary.
	if _, err := Open(bin, sum); !errors.Is(err, ErrChecksum) {
		t.Errorf("Open after the swap: err = %v, want ErrChecksum", err)
	}
}

func TestOpenRefusesUnsafeFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, bin string) string // returns the path to open
		is    error
		want  []string // "$DIR" stands for the plugin directory
	}{
		{
			name:  "world-writable binary",
			setup: func(t *testing.T, dir, bin string) string { must(t, os.Chmod(bin, 0o757)); return bin },
			is:    ErrUnsafe, want: []string{"world-writable", "chmod o-w"},
		},
		{
			name:  "world-writable directory",
			setup: func(t *testing.T, dir, bin string) string { must(t, os.Chmod(dir, 0o777)); return bin },
			is:    ErrUnsafe, want: []string{"directory", "world-writable", "chmod o-w $DIR"},
		},
		{
			name:  "sticky world-writable directory",
			setup: func(t *testing.T, dir, bin string) string { must(t, os.Chmod(dir, 0o777|os.ModeSticky)); return bin },
			is:    ErrUnsafe, want: []string{"world-writable"},
		},
		{
			name: "owned by another user",
			setup: func(t *testing.T, dir, bin string) string {
				if os.Geteuid() != 0 {
					t.Skip("only root can give a file away")
				}
				must(t, os.Chown(bin, 4242, 4242))
				return bin
			},
			is: ErrUnsafe, want: []string{"owned by uid 4242"},
		},
		{
			name:  "not executable",
			setup: func(t *testing.T, dir, bin string) string { must(t, os.Chmod(bin, 0o644)); return bin },
			want:  []string{"not executable", "chmod +x"},
		},
		{
			name:  "a directory",
			setup: func(t *testing.T, dir, bin string) string { return dir },
			want:  []string{"not a regular file"},
		},
		{
			name: "a fifo",
			setup: func(t *testing.T, dir, bin string) string {
				p := filepath.Join(dir, "fifo")
				must(t, syscall.Mkfifo(p, 0o755))
				return p
			},
			want: []string{"not a regular file"},
		},
		{
			name:  "missing",
			setup: func(t *testing.T, dir, bin string) string { return filepath.Join(dir, "nothing") },
			is:    os.ErrNotExist,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := privateDir(t)
			bin, sum := copyBinary(t, dir, "plugin", "")
			path := tt.setup(t, dir, bin)
			v, err := Open(path, sum)
			if err == nil {
				v.Close()
				t.Fatal("Open succeeded, want a refusal")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "$DIR", dir)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q: %v", w, err)
				}
			}
		})
	}
}

func TestOpenWithoutPinChecksButDoesNotHash(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	bin, _ := copyBinary(t, dir, "plugin", "")
	v, err := Open(bin, "")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.SHA256() != "" {
		t.Errorf("SHA256 = %q without a pin, want empty", v.SHA256())
	}
	must(t, os.Chmod(bin, 0o777))
	if _, err := Open(bin, ""); !errors.Is(err, ErrUnsafe) {
		t.Errorf("unpinned world-writable binary: err = %v, want ErrUnsafe", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bigBinary is an 18 MiB executable file, the size of a plugin linking
// gRPC.
func bigBinary(b *testing.B) (string, string) {
	b.Helper()
	dir := privateDir(b)
	data := make([]byte, 18<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(dir, "big")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return path, sha(data)
}

// BenchmarkOpen compares a verified Open of an 18 MiB binary on first
// launch (hash), on relaunch (cache), and go-plugin's SecureConfig, which
// re-hashes on every launch.
func BenchmarkOpen(b *testing.B) {
	bin, sum := bigBinary(b)
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(18 << 20)
		for b.Loop() {
			verified.Clear()
			v, err := Open(bin, sum)
			if err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			v, err := Open(bin, sum)
			if err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
	b.Run("go-plugin-SecureConfig", func(b *testing.B) {
		b.SetBytes(18 << 20)
		want, _ := hex.DecodeString(sum)
		for b.Loop() {
			sc := &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}
			ok, err := sc.Check(bin)
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}
