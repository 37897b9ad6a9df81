package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-eval/nexus/host/integrity"
	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/manifest"
)

// pluginDir builds the echo test plugin into a fresh plugin dir and
// returns its manifest.
func pluginDir(t *testing.T, b *testkit.Builder) *manifest.Manifest {
	t.Helper()
	dir, err := b.PluginDir(t.TempDir(), "test/testplugins/echo")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "echo")
	// A private copy: the tests below modify the file.
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(bin)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	m, diags := manifest.Load(filepath.Join(dir, manifest.FileName))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return m
}

func TestPinnedBinarySwappedAfterCheckStillRunsWhatWasVerified(t *testing.T) {
	b, err := testkit.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cleanup()
	m := pluginDir(t, b)
	sum, err := integrity.FileSHA256(m.BinaryPath())
	if err != nil {
		t.Fatal(err)
	}
	m.Plugin.SHA256 = sum
	impostor, err := b.Binary("test/testplugins/garbage")
	if err != nil {
		t.Fatal(err)
	}

	afterVerify = func(bin string) {
		// Replace the verified file at its path with another program.
		data, _ := os.ReadFile(impostor)
		tmp := bin + ".swap"
		os.WriteFile(tmp, data, 0o755)
		os.Rename(tmp, bin)
	}
	defer func() { afterVerify = func(string) {} }()

	l := New()
	defer l.Close()
	p, err := l.Slot(m).Process(context.Background())
	if err != nil {
		t.Fatalf("launch: %v (the swapped-in program ran instead of the verified one)", err)
	}
	if p.SHA256() != sum {
		t.Errorf("process digest %s, want the verified %s", p.SHA256(), sum)
	}
	// The next launch checks the file now at the path, and refuses it.
	l2 := New()
	defer l2.Close()
	afterVerify = func(string) {}
	_, err = l2.Slot(m).Process(context.Background())
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("launch of the swapped file: err = %v, want ErrChecksum", err)
	}
}

func TestTamperedBinaryAfterLockIsRefused(t *testing.T) {
	b, err := testkit.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cleanup()
	m := pluginDir(t, b)
	lock, err := integrity.Write(filepath.Join(t.TempDir(), integrity.LockFileName), []*manifest.Manifest{m})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(m.BinaryPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()

	l := New(WithPins(lock.Pin))
	defer l.Close()
	_, err = l.Slot(m).Process(context.Background())
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "nexus-host plugins lock") {
		t.Fatalf("err = %v, want a checksum error saying how to re-pin", err)
	}
	if n := l.Running(); n != 0 {
		t.Errorf("%d processes running after a refused launch", n)
	}
}
