package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-eval/nexus/host/integrity"
)

// replaceWithTampered swaps path for a private copy with extra bytes (the
// binary is hard-linked to the shared build, which must stay intact) and
// returns the sha256 before and after.
func replaceWithTampered(t *testing.T, path string) (before, after string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, _ = integrity.FileSHA256(path)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	after, _ = integrity.FileSHA256(path)
	return before, after
}

func TestPluginsLockAndVerify(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("roots", pkgMath, pkgEcho)
	lockPath := filepath.Join(s.cwd, integrity.LockFileName)

	r := s.run("--plugins", root, "plugins", "lock")
	assertExit(t, r, 0)
	mathSum, _ := integrity.FileSHA256(filepath.Join(root, "math", "math"))
	assertContains(t, "lock stdout", r.stdout, mathSum+"  math  ../roots/math/math\n", "  echo  ../roots/echo/echo\n")
	assertContains(t, "lock stderr", r.stderr, "locked 2 plugin(s) in nexus.lock")
	l, err := integrity.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Plugins) != 2 || l.Plugins[0].Name != "echo" || l.Plugins[1].Name != "math" {
		t.Fatalf("lock entries = %+v, want echo and math", l.Plugins)
	}

	r = s.run("--plugins", root, "plugins", "verify")
	assertExit(t, r, 0)
	assertContains(t, "verify stdout", r.stdout, "2 plugin(s) match nexus.lock")

	// Tampering after locking is caught, with both digests and the fix.
	before, after := replaceWithTampered(t, filepath.Join(root, "echo", "echo"))
	r = s.run("--plugins", root, "plugins", "verify")
	assertExit(t, r, 1)
	assertContains(t, "verify stderr", r.stderr, `plugin "echo"`, "changed since it was locked", before, after, "nexus-host plugins lock")
	if strings.Contains(r.stderr, `plugin "math"`) {
		t.Errorf("verify blames the intact math plugin:\n%s", r.stderr)
	}

	// Relocking accepts the new binary.
	r = s.run("--plugins", root, "plugins", "lock")
	assertExit(t, r, 0)
	assertContains(t, "relock stdout", r.stdout, after+"  echo")
	r = s.run("--plugins", root, "plugins", "verify")
	assertExit(t, r, 0)
}

func TestPluginsVerifyProblems(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("roots", pkgMath, pkgEcho)
	custom := s.path("locks", "pins.lock")
	s.mkdir(filepath.Dir(custom))

	r := s.run("--plugins", root, "plugins", "lock", "--file", custom)
	assertExit(t, r, 0)
	if _, err := os.Stat(filepath.Join(s.cwd, integrity.LockFileName)); err == nil {
		t.Errorf("--file was ignored: nexus.lock written in the working directory")
	}

	// A plugin added after locking, one removed, one binary deleted.
	if _, err := builder.PluginDir(root, pkgArith); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "math")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "echo", "echo")); err != nil {
		t.Fatal(err)
	}
	r = s.run("--plugins", root, "plugins", "verify", "--file", custom)
	assertExit(t, r, 1)
	assertContains(t, "verify stderr", r.stderr,
		"3 plugin(s) do not match the lock file",
		`plugin "arith" is not in the lock file: run `+"`nexus-host plugins lock`",
		`plugin "echo": binary `+filepath.Join(root, "echo", "echo")+" does not exist",
		`plugin "math" is in the lock file but was not discovered`)

	// Locking refuses a plugin without its binary and writes nothing.
	r = s.run("--plugins", root, "plugins", "lock", "--file", custom)
	assertExit(t, r, 1)
	assertContains(t, "lock stderr", r.stderr, `plugin "echo"`, "does not exist: build it first", "nothing written")

	// No lock file at all.
	r = s.run("--plugins", root, "plugins", "verify")
	assertExit(t, r, 1)
	assertContains(t, "verify stderr", r.stderr, "no lock file", "nexus-host plugins lock")

	// A broken lock file is reported with its position.
	if err := os.WriteFile(custom, []byte("version = 1\n[[plugin]]\nname = \"math\"\nbogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = s.run("--plugins", root, "plugins", "verify", "--file", custom)
	assertExit(t, r, 1)
	assertContains(t, "verify stderr", r.stderr, custom+":4:1: unknown key \"plugin.bogus\"")
}

func TestLockFilePinsLaunches(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgMath)
	if r := s.run("--plugins", root, "plugins", "lock"); r.code != 0 {
		t.Fatalf("lock: exit %d\n%s", r.code, r.stderr)
	}
	if r := s.run("--plugins", root, "call", "calculator", `{"expression":"1+1"}`); r.code != 0 {
		t.Fatalf("call with a matching lock: exit %d\n%s", r.code, r.stderr)
	}
	bin := filepath.Join(root, "math", "math")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(bin) // hard-linked to the shared build
	if err := os.WriteFile(bin, append(data, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	r := s.run("--plugins", root, "call", "calculator", `{"expression":"1+1"}`)
	if r.code != 1 || !strings.Contains(r.stderr, "sha256 mismatch") || !strings.Contains(r.stderr, "nexus-host plugins lock") {
		t.Fatalf("call of a binary tampered after locking: exit %d\n%s", r.code, r.stderr)
	}
}
